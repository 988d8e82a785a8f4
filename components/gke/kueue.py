"""JobSet and Kueue on the cluster, and the cluster-wide Kueue objects derived from the slices:
ResourceFlavors, the cohort, WorkloadPriorityClasses and the flex-start admission check. Kueue
also owns the ClusterQueue spec: a team asks `cluster_queue_spec()` for its own.

Both charts are installed as `helm.v3.Release`s, pinned in `CHARTS`, onto the system pool,
side by side. They never wait for TPU slices, so queues exist while slices are still being created.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml
from pydantic import SkipValidation

from components.base import Component, WiringModel
from components.gke.admission import SYSTEM_TAINT
from components.gke.config import SYSTEM_POOL, KueueConfig
from components.gke.quota import Allocation, Flavor, HostQuota

KUEUE_API = "kueue.x-k8s.io/v1beta2"
MANAGED_NAMESPACE_LABEL = "ai-infra/kueue-managed"
"""Namespaces with this label (team namespaces) are the only ones Kueue's job webhooks see."""
DEFAULT_LOCAL_QUEUE = "default"
"""Kueue 0.19 gives a job without a queue name, in a namespace its selector manages, the
LocalQueue of this name when one exists (pkg/controller/constants/constants.go
DefaultLocalQueueName; LocalQueueDefaulting is no longer a gate since v0.19.0)."""
CPU_FLAVOR = "cpu"
FLEX_START_CHECK = "flex-start"
CONTROLLER_NODE_SELECTOR = {"cloud.google.com/gke-nodepool": SYSTEM_POOL}
CONTROLLER_TOLERATIONS = [
    {"key": SYSTEM_TAINT, "operator": "Equal", "value": "true", "effect": "NoSchedule"}
]
"""The system pool's taint, tolerated by the controllers the program installs: the charts'
`controllerManager.tolerations` (kueue v0.19.2 values.yaml) and `controller.tolerations`
(jobset v0.12.0 values.yaml), and the provisioner's Deployment."""


@dataclass(frozen=True)
class Chart:
    name: str
    repository: str
    version: str
    namespace: str


CHARTS: dict[str, Chart] = {
    "jobset": Chart(
        name="jobset",
        repository="oci://registry.k8s.io/jobset/charts/jobset",
        version="0.12.0",
        namespace="jobset-system",
    ),
    "kueue": Chart(
        name="kueue",
        repository="oci://registry.k8s.io/kueue/charts/kueue",
        version="0.19.2",
        namespace="kueue-system",
    ),
}
"""The one place chart versions are pinned."""
JOBSET_CONTROLLER = (
    f"system:serviceaccount:{CHARTS['jobset'].namespace}:{CHARTS['jobset'].name}-controller"
)
"""The user the JobSet controller acts as: the chart's service account is `<fullname>
-controller` (jobset v0.12.0 charts/jobset/templates/controller/_helpers.tpl), fullname the
release name, which contains the chart name (_helpers.tpl)."""
BATCH_USER_ROLE = f"{CHARTS['kueue'].name}-batch-user-role"
"""Kueue's ClusterRole for people who submit jobs: it aggregates every role labelled
`rbac.kueue.x-k8s.io/batch-user`, among them JobSet create/delete/update, which neither chart
aggregates into `edit` (only the viewer roles are). The chart names it `<fullname>-batch-user
-role`, and fullname is the release name when that contains the chart name, as here
(kueue v0.19.2 charts/kueue/templates/rbac/batch_user_role.yaml and _helpers.tpl)."""


PODS_READY_TIMEOUT_MINUTES = 45
"""How long an admitted workload has for all its pods to be ready before Kueue evicts it,
releases its quota and requeues it. Kueue 0.19 has waitForPodsReady on whenever the config
omits it, at 30 minutes (apis/config/v1beta2/defaults.go at v0.19.2). A provisioner-created
slice does not exist when its job is admitted: the controller waits up to 30 minutes for the
node-pool operation (internal/cloud/gke.go waitForGkeOp at 6789e2a), and then the nodes pull
the image; 45 minutes keeps a slow but successful creation from being evicted and created
again. Fixed slices already exist, and flex-start pods are created only once the
ProvisioningRequest has its nodes, so neither comes near it."""
REQUEUE_LIMIT = 5
"""Evictions for pods not ready before Kueue deactivates the workload; Kueue's default is to
requeue for ever (null). A job whose pods never start (an image that does not pull, capacity
that never comes) otherwise takes its quota for 45 minutes in every cycle; after about six
hours of attempts (backoffs of 1, 2, 4, 8 and 16 minutes between them) a person decides."""


