"""What the user writes under `ai-infra:cluster`, and the limits and value types every GKE
key shares: node pool bounds, pods per node, release channels, provisioning, times and names.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from components.base import ConfigModel, anchored, described, matching
from components.types import (
    ArtifactRepository,
    DnsLabel,
    MachineType,
)

MAX_NODES_PER_POOL = 1000
"""GKE's limit of nodes per node pool per zone (GKE quotas and limits)."""
MAX_IMAGE_REPOSITORIES = 100
"""Artifact Registry repositories of the cluster or of a team: a bound of this program's; each
is a read grant of the nodes' account and a prefix the admission policy compares."""
MAX_EXCLUSIONS = 20
"""GKE allows 20 maintenance exclusions per cluster (terraform-provider-google schema)."""
NO_UPGRADES_MAX = timedelta(days=30)
"""GKE documents 30 days as the longest NO_UPGRADES exclusion ("Maintenance windows and
exclusions"); a 2026 note reports 90, which the docs read here do not confirm."""
GKE_NODE_POOL_NAME_MAX = 40
"""GKE's limit on a node pool's name (the tpu-provisioner keeps its own pool names within it,
gke.go podToNodePoolName)."""
MAX_SLICES_PER_ENTRY = 256
"""A bound of this program's, so that a typo in `count` is refused before anything is
enumerated; more identical slices belong in several entries."""
TPU_MAX_PODS_PER_NODE = 16
"""A TPU host runs one workload pod plus GKE's daemonsets; 16 pods take a /27 of the pods
range instead of the /24 of GKE's default 110 (xpk uses 15 for multi-host TPU pools)."""
GPU_MAX_PODS_PER_NODE = 32
"""Room for a pod per GPU plus GKE's daemonsets: a /26 of the pods range per node (xpk uses
32 for A3 pools) instead of the /24 of GKE's default 110."""
MAX_PROVISIONED_SLICES_PER_SHAPE = 256
"""A guard against typing chips where slices are meant, not a GKE limit."""

CPU_POOL = "cpu"
"""The CPU pool's name, which no other pool may take."""
SYSTEM_POOL = "system"
"""The system pool's name, which no other pool may take either."""
SYSTEM_MAX_PODS_PER_NODE = 32
"""Room for GKE's daemonsets and system pods plus the three controllers: a /26 of the pods
range per node rather than the CPU pool's /24."""
PROVISIONER_NAMESPACE = "tpu-provisioner-system"
PROVISIONER_KSA = "tpu-provisioner-controller-manager"
"""The provisioner's Kubernetes service account, bound to its Google one."""

ReleaseChannel = Literal["RAPID", "REGULAR", "STABLE", "EXTENDED", "NONE"]
HostMaintenanceInterval = Literal["AS_NEEDED", "PERIODIC"]
"""How Compute Engine schedules host maintenance of a pool's VMs (GKE API
`HostMaintenancePolicy.maintenanceInterval`)."""
Provisioning = Literal["on-demand", "spot", "reservation", "flex-start"]
"""How a node pool obtains capacity: on-demand, Spot VMs, a specific reservation, or
flex-start (Dynamic Workload Scheduler queued provisioning)."""

_RFC3339 = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})"
)


@described("RFC 3339 time", {"pattern": anchored(_RFC3339), "format": "date-time"})
def _rfc3339(value: str) -> str:
    # ASCII digits only: fromisoformat alone would take other scripts' digits.
    if not _RFC3339.fullmatch(value):
        raise ValueError(f"'{value}' is not an RFC 3339 time; write e.g. 2026-12-01T00:00:00Z")
    try:
        when(value)
    except ValueError:
        raise ValueError(
            f"'{value}' is not an RFC 3339 time; write e.g. 2026-12-01T00:00:00Z"
        ) from None
    return value


def when(time: str) -> datetime:
    """An RFC 3339 time as a datetime."""
    return datetime.fromisoformat(time.replace("Z", "+00:00"))


