"""The metrics the dashboards and alerts read, each once, with the source that emits it, and
how PromQL names them. Nothing else in this system writes a metric name.

Cloud Monitoring metrics are named in PromQL by the legacy mapping (first `/` -> `:`, other
special characters -> `_`; "Mapping Cloud Monitoring metrics to PromQL"), which Debian's
promtool 2.42 parses, unlike the quoted UTF-8 form. A metric written to several monitored
resources takes a `monitored_resource` matcher (same page).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Origin = Literal["gke-system", "cloud", "gmp"]


@dataclass(frozen=True)
class Metric:
    """One metric and its labels, as the source that emits it names them."""

    name: str
    """As PromQL names it."""
    origin: Origin
    """`gke-system` (GKE system metrics, free), `cloud` (a Google Cloud service's), `gmp`
    (scraped by Managed Service for Prometheus, billed per sample)."""
    resource: str
    """The monitored resource, or `prometheus_target` for scraped metrics."""
    labels: frozenset[str]
    """Metric and resource labels a query may match or group on."""
    source: str

    def select(self, **matchers: str) -> str:
        """`name{label="value", ...}`; a value starting with `~` is a regex match. Refuses a
        label the metric does not carry."""
        unknown = set(matchers) - self.labels
        if unknown:
            raise ValueError(f"{self.name} has no label {sorted(unknown)}")
        parts = [f'monitored_resource="{self.resource}"'] if self.origin == "gke-system" else []
        for label, value in matchers.items():
            op, value = ("=~", value[1:]) if value.startswith("~") else ("=", value)
            parts.append(f'{label}{op}"{value}"')
        return f"{self.name}{{{','.join(parts)}}}"


_K8S_NODE = frozenset({"project_id", "location", "cluster_name", "node_name"})
_K8S_CONTAINER = _K8S_NODE - {"node_name"} | {"namespace_name", "pod_name", "container_name"}
_GMP_TARGET = frozenset({"project_id", "location", "cluster", "namespace", "job", "instance"})
_DOC_K8S = "GKE system metrics list (cloud.google.com/monitoring/api/metrics_kubernetes)"
_KUEUE = "kueue v0.19.2 pkg/metrics/metrics.go"

NODE_DUTY_CYCLE = Metric(
    "kubernetes_io:node_accelerator_duty_cycle",
    "gke-system",
    "k8s_node",
    _K8S_NODE | {"make", "accelerator_id", "model"},
    f"{_DOC_K8S}: node/accelerator/duty_cycle, 60 s; GPU nodes too (GKE 'GPU time-sharing'"
    " monitoring section)",
)
NODE_TENSORCORE = Metric(
    "kubernetes_io:node_accelerator_tensorcore_utilization",
    "gke-system",
    "k8s_node",
    _K8S_NODE | {"make", "accelerator_id", "model", "tpu_topology"},
    f"{_DOC_K8S}: node/accelerator/tensorcore_utilization, TPU nodes, GKE 1.28.1-gke.1066000+",
)
NODE_HBM = Metric(
    "kubernetes_io:node_accelerator_memory_bandwidth_utilization",
    "gke-system",
    "k8s_node",
    _K8S_NODE | {"make", "accelerator_id", "model", "tpu_topology"},
    f"{_DOC_K8S}: node/accelerator/memory_bandwidth_utilization",
)
NODE_CONDITION = Metric(
    "kubernetes_io:node_status_condition",
    "gke-system",
    "k8s_node",
    _K8S_NODE | {"condition", "status"},
    f"{_DOC_K8S}: node/status_condition (BOOL), condition Ready, status True/False/Unknown;"
    " GKE 1.32.1-gke.1357001+",
)
POOL_MULTI_HOST_AVAILABLE = Metric(
    "kubernetes_io:node_pool_multi_host_available",
    "gke-system",
    "k8s_node_pool",
    _K8S_NODE - {"node_name"} | {"node_pool_name"},
    f"{_DOC_K8S}: node_pool/multi_host/available (BOOL), multi-host TPU node pools only",
)
CONTAINER_UPTIME = Metric(
    "kubernetes_io:container_uptime",
    "gke-system",
    "k8s_container",
    _K8S_CONTAINER,
    f"{_DOC_K8S}: container/uptime, every running container",
)
TPU_VM_DUTY_CYCLE = Metric(
    "tpu_googleapis_com:accelerator_duty_cycle",
    "cloud",
    "tpu_worker",
    frozenset({"project_id", "zone", "node_id", "worker_id", "accelerator_id"}),
    "Cloud TPU 'Monitor TPU VMs' (tpu/docs/troubleshooting/tpu-vm-monitoring): "
    "accelerator/duty_cycle per TPU worker; tpu_worker labels from the monitored resource list",
)
TPU_VM_TENSORCORE = Metric(
    "tpu_googleapis_com:accelerator_tensorcore_utilization",
    "cloud",
    "tpu_worker",
    frozenset({"project_id", "zone", "node_id", "worker_id", "accelerator_id"}),
    "Cloud TPU 'Monitor TPU VMs': accelerator/tensorcore_utilization",
)
MIG_SIZE = Metric(
    "compute_googleapis_com:instance_group_size",
    "cloud",
    "instance_group",
    frozenset({"project_id", "location", "instance_group_id", "instance_group_name"}),
    "Compute Engine metrics list: instance_group/size on instance_group",
)
FILESTORE_USED = Metric(
    "file_googleapis_com:nfs_server_used_bytes_percent",
    "cloud",
    "filestore_instance",
    frozenset({"project_id", "zone", "instance_name"}),
    "Filestore metrics list: nfs/server/used_bytes_percent on filestore_instance",
)
FILESTORE_READ = Metric(
    "file_googleapis_com:nfs_server_read_bytes_count",
    "cloud",
    "filestore_instance",
    frozenset({"project_id", "zone", "instance_name"}),
    "Filestore metrics list: nfs/server/read_bytes_count (bytes read, a delta count)",
)
FILESTORE_WRITE = Metric(
    "file_googleapis_com:nfs_server_write_bytes_count",
    "cloud",
    "filestore_instance",
    frozenset({"project_id", "zone", "instance_name"}),
    "Filestore metrics list: nfs/server/write_bytes_count (bytes written, a delta count)",
)
KUEUE_PENDING = Metric(
    "kueue_pending_workloads",
    "gmp",
    "prometheus_target",
    _GMP_TARGET | {"cluster_queue", "status", "replica_role"},
    f"{_KUEUE} PendingWorkloads: cluster_queue, status (active|inadmissible)",
)
KUEUE_ADMITTED_ACTIVE = Metric(
    "kueue_admitted_active_workloads",
    "gmp",
    "prometheus_target",
    _GMP_TARGET | {"cluster_queue", "replica_role"},
    f"{_KUEUE} AdmittedActiveWorkloads",
)
KUEUE_USAGE = Metric(
    "kueue_cluster_queue_resource_usage",
    "gmp",
    "prometheus_target",
    _GMP_TARGET | {"cohort", "cluster_queue", "flavor", "resource", "replica_role"},
    f"{_KUEUE} ClusterQueueResourceUsage; needs metrics.enableClusterQueueResources",
)
KUEUE_NOMINAL = Metric(
    "kueue_cluster_queue_nominal_quota",
    "gmp",
    "prometheus_target",
    _GMP_TARGET | {"cohort", "cluster_queue", "flavor", "resource", "replica_role"},
    f"{_KUEUE} ClusterQueueResourceNominalQuota; needs metrics.enableClusterQueueResources",
)
KUEUE_PREEMPTED = Metric(
    "kueue_preempted_workloads_total",
    "gmp",
    "prometheus_target",
    _GMP_TARGET | {"preempting_cluster_queue", "reason", "replica_role"},
    f"{_KUEUE} PreemptedWorkloadsTotal: labelled by the preempting ClusterQueue",
)
KUEUE_EVICTED = Metric(
    "kueue_evicted_workloads_total",
    "gmp",
    "prometheus_target",
    _GMP_TARGET | {"cluster_queue", "reason", "underlying_cause", "priority_class", "replica_role"},
    f"{_KUEUE} EvictedWorkloadsTotal",
)
KUEUE_WAIT_BUCKET = Metric(
    "kueue_admission_wait_time_seconds_bucket",
    "gmp",
    "prometheus_target",
    _GMP_TARGET | {"cluster_queue", "priority_class", "replica_role", "le"},
    f"{_KUEUE} AdmissionWaitTime (histogram)",
)
JOBSET_FAILED = Metric(
    "jobset_failed_total",
    "gmp",
    "prometheus_target",
    _GMP_TARGET | {"jobset_name"},
    "jobset v0.12.0 pkg/metrics/metrics.go: jobset_failed_total{jobset_name, namespace}",
)

ALL: tuple[Metric, ...] = (
    NODE_DUTY_CYCLE,
    NODE_TENSORCORE,
    NODE_HBM,
    NODE_CONDITION,
    POOL_MULTI_HOST_AVAILABLE,
    CONTAINER_UPTIME,
    TPU_VM_DUTY_CYCLE,
    TPU_VM_TENSORCORE,
    MIG_SIZE,
    FILESTORE_USED,
    FILESTORE_READ,
    FILESTORE_WRITE,
    KUEUE_PENDING,
    KUEUE_ADMITTED_ACTIVE,
    KUEUE_USAGE,
    KUEUE_NOMINAL,
    KUEUE_PREEMPTED,
    KUEUE_EVICTED,
    KUEUE_WAIT_BUCKET,
    JOBSET_FAILED,
)
"""Every metric a query may name; a test holds each query to this table."""