def wait_for_pods_ready() -> dict[str, Any]:
    """Kueue's `waitForPodsReady`, every field explicit (configuration_types.go at v0.19.2)."""
    timeout = f"{PODS_READY_TIMEOUT_MINUTES}m"
    return {
        "timeout": timeout,
        # Admissions of other jobs go on while one waits: every flavor's quota is the
        # capacity behind it, so admitted jobs never compete for the same nodes.
        "blockAdmission": False,
        # A running job whose pods stop being ready (a slice recreated by host maintenance or
        # repair) gets as long again before its quota is released.
        "recoveryTimeout": timeout,
        "requeuingStrategy": {
            "timestamp": "Eviction",
            "backoffLimitCount": REQUEUE_LIMIT,
            "backoffBaseSeconds": 60,
            "backoffMaxSeconds": 3600,
        },
    }


def kueue_manager_config() -> dict[str, Any]:
    """Kueue's Configuration. The chart takes it as one document that replaces its default, so
    it is complete here."""
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": ":8081"},
        # Per-quota gauges (usage, nominal quota) for the monitoring dashboards; Kueue reports
        # them only when asked (apis/config/v1beta2/configuration_types.go ControllerMetrics).
        "metrics": {"bindAddress": ":8443", "enableClusterQueueResources": True},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        # The chart's own values (charts/kueue/values.yaml at v0.19.2): this document replaces
        # the chart's, and Kueue's code has no default concurrency of its own.
        "controller": {
            "groupKindConcurrency": {
                "Job.batch": 5,
                "Pod": 5,
                "Workload.kueue.x-k8s.io": 10,
                "LocalQueue.kueue.x-k8s.io": 5,
                "ClusterQueue.kueue.x-k8s.io": 5,
                "ResourceFlavor.kueue.x-k8s.io": 1,
            }
        },
        "clientConnection": {"qps": 300, "burst": 500},
        # A Job or JobSet without a queue name in a team namespace is suspended and queued in
        # the team's `default` LocalQueue, never run around Kueue; other namespaces are left
        # alone (apis/config/v1beta2/configuration_types.go, jobframework/defaults.go at
        # v0.19.2). A label, not a list of names: onboarding a team must not change this.
        "manageJobsWithoutQueueName": True,
        "managedJobsNamespaceSelector": {"matchLabels": {MANAGED_NAMESPACE_LABEL: "true"}},
        "integrations": {"frameworks": ["batch/job", "jobset.x-k8s.io/jobset"]},
        "waitForPodsReady": wait_for_pods_ready(),
    }


def kueue_values() -> dict[str, Any]:
    return {
        "controllerManager": {
            "nodeSelector": CONTROLLER_NODE_SELECTOR,
            "tolerations": CONTROLLER_TOLERATIONS,
        },
        "managerConfig": {
            "controllerManagerConfigYaml": yaml.safe_dump(kueue_manager_config(), sort_keys=False)
        },
    }


def jobset_values() -> dict[str, Any]:
    return {
        "controller": {
            "nodeSelector": CONTROLLER_NODE_SELECTOR,
            "tolerations": CONTROLLER_TOLERATIONS,
        }
    }


class BatchSystemArgs(WiringModel):
    system_pool: SkipValidation[pulumi.Resource]
    webhook_firewall: SkipValidation[pulumi.Resource]


class BatchSystem(Component):
    """The JobSet and Kueue releases, each in its own namespace."""

    jobset: k8s.helm.v3.Release
    kueue: k8s.helm.v3.Release

    def __init__(
        self, name: str, args: BatchSystemArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__("ai-infra:gke:BatchSystem", name, opts)
        releases: dict[str, k8s.helm.v3.Release] = {}
        values = {"jobset": jobset_values(), "kueue": kueue_values()}
        for key in ("jobset", "kueue"):
            chart = CHARTS[key]
            namespace = k8s.core.v1.Namespace(
                f"{name}-{key}-namespace",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=chart.namespace),
                opts=self.child_opts(),
            )
            # Both charts' webhooks (and Kueue's visibility APIServices) need the control
            # plane to reach their pod ports through the firewall. Kueue need not wait for
            # JobSet: since v0.8.1 it sets up an integration once its CRD appears
            # (pkg/controller/jobframework/setup.go, WaitForAPI), so both install side by side.
            after = [args.system_pool, namespace, args.webhook_firewall]
            releases[key] = k8s.helm.v3.Release(
                f"{name}-{key}",
                name=chart.name,
                chart=chart.repository,
                version=chart.version,
                namespace=chart.namespace,
                create_namespace=False,
                values=values[key],
                atomic=True,
                cleanup_on_fail=True,
                timeout=600,
                opts=self.child_opts(depends_on=after),
            )
        self.jobset = releases["jobset"]
        self.kueue = releases["kueue"]
        self.register_outputs({key: CHARTS[key].version for key in releases})