Rfc3339 = Annotated[str, AfterValidator(_rfc3339)]
TimeOfDay = Annotated[
    str,
    matching(
        r"([01][0-9]|2[0-3]):[0-5][0-9]",
        "is not a time of day; write it as HH:MM in UTC, e.g. 03:00",
    ),
]
GkeName = Annotated[
    str,
    matching(
        r"[a-z](?:[-a-z0-9]{0,38}[a-z0-9])?",
        "is not a GKE name: 1 to 40 lowercase letters, digits and '-', starting with a letter "
        "and ending with a letter or digit",
    ),
]
GkeVersion = Annotated[
    str,
    matching(
        r"latest|1\.[0-9]{1,3}(\.[0-9]{1,3}(-gke\.[0-9]{1,10})?)?",
        "is not a GKE version: write 1.X, 1.X.Y, 1.X.Y-gke.N or latest (quote it in YAML: "
        'version: "1.34")',
    ),
]
SecurityGroup = Annotated[
    str,
    matching(
        r"gke-security-groups@[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+",
        "is not GKE's RBAC security group: Google Groups for RBAC requires the group "
        "gke-security-groups@<your domain>, e.g. gke-security-groups@example.com",
    ),
]


class CpuPoolConfig(ConfigModel):
    """`ai-infra:cluster.cpuPool`: the pool for system pods, Kueue and JobSet controllers."""

    machine_type: MachineType = "e2-standard-8"
    """Machine type of the CPU pool's nodes."""
    disk_size_gb: int = Field(default=100, ge=10, le=65536)
    """Boot disk size of each node, in GB."""
    disk_type: Literal["pd-standard", "pd-balanced", "pd-ssd"] = "pd-balanced"
    """Boot disk type of each node."""
    min_nodes: int = Field(default=1, ge=0, le=MAX_NODES_PER_POOL)
    """Autoscaling lower bound, per zone of the cluster."""
    max_nodes: int = Field(default=3, ge=1, le=MAX_NODES_PER_POOL)
    """Autoscaling upper bound, per zone of the cluster."""
    spot: bool = False
    """Run the pool on Spot VMs: cheaper, but Compute Engine may reclaim them at any time."""


class SystemPoolConfig(ConfigModel):
    """`ai-infra:cluster.systemPool`: the tainted pool that runs Kueue, JobSet, the TPU
    provisioner and GKE's own system pods, where no team pod may land."""

    machine_type: MachineType = "e2-standard-4"
    """Machine type of the system pool's nodes."""
    min_nodes: int = Field(default=1, ge=1, le=MAX_NODES_PER_POOL)
    """Autoscaling lower bound, per zone of the cluster; at least 1, the controllers run
    there."""
    max_nodes: int = Field(default=1, ge=1, le=MAX_NODES_PER_POOL)
    """Autoscaling upper bound, per zone of the cluster: one node per zone holds the three
    controllers (a replica each) and GKE's system pods; raise it for many teams' webhook
    traffic."""


class MaintenanceExclusion(ConfigModel):
    """A period in which GKE must not upgrade (e.g. a training campaign on the slices)."""

    name: DnsLabel
    """Names the exclusion in the cluster's maintenance policy."""
    start: Rfc3339
    """When the exclusion begins, RFC 3339, e.g. `2026-12-01T00:00:00Z`."""
    end: Rfc3339 | None = None
    """When it ends, RFC 3339; unset means until the cluster's minor version leaves support.
    `NO_UPGRADES` needs an end at most 30 days after the start."""
    scope: Literal["NO_UPGRADES", "NO_MINOR_UPGRADES", "NO_MINOR_OR_NODE_UPGRADES"] = (
        "NO_MINOR_OR_NODE_UPGRADES"
    )
    """What GKE holds off: `NO_MINOR_OR_NODE_UPGRADES` keeps nodes, and so running slices,
    untouched; `NO_MINOR_UPGRADES` still lets patch upgrades through, nodes included;
    `NO_UPGRADES` blocks every upgrade."""


