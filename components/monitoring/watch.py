"""What the stack builds that monitoring watches, read once from the validated stack config:
each slice, GPU pool, TPU VM queued resource, GPU cluster, team queue, Filestore volume and
controller becomes one `Watch` with its dashboard panels and its alert conditions. The
dashboards, the alert policies, the promtool rule file and the plan all read `watches()`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from catalog import gpu as gpu_catalog
from catalog import tpu as tpu_catalog
from components.gpu_clusters import group_name
from components.monitoring import metrics as m

if TYPE_CHECKING:
    from stacks.config import StackConfig

Page = Literal["capacity", "queues", "platform"]
Severity = Literal["CRITICAL", "ERROR", "WARNING"]
Kind = Literal["idle", "below-size", "pending", "full", "down"]

KUEUE_NAMESPACE = "kueue-system"
JOBSET_NAMESPACE = "jobset-system"
CONTROLLERS = (
    # (name, namespace, container): kueue v0.19.2 charts/kueue/templates/manager/manager.yaml
    # names the container `manager`; jobset v0.12.0 charts/jobset/templates/controller/
    # deployment.yaml names it `controller`; the provisioner's is ours (gke/tpu_provisioner.py).
    ("kueue", KUEUE_NAMESPACE, "manager"),
    ("jobset", JOBSET_NAMESPACE, "controller"),
)
PROVISIONER_CONTAINER = ("tpu-provisioner", "tpu-provisioner-system", "manager")


@dataclass(frozen=True)
class Panel:
    title: str
    queries: tuple[tuple[str, str], ...]
    """(PromQL, legend template) per line."""


@dataclass(frozen=True)
class Condition:
    """One alert condition: a PromQL query that returns a series while the situation holds."""

    kind: Kind
    rule: str
    """The Prometheus alert name (`alertRule`): a label name, unique in the stack."""
    title: str
    query: str
    minutes: int
    reads: tuple[str, ...]
    """The selectors the query reads, for tests that feed them synthetic series."""
    bound: float = 0
    """The threshold the query compares to (percent, size, minutes' worth)."""


@dataclass(frozen=True)
class Watch:
    """One thing the stack builds, with how a dashboard shows it and how an alert guards it."""

    id: str
    """`tpu-slice-v5p-train`: names its policy and, with `_`, its alert rules; from entry
    names, so that reordering entries renames nothing."""
    key: str
    """The config path it comes from: `tpuSlices[0]`, `teams[1]`, `storage.volumes[2]`."""
    what: str
    """`TPU slice v5p-train`."""
    page: Page
    owner: str = ""
    """The team that owns it, or empty for the platform (stack channels)."""
    severity: Severity = "WARNING"
    panels: tuple[Panel, ...] = ()
    conditions: tuple[Condition, ...] = field(default=())


def _rule(*parts: str) -> str:
    return "_".join(p.replace("-", "_") for p in parts)


def _alternation(names: list[str]) -> str:
    return "|".join(names)


def _ready_below(selector: str, size: int) -> str:
    """Ready nodes under `size`; `or vector(0)` so a pool with no node at all counts as 0."""
    return f"(count({selector} == 1) or vector(0)) < {size}"


def _gke_nodes(
    config: StackConfig, id_: str, label: str, pools: list[str], size: int, hosts_gpu: bool
) -> tuple[tuple[Panel, ...], tuple[Condition, ...]]:
    """Panels and conditions of GKE node pools. GKE names a node `gke-<cluster>-<pool>-...`
    and `k8s_node` carries no node pool label (monitored resource list), so nodes are
    matched by name."""
    cluster = config.gke.cluster_name
    t = config.monitoring.thresholds
    nodes = f"~gke-{cluster}-({_alternation(pools)})-.+"
    duty = m.NODE_DUTY_CYCLE.select(cluster_name=cluster, node_name=nodes)
    ready = m.NODE_CONDITION.select(
        cluster_name=cluster, node_name=nodes, condition="Ready", status="True"
    )
    busy = [(f"avg({duty})", "duty cycle %")]
    if not hosts_gpu:
        core = m.NODE_TENSORCORE.select(cluster_name=cluster, node_name=nodes)
        hbm = m.NODE_HBM.select(cluster_name=cluster, node_name=nodes)
        busy += [(f"avg({core})", "TensorCore %"), (f"avg({hbm})", "HBM bandwidth %")]
    panels = (
        Panel(f"{label}: accelerator utilisation", tuple(busy)),
        Panel(
            f"{label}: ready nodes of {size}",
            ((f"count({ready} == 1) or vector(0)", "ready"), (f"vector({size})", "configured")),
        ),
    )
    slug = _rule(id_)
    conditions = [
        Condition(
            "idle",
            f"{slug}_idle",
            f"{label} idle: duty cycle under {t.idle_percent}%",
            f"avg({duty}) < {t.idle_percent}",
            t.idle_minutes,
            (duty,),
            t.idle_percent,
        )
    ]
    if size:
        conditions.append(
            Condition(
                "below-size",
                f"{slug}_below_size",
                f"{label} below size: fewer than {size} nodes Ready",
                _ready_below(ready, size),
                t.below_size_minutes,
                (ready,),
                size,
            )
        )
    return panels, tuple(conditions)


def gke_watches(config: StackConfig) -> list[Watch]:
    """TPU slices and GPU pools on the cluster."""
    found: list[Watch] = []
    for i, entry in enumerate(config.tpu_slices):
        if not entry.count:
            continue
        # A flex-start pool rests at zero nodes until a job asks (gke/config.py), so its
        # size is no alert; a Spot slice below size is one: it was preempted.
        size = 0 if entry.provisioning == "flex-start" else entry.nodes
        label = f"TPU slice {entry.name} ({entry.accelerator} x{entry.count})"
        id_ = f"tpu-slice-{entry.name}"
        panels, conditions = _gke_nodes(config, id_, label, entry.pool_names, size, False)
        if entry.shape.multi_host:
            available = m.POOL_MULTI_HOST_AVAILABLE.select(
                cluster_name=config.gke.cluster_name,
                node_pool_name=f"~{_alternation(entry.pool_names)}",
            )
            panels += (Panel(f"{label}: slice available", ((available, "{{node_pool_name}}"),)),)
        found.append(
            Watch(id_, f"tpuSlices[{i}]", label, "capacity", "", "ERROR", panels, conditions)
        )
    for i, pool in enumerate(config.gpu_pools):
        size = 0 if pool.provisioning == "flex-start" else pool.min_nodes
        label = f"GPU pool {pool.name} ({pool.accelerator_type})"
        id_ = f"gpu-pool-{pool.name}"
        panels, conditions = _gke_nodes(config, id_, label, [pool.name], size, True)
        found.append(
            Watch(id_, f"gpuPools[{i}]", label, "capacity", "", "ERROR", panels, conditions)
        )
    return found


def tpu_vm_watches(config: StackConfig) -> list[Watch]:
    """Each queued resource: its TPU VMs report per worker while the request is ACTIVE.
    Cloud Monitoring has no metric of the request's state, so SUSPENDED, FAILED (or not yet
    provisioned) shows as fewer reporting nodes than the request holds."""
    t = config.monitoring.thresholds
    found: list[Watch] = []
    for i, entry in enumerate(config.tpu_vms):
        names = entry.node_names
        duty = m.TPU_VM_DUTY_CYCLE.select(node_id=f"~{_alternation(names)}")
        core = m.TPU_VM_TENSORCORE.select(node_id=f"~{_alternation(names)}")
        label = f"TPU VMs {entry.name} ({entry.accelerator} x{len(names)})"
        reporting = f"count(count by (node_id) ({duty}))"
        id_ = f"tpu-vms-{entry.name}"
        found.append(
            Watch(
                id_,
                f"tpuVms[{i}]",
                label,
                "capacity",
                "",
                "ERROR",
                (
                    Panel(
                        f"{label}: utilisation",
                        ((f"avg({duty})", "duty cycle %"), (f"avg({core})", "TensorCore %")),
                    ),
                    Panel(
                        f"{label}: nodes reporting of {len(names)}",
                        ((f"{reporting} or vector(0)", "reporting"),),
                    ),
                ),
                (
                    Condition(
                        "below-size",
                        _rule(id_, "not_active"),
                        f"{label}: queued resource not ACTIVE (SUSPENDED, FAILED or waiting)",
                        f"({reporting} or vector(0)) < {len(names)}",
                        t.below_size_minutes,
                        (duty,),
                        len(names),
                    ),
                    Condition(
                        "idle",
                        _rule(id_, "idle"),
                        f"{label} idle: duty cycle under {t.idle_percent}%",
                        f"avg({duty}) < {t.idle_percent}",
                        t.idle_minutes,
                        (duty,),
                        t.idle_percent,
                    ),
                ),
            )
        )
    return found


def gpu_cluster_watches(config: StackConfig) -> list[Watch]:
    """Each GPU cluster's group against its size (flex-start included: `instanceCount` is
    what its resize requests ask for)."""
    t = config.monitoring.thresholds
    found: list[Watch] = []
    for i, entry in enumerate(config.gpu_clusters):
        size = m.MIG_SIZE.select(instance_group_name=group_name(config.context, entry.name))
        label = f"GPU cluster {entry.name}"
        id_ = f"gpu-cluster-{entry.name}"
        found.append(
            Watch(
                id_,
                f"gpuClusters[{i}]",
                label,
                "capacity",
                "",
                "ERROR",
                (
                    Panel(
                        f"{label}: VMs of {entry.instance_count}",
                        ((size, "VMs"), (f"vector({entry.instance_count})", "configured")),
                    ),
                ),
                (
                    Condition(
                        "below-size",
                        _rule(id_, "below_size"),
                        f"{label} below size: fewer than {entry.instance_count} VMs",
                        f"{size} < {entry.instance_count}",
                        t.below_size_minutes,
                        (size,),
                        entry.instance_count,
                    ),
                ),
            )
        )
    return found


def _team_panels(config: StackConfig, team: str) -> tuple[Panel, ...]:
    """A team's queue, and nothing of another team's: every query names its ClusterQueue."""
    cluster = config.gke.cluster_name
    own = {"cluster": cluster, "namespace": KUEUE_NAMESPACE}
    cq = {**own, "cluster_queue": team}
    usage = m.KUEUE_USAGE.select(**cq)
    nominal = m.KUEUE_NOMINAL.select(**cq)
    wait = m.KUEUE_WAIT_BUCKET.select(**cq)
    preempted = m.KUEUE_PREEMPTED.select(**own, preempting_cluster_queue=team)
    return (
        Panel(
            f"Team {team}: workloads",
            (
                (f"sum by (status) ({m.KUEUE_PENDING.select(**cq)})", "pending {{status}}"),
                (f"sum({m.KUEUE_ADMITTED_ACTIVE.select(**cq)})", "admitted"),
            ),
        ),
        Panel(
            f"Team {team}: quota used vs nominal",
            (
                (f"sum by (flavor, resource) ({usage})", "used {{flavor}} {{resource}}"),
                (f"sum by (flavor, resource) ({nominal})", "nominal {{flavor}} {{resource}}"),
                (
                    f"clamp_min(sum by (flavor, resource) ({usage})"
                    f" - sum by (flavor, resource) ({nominal}), 0)",
                    "borrowed {{flavor}} {{resource}}",
                ),
            ),
        ),
        Panel(
            f"Team {team}: admission wait and preemptions",
            (
                (
                    f"histogram_quantile(0.9, sum by (le) (rate({wait}[10m])))",
                    "p90 wait s",
                ),
                (f"sum(rate({preempted}[10m])) * 600", "preempted by this queue / 10 min"),
                (
                    f"sum(rate({m.KUEUE_EVICTED.select(**cq)}[10m])) * 600",
                    "evicted / 10 min",
                ),
            ),
        ),
    )


def team_watches(config: StackConfig) -> list[Watch]:
    """Each team's ClusterQueue (named for the team, gke/teams.py): pending beyond its bound
    while the cohort holds accelerator quota nobody uses."""
    if not config.cluster.enabled:
        return []
    cluster = config.gke.cluster_name
    cohort = {
        "cluster": cluster,
        "namespace": KUEUE_NAMESPACE,
        "cohort": config.kueue.cohort,
        "resource": f"~{tpu_catalog.TPU_RESOURCE}|{gpu_catalog.GPU_RESOURCE}",
    }
    free = f"(sum({m.KUEUE_NOMINAL.select(**cohort)}) - sum({m.KUEUE_USAGE.select(**cohort)})) > 0"
    found: list[Watch] = []
    for i, team in enumerate(config.teams):
        pending = m.KUEUE_PENDING.select(
            cluster=cluster, namespace=KUEUE_NAMESPACE, cluster_queue=team.name, status="active"
        )
        minutes = config.monitoring.pending_minutes(team.name)
        found.append(
            Watch(
                f"team-{team.name}",
                f"teams[{i}]",
                f"Team {team.name}'s queue",
                "queues",
                team.name,
                "WARNING",
                _team_panels(config, team.name),
                (
                    Condition(
                        "pending",
                        _rule("team", team.name, "pending"),
                        f"Team {team.name}: workloads pending while the cohort has quota free",
                        f"sum({pending}) > 0 and on() {free}",
                        minutes,
                        (pending, m.KUEUE_NOMINAL.select(**cohort), m.KUEUE_USAGE.select(**cohort)),
                        minutes,
                    ),
                ),
            )
        )
    return found


def storage_watches(config: StackConfig) -> list[Watch]:
    """Filestore volumes, created or attached. Managed Lustre and bucket fullness are not
    watched: no metric name for Lustre could be confirmed, and buckets do not fill."""
    t = config.monitoring.thresholds
    found: list[Watch] = []
    volumes = config.resolved_storage.volumes
    for i, entry in enumerate(config.storage.volumes):
        volume = volumes.get(entry.name)
        if volume is None or volume.kind != "filestore":
            continue
        instance = {"instance_name": volume.instance}
        used = m.FILESTORE_USED.select(**instance)
        label = f"Filestore {entry.name} ({volume.instance})"
        found.append(
            Watch(
                f"volume-{entry.name}",
                f"storage.volumes[{i}]",
                label,
                "platform",
                "",
                "ERROR",
                (
                    Panel(f"{label}: used %", ((used, "used %"),)),
                    Panel(
                        f"{label}: throughput bytes/s",
                        (
                            (f"rate({m.FILESTORE_READ.select(**instance)}[5m])", "read"),
                            (f"rate({m.FILESTORE_WRITE.select(**instance)}[5m])", "write"),
                        ),
                    ),
                ),
                (
                    Condition(
                        "full",
                        _rule("volume", entry.name, "nearly_full"),
                        f"{label} over {t.storage_percent}% used",
                        f"{used} > {t.storage_percent}",
                        5,
                        (used,),
                        t.storage_percent,
                    ),
                ),
            )
        )
    return found


def controller_watches(config: StackConfig) -> list[Watch]:
    """Kueue, JobSet and (when enabled) the TPU provisioner: down when no container of theirs
    reports uptime."""
    if not config.cluster.enabled:
        return []
    cluster = config.gke.cluster_name
    t = config.monitoring.thresholds
    controllers = list(CONTROLLERS)
    keys = {"kueue": "kueue", "jobset": "kueue"}
    if config.tpu_provisioner.enabled:
        controllers.append(PROVISIONER_CONTAINER)
        keys["tpu-provisioner"] = "tpuProvisioner"
    found: list[Watch] = []
    for name, namespace, container in controllers:
        uptime = m.CONTAINER_UPTIME.select(
            cluster_name=cluster, namespace_name=namespace, container_name=container
        )
        found.append(
            Watch(
                f"controller-{name}",
                keys[name],
                f"Controller {name}",
                "platform",
                "",
                "CRITICAL",
                (Panel(f"Controller {name}: uptime s", ((uptime, "{{pod_name}}"),)),),
                (
                    Condition(
                        "down",
                        _rule("controller", name, "down"),
                        f"Controller {name} down: no running container in {namespace}",
                        f"absent({uptime})",
                        t.controller_down_minutes,
                        (uptime,),
                    ),
                ),
            )
        )
    return found


def watches(config: StackConfig) -> list[Watch]:
    """Everything monitoring watches in the stack, in plan order; empty when disabled."""
    if not config.monitoring.enabled:
        return []
    gke = gke_watches(config) if config.cluster.enabled else []
    return [
        *gke,
        *tpu_vm_watches(config),
        *gpu_cluster_watches(config),
        *team_watches(config),
        *storage_watches(config),
        *controller_watches(config),
    ]