def resource_flavor(flavor: Flavor) -> dict[str, Any]:
    return {"nodeLabels": flavor.node_labels, "tolerations": flavor.tolerations}


def resource_groups(
    flavors: list[Flavor], quotas: dict[str, int], cpu: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """ClusterQueue/Cohort resource groups: cpu+memory (if given), TPU chips, then GPUs. A
    team's own flavor (`Flavor.team`) lends nothing: `lendingLimit: 0` (ClusterQueue
    `ResourceQuota.lendingLimit`, kueue v0.19.2 apis/kueue/v1beta2), though no other queue
    lists it either."""
    groups = []
    if cpu is not None:
        groups.append(
            {
                "coveredResources": ["cpu", "memory"],
                "flavors": [
                    {
                        "name": CPU_FLAVOR,
                        "resources": [
                            {"name": "cpu", "nominalQuota": cpu["cpu"]},
                            {"name": "memory", "nominalQuota": cpu["memory"]},
                        ],
                    }
                ],
            }
        )
    for resource in dict.fromkeys(f.resource for f in flavors):
        members = [f for f in flavors if f.resource == resource]
        groups.append(
            {
                "coveredResources": [resource],
                "flavors": [
                    {
                        "name": f.name,
                        "resources": [
                            {
                                "name": resource,
                                "nominalQuota": quotas[f.name],
                                **({"lendingLimit": 0} if f.team is not None else {}),
                            }
                        ],
                    }
                    for f in members
                ],
            }
        )
    return groups


PROVISIONED_QUEUE_SUFFIX = "-provisioned"


def provisioned_queue(team: str) -> str:
    """The ClusterQueue and LocalQueue through which a team reaches what the TPU provisioner
    creates."""
    return f"{team}{PROVISIONED_QUEUE_SUFFIX}"


def provisioned_queue_spec(
    *, namespace: str, flavors: list[Flavor], quotas: dict[str, int], cpu: dict[str, str]
) -> dict[str, Any]:
    """A team's ClusterQueue for provisioner-created slices: outside the cohort, so it never
    borrows or lends and is never reclaimed, and preempting nothing, so Kueue never suspends a
    JobSet to make room: a suspended JobSet keeps its pool (the controller deletes one only
    when its JobSet is gone, completed or failed), which would bill while idle."""
    return {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
        "queueingStrategy": "BestEffortFIFO",
        "resourceGroups": resource_groups([f for f in flavors if f.provisioned], quotas, cpu=cpu),
        "preemption": {"reclaimWithinCohort": "Never", "withinClusterQueue": "Never"},
    }


def cluster_queue_spec(
    *,
    namespace: str,
    cohort: str,
    flavors: list[Flavor],
    quotas: dict[str, int],
    cpu: dict[str, str],
    flex_start_checks: list[str],
) -> dict[str, Any]:
    """A team's ClusterQueue: its quota per flavor in the shared cohort, admitting workloads
    from its own namespace only; provisioner flavors are in `provisioned_queue_spec`, and
    another team's own slices' flavor is in no queue but that team's."""
    flavors = [f for f in flavors if not f.provisioned and f.team in (None, namespace)]
    spec: dict[str, Any] = {
        "cohortName": cohort,
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
        "queueingStrategy": "BestEffortFIFO",
        "resourceGroups": resource_groups(flavors, quotas, cpu=cpu),
        # Borrow idle chips from the cohort, take them back when the lender needs them, and
        # let urgent work displace less important work inside the team.
        "preemption": {
            "reclaimWithinCohort": "Any",
            "borrowWithinCohort": {"policy": "LowerPriority"},
            "withinClusterQueue": "LowerPriority",
        },
        "flavorFungibility": {
            "whenCanBorrow": "MayStopSearch",
            "whenCanPreempt": "TryNextFlavor",
        },
    }
    flex_flavors = [f.name for f in flavors if f.flex_start]
    if flex_flavors and flex_start_checks:
        spec["admissionChecksStrategy"] = {
            "admissionChecks": [
                {"name": check, "onFlavors": flex_flavors} for check in flex_start_checks
            ]
        }
    return spec


class QueuesArgs(WiringModel):
    config: KueueConfig
    flavors: list[Flavor]
    allocation: Allocation
    cohort_cpu: HostQuota
    """The CPU and memory of the nodes behind the quota the cohort holds."""
    kueue_release: SkipValidation[pulumi.Resource]


class Queues(Component):
    """Cluster-wide Kueue objects. Team queues need only the Kueue release before them: Kueue
    activates a ClusterQueue once the flavors and checks it names exist."""

    flex_start_checks: list[str]

    def __init__(self, name: str, args: QueuesArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ai-infra:gke:Queues", name, opts)
        after_kueue = [args.kueue_release]
        flavors = [
            kueue_object(
                self, f"{name}-flavor-{CPU_FLAVOR}", "ResourceFlavor", CPU_FLAVOR, {}, after_kueue
            )
        ]
        for flavor in args.flavors:
            flavors.append(
                kueue_object(
                    self,
                    f"{name}-flavor-{flavor.name}",
                    "ResourceFlavor",
                    flavor.name,
                    resource_flavor(flavor),
                    after_kueue,
                )
            )

        cohort_spec: dict[str, Any] = {}
        # Always with the cpu group, so that quota moving in or out of the cohort changes
        # only nominalQuotas.
        cpu = args.cohort_cpu
        groups = resource_groups(
            [f for f in args.flavors if not f.provisioned and f.team is None],
            args.allocation.cohort,
            cpu=cpu.quantities,
        )
        if groups:
            cohort_spec["resourceGroups"] = groups
        kueue_object(
            self,
            f"{name}-cohort",
            "Cohort",
            args.config.cohort,
            cohort_spec,
            after_kueue + flavors,
        )

        self.flex_start_checks = []
        resources = sorted({f.resource for f in args.flavors if f.flex_start})
        if resources:
            config = kueue_object(
                self,
                f"{name}-provisioning-config",
                "ProvisioningRequestConfig",
                FLEX_START_CHECK,
                {
                    "provisioningClassName": "queued-provisioning.gke.io",
                    "managedResources": resources,
                    # Pin admitted pods to the nodes provisioned for their own request.
                    "podSetUpdates": {
                        "nodeSelector": [
                            {
                                "key": "autoscaling.gke.io/provisioning-request",
                                "valueFromProvisioningClassDetail": "ResizeRequestName",
                            }
                        ]
                    },
                },
                after_kueue,
            )
            kueue_object(
                self,
                f"{name}-admission-check",
                "AdmissionCheck",
                FLEX_START_CHECK,
                {
                    "controllerName": "kueue.x-k8s.io/provisioning-request",
                    "parameters": {
                        "apiGroup": "kueue.x-k8s.io",
                        "kind": "ProvisioningRequestConfig",
                        "name": FLEX_START_CHECK,
                    },
                },
                [*after_kueue, config],
            )
            self.flex_start_checks.append(FLEX_START_CHECK)

        # WorkloadPriorityClass carries `value` at the top level, which CustomResource cannot
        # express; a yaml/v2 group renders the explicit objects.
        self.priority_classes = k8s.yaml.v2.ConfigGroup(
            f"{name}-priority-classes",
            objs=[
                {
                    "apiVersion": KUEUE_API,
                    "kind": "WorkloadPriorityClass",
                    "metadata": {"name": priority},
                    "value": value,
                    "description": f"ai-infra '{priority}' training priority",
                }
                for priority, value in args.config.priority_classes.items()
            ],
            opts=self.child_opts(depends_on=after_kueue),
        )
        self.register_outputs({"flavors": [f.name for f in args.flavors]})


def kueue_object(
    parent: Component,
    resource_name: str,
    kind: str,
    name: str,
    spec: dict[str, Any],
    depends_on: list[pulumi.Resource],
    namespace: str | None = None,
) -> k8s.apiextensions.CustomResource:
    """A Kueue object with an explicit name, waiting for the Kueue release and what it needs."""
    return k8s.apiextensions.CustomResource(
        resource_name,
        api_version=KUEUE_API,
        kind=kind,
        metadata=k8s.meta.v1.ObjectMetaArgs(name=name, namespace=namespace),
        spec=spec,
        opts=parent.child_opts(depends_on=depends_on),
    )