class ClusterConfig(ConfigModel):
    """`ai-infra:cluster`."""

    enabled: bool = True
    """Build the GKE cluster, its CPU pool, JobSet and Kueue. `false` makes a stack of Slurm,
    GPU clusters or TPU VMs only: the network, buckets and identities stay, and the keys that
    need GKE (`tpuSlices`, `gpuPools`, `workloadIdentities`, `teams`, `tpuProvisioner`,
    `kueue`, the other `cluster` keys) are refused."""
    name: GkeName | None = None
    """Cluster name, 1 to 40 lowercase letters, digits and `-`; defaults to `<prefix>-gke`."""
    regional: bool = True
    """A regional control plane survives a zone outage; `false` puts the cluster and its CPU
    pool in `gcp:zone`, cheaper for dev."""
    release_channel: ReleaseChannel = "REGULAR"
    """`NONE` opts out of channels (needed by the TPU provisioner) and turns auto-upgrade off
    on TPU slice pools; the CPU and GPU pools keep it. GKE deprecates `NONE` and removes it on
    2027-06-14, then enrolls such clusters in Stable. On a channel GKE requires auto-upgrade,
    and upgrading any node of a multi-host slice recreates the slice, so every TPU pool
    carries a node-pool exclusion that holds its upgrades until its version's end of support
    (then GKE upgrades regardless). The provider sets that hold only when it creates a pool:
    switching from `NONE` to a channel replaces the TPU slice pools that lack it; switching to
    `NONE` keeps it (it does nothing without auto-upgrade) and replaces nothing."""
    version: GkeVersion | None = None
    """Minimum control-plane version: `1.X`, `1.X.Y`, `1.X.Y-gke.N` or `latest`, quoted in YAML
    (`"1.34"`); a floor, not a pin. Defaults to the channel's default."""
    cpu_pool: CpuPoolConfig = Field(default_factory=CpuPoolConfig)
    """The autoscaled pool for the teams' CPU pods (and GKE's system pods that do not fit the
    system pool)."""
    system_pool: SystemPoolConfig = Field(default_factory=SystemPoolConfig)
    """The pool, tainted `components.gke.io/gke-managed-components`, that runs Kueue, JobSet,
    the TPU provisioner and GKE's system pods; no team pod may tolerate it."""
    dataplane_v2: bool = True
    """GKE Dataplane V2 (eBPF networking with network policy enforcement built in)."""
    gcs_fuse_csi_driver: bool = True
    """The Cloud Storage FUSE CSI driver add-on, which mounts buckets as volumes."""
    image_streaming: bool = True
    """Image streaming on every pool: containers start before their image is fully pulled."""
    deletion_protection: bool | None = None
    """The cluster's `deletionProtection`, defaulting to `ai-infra:protect`: the Terraform
    provider refuses to delete the cluster while it is on; GKE's API does not check it."""
    max_pods_per_node: int = Field(default=110, ge=8, le=256)
    """The cluster's default pods per node, which the CPU pool uses; each node's block of
    `network.podsCidr` holds twice this, rounded up to a power of two (110 pods take a /24).
    TPU slices and GPU pools set their own."""
    maintenance_start_time: TimeOfDay = "03:00"
    """Daily four-hour maintenance window start, UTC, HH:MM."""
    maintenance_exclusions: list[MaintenanceExclusion] = Field(
        default_factory=list, max_length=MAX_EXCLUSIONS
    )
    """Periods in which GKE must not upgrade the cluster, e.g. a training campaign: at most 20,
    names unique, periods not overlapping."""
    rbac_security_group: SecurityGroup | None = None
    """`gke-security-groups@<domain>`: enables Google Groups for RBAC. Required when teams
    list `groups`, which must be members of it."""
    image_repositories: list[ArtifactRepository] = Field(
        default_factory=list, max_length=MAX_IMAGE_REPOSITORIES
    )
    """Artifact Registry repositories (`LOCATION-docker.pkg.dev/PROJECT/REPOSITORY`) whose
    private images every team may run, e.g. a platform base image. The nodes' account reads
    these and the teams' own `imageRepositories`, no other repository of the project; public
    images (Docker Hub, registry.k8s.io, Google's public repositories) need no entry."""
