"""What the user writes for the GKE training environment: `ai-infra:cluster`, `tpuSlices`,
`gpuPools`, `workloadIdentities`, `tpuProvisioner`, `kueue` and `teams`, and `GkeConfig`, which
holds them with the stack context and resolves what they inherit (the cluster's name and
location, deletion protection, the provisioner's zone and node account, the Kueue flavors).
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cached_property
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field

from components import tpu_catalog
from components.base import ConfigModel, anchored, described, matching
from components.buckets import BucketAccess
from components.context import StackContext
from components.gke.gpu_direct import fast_path as gpu_fast_path
from components.gke.quota import (
    Allocation,
    Flavor,
    HostQuota,
    allocate,
    derive_flavors,
    host_quota,
    tpu_flavor_name,
)
from components.gpu_catalog import GpuNicLayout
from components.identity import service_account_email
from components.network import MAX_NODE_NETWORKS, NetworkConfig, NodeNetwork
from components.types import (
    ArtifactRepository,
    Cidr,
    DiskImage,
    DnsLabel,
    GceName,
    IamRole,
    ImageReference,
    KmsCryptoKey,
    MachineType,
    NetworkTag,
    Reservation,
    ServiceAccountEmail,
    Zone,
    artifact_repository,
)

MAX_NODES_PER_POOL = 1000
"""GKE's limit of nodes per node pool per zone (GKE quotas and limits)."""
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


# ai-infra:cluster


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
    maintenance_exclusions: list[MaintenanceExclusion] = Field(default_factory=list)
    """Periods in which GKE must not upgrade the cluster, e.g. a training campaign: at most 20,
    names unique, periods not overlapping."""
    rbac_security_group: SecurityGroup | None = None
    """`gke-security-groups@<domain>`: enables Google Groups for RBAC. Required when teams
    list `groups`, which must be members of it."""
    image_repositories: list[ArtifactRepository] = Field(default_factory=list, max_length=100)
    """Artifact Registry repositories (`LOCATION-docker.pkg.dev/PROJECT/REPOSITORY`) whose
    private images every team may run, e.g. a platform base image. The nodes' account reads
    these and the teams' own `imageRepositories`, no other repository of the project; public
    images (Docker Hub, registry.k8s.io, Google's public repositories) need no entry."""


# ai-infra:tpuSlices


@described(
    "Cloud TPU accelerator type",
    {"enum": [a for a in tpu_catalog.accelerator_types() if tpu_catalog.resolve(a).family.gke]},
)
def _accelerator(value: str) -> str:
    if not tpu_catalog.resolve(value).family.gke:
        raise ValueError(
            f"'{value}' has no GKE node pools here (GKE never offered v2, and v3's GKE machine "
            "types are not in the catalog); create it as a TPU VM in ai-infra:tpuVms"
        )
    return value


Accelerator = Annotated[str, AfterValidator(_accelerator)]
"""A Cloud TPU accelerator type the catalog knows, e.g. `v5p-32`."""


class TpuSliceConfig(ConfigModel):
    """One entry of `ai-infra:tpuSlices`."""

    name: DnsLabel
    """Names the node pools: `<name>-0`, `<name>-1`, ... for multi-host slices; single-host
    slices share one pool `<name>`."""
    accelerator: Accelerator
    """Cloud TPU accelerator type, e.g. `v5p-32`, `v5litepod-16`, `v6e-8`, `tpu7x-64`. The
    suffix counts TensorCores for v4, v5p and tpu7x, chips for v5e (`v5litepod`) and v6e."""
    count: int = Field(default=1, ge=0, le=MAX_SLICES_PER_ENTRY)
    """Identical slices to create; 0 keeps the entry (and its queue flavor) with no nodes."""
    zone: Zone | None = None
    """Defaults to `gcp:zone`; must be in `gcp:region` and a zone Cloud TPU documents for the
    family, and for `flex-start` one GKE lists for flex-start (docs/gke.md lists both under
    "How TPU sizes resolve")."""
    allow_unlisted_zone: bool = False
    """Accept a zone the catalog does not list for the family, or for its flex-start (one
    Google added since)."""
    max_pods_per_node: int = Field(default=TPU_MAX_PODS_PER_NODE, ge=8, le=256)
    """Pods per TPU host (one workload pod plus daemonsets); sizes each node's block of
    `network.podsCidr`: a /27 at 16, where the cluster's default of 110 takes a /24."""
    provisioning: Provisioning = "on-demand"
    """`on-demand`, `spot`, `reservation` (naming `reservation`), or `flex-start` (Dynamic
    Workload Scheduler queued provisioning: the pool rests at zero nodes until a job asks)."""
    reservation: Reservation | None = None
    """Reservation name (or `projects/P/reservations/R` for a shared one) when
    `provisioning: reservation`."""
    topology: str | None = None
    """Only where a size has several topologies, e.g. v5p-512: `4x8x8` (the default, closest
    to a cube) or `4x4x16`. Unset means the size's default."""
    additional_node_networks: list[DnsLabel] | None = None
    """`network.additionalNodeNetworks` names whose NIC every host of the slice gets, in NIC
    order (eth1, eth2, ...); v6e and tpu7x only. Unset: all of them for v6e and tpu7x, none
    for other families; `[]` opts the slice out. A change replaces the slice's pools."""
    team: DnsLabel | None = None
    """The one team (an `ai-infra:teams` name) whose slices these are: their node pools run
    as that team's own node account, carry a taint only its jobs tolerate, and make a Kueue
    flavor of their own that no other team's queue lists, so the team gets all their chips
    and lends none. Required for the team's host-network pods (`tpuHostNetwork`). A change
    replaces the slice's pools."""
    host_maintenance_interval: HostMaintenanceInterval = "AS_NEEDED"
    """When Compute Engine maintains the hosts: `AS_NEEDED` as updates become available, or
    `PERIODIC`, batched and announced ahead, on a reservation made with a PERIODIC
    maintenance interval. Host maintenance interrupts the whole slice and bypasses GKE's
    maintenance windows and exclusions. A change replaces the slice's pools."""

    @property
    def shape(self) -> tpu_catalog.TpuShape:
        return tpu_catalog.resolve(self.accelerator, self.topology)

    @property
    def nodes(self) -> int:
        """Nodes all `count` slices of this entry run on."""
        return self.shape.hosts * self.count

    @property
    def chips(self) -> int:
        """Chips all `count` slices of this entry provide."""
        return self.shape.chips * self.count

    @property
    def pool_names(self) -> list[str]:
        """GKE node pool names: one per multi-host slice, one shared by single-host slices."""
        if self.shape.multi_host:
            return [f"{self.name}-{i}" for i in range(self.count)]
        return [self.name] if self.count else []


# ai-infra:gpuPools


class GpuPoolConfig(ConfigModel):
    """One entry of `ai-infra:gpuPools`."""

    name: DnsLabel
    """The GKE node pool's name."""
    machine_type: MachineType
    """Machine type of the nodes, e.g. `g2-standard-24`, `a3-highgpu-8g`; machine types with
    built-in GPUs must match `acceleratorType` and `acceleratorCount`."""
    accelerator_type: str
    """GKE accelerator type, e.g. `nvidia-l4`, `nvidia-h100-80gb`."""
    accelerator_count: int = Field(default=1, ge=1, le=16)
    """GPUs per node."""
    driver_version: Literal["DEFAULT", "LATEST", "INSTALLATION_DISABLED"] = "DEFAULT"
    """GKE-managed NVIDIA driver; INSTALLATION_DISABLED if you install drivers yourself."""
    zone: Zone | None = None
    """Defaults to `gcp:zone`; must be in `gcp:region`."""
    min_nodes: int = Field(default=0, ge=0, le=MAX_NODES_PER_POOL)
    """Autoscaling floor across the pool's zone."""
    max_nodes: int = Field(default=1, ge=0, le=MAX_NODES_PER_POOL)
    """Autoscaling ceiling across the pool's zone; the pool's GPUs at this size are what
    teams' quotas share."""
    provisioning: Provisioning = "on-demand"
    """`on-demand`, `spot`, `reservation` (naming `reservation`) or `flex-start`, as for TPU
    slices."""
    reservation: Reservation | None = None
    """Reservation name (or `projects/P/reservations/R`) when `provisioning: reservation`."""
    disk_size_gb: int = Field(default=200, ge=10, le=65536)
    """Boot disk size of each node, in GB."""
    disk_type: Literal["pd-balanced", "pd-ssd", "hyperdisk-balanced"] = "pd-balanced"
    """Boot disk type of each node; a3-ultragpu, a4 and a4x boot only from
    hyperdisk-balanced."""
    max_pods_per_node: int = Field(default=GPU_MAX_PODS_PER_NODE, ge=8, le=256)
    """Pods per GPU node; sizes each node's block of `network.podsCidr` (a /26 at 32)."""
    gpu_direct: bool = True
    """Give a3-highgpu-8g (GPUDirect-TCPX), a3-megagpu-8g (GPUDirect-TCPXO), a3-ultragpu-8g
    and a4-highgpu-8g (RDMA) nodes their GPU NICs, each in a VPC and subnet of its own (RDMA's
    in one VPC with the zone's RoCE profile), GKE's pod network objects for them, and GKE's
    NCCL plugin installer. `false` leaves NCCL on the node's one NIC, with a warning."""
    gpu_subnet_cidr: Cidr | None = None
    """The first of the consecutive, equally sized subnets of the GPU NICs (4 for A3 High, 8
    for A3 Mega, 9 for A3 Ultra and A4: a second gVNIC, then 8 RDMA NICs), e.g.
    `10.140.0.0/24`; each holds an address per node. Required for those machines."""

    @property
    def gpus(self) -> int:
        """GPUs the pool provides at its largest."""
        return self.max_nodes * self.accelerator_count

    @property
    def fast_path(self) -> GpuNicLayout | None:
        """The GPU NIC layout the pool's nodes are built with, or None (one NIC)."""
        return gpu_fast_path(self.machine_type) if self.gpu_direct else None

    def gpu_subnets(self) -> list[str]:
        """The GPU NICs' subnets, in NIC order; for a pool with a fast path and a range."""
        layout = self.fast_path
        if layout is None or self.gpu_subnet_cidr is None:
            return []
        first = ipaddress.IPv4Network(self.gpu_subnet_cidr)
        count = layout.gpu_nics + (layout.host_nics - 1 if layout.rdma else 0)
        return [
            str(
                ipaddress.IPv4Network(
                    (int(first.network_address) + k * first.num_addresses, first.prefixlen)
                )
            )
            for k in range(count)
        ]


# ai-infra:workloadIdentities


class WorkloadIdentityConfig(ConfigModel):
    """One entry of `ai-infra:workloadIdentities`."""

    name: DnsLabel
    """The Google service account is `<prefix>-<name>@PROJECT.iam.gserviceaccount.com`."""
    namespace: DnsLabel
    """Kubernetes namespace of the workload."""
    service_account: DnsLabel
    """The Kubernetes service account that may act as the Google service account, bound as
    `serviceAccount:PROJECT.svc.id.goog[NAMESPACE/SERVICE_ACCOUNT]`."""
    roles: list[IamRole] = Field(default_factory=list)
    """Project roles, e.g. roles/tpu.viewer. Basic roles are refused."""
    buckets: dict[str, BucketAccess] = Field(default_factory=dict)
    """`ai-infra:buckets` name -> `read`, `write` or `admin` (roles/storage.objectViewer,
    objectUser, objectAdmin on that bucket)."""
    create_namespace: bool = True
    """Create the namespace; turn off when another identity or a team already has it."""


# ai-infra:tpuProvisioner

_LABEL_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
KubernetesLabelKey = Annotated[
    str,
    matching(
        rf"([a-z0-9]([-a-z0-9.]{{0,251}}[a-z0-9])?/)?{_LABEL_NAME}",
        "is not a Kubernetes label key such as team or example.com/run",
    ),
]


_GO_UNIT_NS = {"ms": 10**6, "s": 10**9, "m": 60 * 10**9, "h": 3600 * 10**9}
_GO_DURATION = re.compile(r"([0-9]+)(ms|s|m|h)")
GO_DURATION_MAX_NS = 2**63 - 1
"""Go's time.Duration is an int64 of nanoseconds, about 2562047h: time.ParseDuration refuses
more, and envconfig's MustProcess then panics, so the controller never starts."""


def _duration_ns(value: str) -> int:
    return sum(int(n) * _GO_UNIT_NS[unit] for n, unit in _GO_DURATION.findall(value))


def _fits_go(value: str) -> str:
    if _duration_ns(value) > GO_DURATION_MAX_NS:
        raise ValueError(
            f"'{value}' is longer than Go's longest duration (about 2562047h), so the "
            "controller could not parse it and would not start; use at most a few hours"
        )
    return value


def _nonzero(value: str) -> str:
    if not _duration_ns(value):
        raise ValueError(
            f"'{value}' is zero, and the controller refuses to start with a zero "
            "NODE_MIN_LIFESPAN; use at least 1s (upstream default 10s)"
        )
    return value


GoDuration = Annotated[
    str,
    Field(max_length=32),
    matching(
        r"([0-9]+(ms|s|m|h))+", "is not a duration; write it as Go does, e.g. 30s, 5m or 1m30s"
    ),
    AfterValidator(_fits_go),
]
"""A duration as Go's time.ParseDuration reads it, in the units the controller uses. Empty
is refused too: envconfig passes a set-but-empty variable to the parser, which fails."""


class AdditionalNodeNetwork(ConfigModel):
    """One extra network interface on the nodes the provisioner creates."""

    network: GceName
    """The VPC's name; each interface needs a VPC of its own, not the cluster's."""
    subnetwork: GceName
    """The subnet's name in that VPC, in the cluster's region."""


SliceCount = Annotated[int, Field(strict=True, ge=1, le=MAX_PROVISIONED_SLICES_PER_SHAPE)]


class TpuProvisionerConfig(ConfigModel):
    """`ai-infra:tpuProvisioner`: GKE's open-source TPU provisioner, which creates a slice node
    pool for each pending JobSet and deletes it when the JobSet ends. It manages node pools
    itself, so the cluster must not be on a release channel."""

    enabled: bool = False
    """Run the controller in `tpu-provisioner-system`, as `<prefix>-tpu-prov` (with a custom
    role holding only what it calls, container.clusters.get and .update and
    container.operations.get, and `roles/iam.serviceAccountUser` on the node service account)
    through the Kubernetes service account `tpu-provisioner-controller-manager`."""
    image: ImageReference | None = None
    """The controller image you built and pushed (required when enabled); pin it by digest
    (`...@sha256:...`), a tag alone can move under a running cluster."""
    zone: Zone | None = None
    """Zone it creates node pools in (`GCP_ZONE`); defaults to `gcp:zone`. It must offer the
    TPU generations the teams request."""
    node_service_account: ServiceAccountEmail | None = None
    """Service account of the nodes it creates (`GCP_NODE_SERVICE_ACCOUNT`); defaults to the
    cluster's node service account. Another account gets the roles the cluster's node account
    has; it must not be one the program creates for anything else."""
    node_tags: list[NetworkTag] = Field(default_factory=list)
    """Network tags on the nodes it creates (`GCP_NODE_TAGS`)."""
    pod_to_node_labels: list[KubernetesLabelKey] = Field(default_factory=list)
    """Pod label keys copied onto the node pools it creates (`GCP_POD_TO_NODE_LABELS`)."""
    force_on_demand: bool = True
    """Create on-demand pools even when a pod selects Spot or a reservation
    (`GCP_FORCE_ON_DEMAND`). Off, any team member's pod can have it create Spot pools or
    consume any reservation the project can use (`cloud.google.com/reservation-name`)."""
    concurrency: int = Field(default=3, ge=1, le=64)
    """Pods and nodes reconciled at once by each of its controllers (`CONCURRENCY`), 1-64."""
    node_min_lifespan: Annotated[GoDuration, AfterValidator(_nonzero)] = "10s"
    """How old a node must be before its pool may be deleted (`NODE_MIN_LIFESPAN`)."""
    node_pool_deletion_delay: GoDuration = "30s"
    """`NODEPOOL_DELETION_DELAY`, which the controller parses (a bad value stops it) but at
    the pinned commit does not use."""
    secondary_boot_disk: DiskImage | None = None
    """A disk image preloaded on every node it creates as a secondary boot disk in container
    image cache mode (`GCP_NODE_SECONDARY_DISK`), so large images start without a pull; the
    nodes' service account must be able to read the image."""
    additional_node_networks: list[AdditionalNodeNetwork] = Field(
        default_factory=list, max_length=MAX_NODE_NETWORKS
    )
    """Extra network interfaces on the nodes it creates, `{network, subnetwork}` by name
    (`GCP_NODE_ADDITIONAL_NETWORKS`), e.g. for multislice traffic; each in a VPC of its own,
    and the cluster must have GKE multi-networking on."""
    boot_disk_kms_key: KmsCryptoKey | None = None
    """Cloud KMS key that encrypts its nodes' boot disks (`GCP_NODE_BOOT_DISK_KMS_KEY`); the
    project's Compute Engine service agent needs roles/cloudkms.cryptoKeyEncrypterDecrypter
    on it."""
    confidential_storage: bool = False
    """Boot disks in confidential mode (`GCP_NODE_CONFIDENTIAL_STORAGE`): Hyperdisk only (v6e
    and tpu7x shapes), with `bootDiskKmsKey`. The controller has no confidential-nodes
    setting."""
    create_workload_policies: bool = True
    """Create the `tpu-provisioner-<topology>` workload policies its tpu7x pools use. The
    controller names them per project and region, not per cluster: of several stacks running
    it in one project and region, exactly one creates them and the others set false and use
    those (which must outlive them)."""
    quota: dict[str, SliceCount] = Field(default_factory=dict)
    """Accelerator type -> the most slices of it the provisioner may create, e.g.
    `{v5p-32: 4}`, in the type's default topology. Each becomes Kueue quota on that shape's
    flavor, shared with fixed slices of the shape; teams name it in their quota as
    `tpuProvisioner.<accelerator>`."""

    def shapes(self) -> dict[str, tpu_catalog.TpuShape]:
        """The quota's accelerator types resolved to their default-topology shapes; call only
        on a config whose problems are empty."""
        return {accelerator: tpu_catalog.resolve(accelerator) for accelerator in self.quota}


# ai-infra:kueue


class KueueConfig(ConfigModel):
    """`ai-infra:kueue`: cluster-wide queueing policy."""

    cohort: DnsLabel = "ai-infra"
    """Cohort of every team ClusterQueue: idle quota is borrowed inside it, and it holds the
    quota no team receives."""
    priority_classes: dict[DnsLabel, Annotated[int, Field(ge=-(2**31), le=2**31 - 1)]] = Field(
        default_factory=lambda: {"low": 100, "normal": 1000, "high": 10000}
    )
    """WorkloadPriorityClass name -> value; higher preempts lower within a queue. Jobs pick
    one with the `kueue.x-k8s.io/priority-class` label."""


# ai-infra:teams

Share = int | float
"""Chips/GPUs (int) or a fraction of the entry (float in (0, 1])."""
_PERCENT = re.compile(r"([0-9]+(?:\.[0-9]+)?)%")
_QUANTITY = re.compile(r"[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|Ki|Mi|Gi|Ti|Pi)?")


@described(
    "chips, fraction or percentage",
    {
        "anyOf": [
            {"type": "integer", "minimum": 0},
            {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
            # _PERCENT, with the upper bound of 100%.
            {"type": "string", "pattern": r"^(?:100(?:\.0+)?|[0-9]{1,2}(?:\.[0-9]+)?)%$"},
        ]
    },
)
def _share(value: Any) -> Share:
    """A share as written in YAML: chips (16), a fraction (0.5) or a percentage ("50%")."""
    if isinstance(value, bool):
        raise ValueError(f"{value} is not a share; use chips (16), a fraction (0.5) or 50%")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"{value} chips is negative")
        return value
    if isinstance(value, float):
        if not 0 < value <= 1:
            raise ValueError(f"fraction {value} must be in (0, 1]; write chips as an int")
        return value
    if isinstance(value, str) and (match := _PERCENT.fullmatch(value)):
        percent = float(match[1])
        if not 0 < percent <= 100:
            raise ValueError(f"{value} must be between 0% and 100%")
        return percent / 100
    raise ValueError(f"{value!r} is not a share; use chips (16), a fraction (0.5) or 50%")


QuotaShare = Annotated[Share, BeforeValidator(_share)]


@described(
    "Kubernetes quantity",
    {
        "anyOf": [
            {"type": "integer", "minimum": 0},
            {"type": "string", "pattern": anchored(_QUANTITY)},
        ]
    },
)
def _quantity(value: Any) -> str:
    """A Kubernetes quantity; YAML's `1000` (an int) is the quantity "1000"."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return str(value)
    if not isinstance(value, str) or not _QUANTITY.fullmatch(value):
        raise ValueError(f"{value!r} is not a Kubernetes quantity such as 200 or 800Gi")
    return value


Quantity = Annotated[str, BeforeValidator(_quantity)]
GroupEmail = Annotated[
    str,
    matching(
        r"[^@\s:]+@[^@\s]+\.[a-z]+",
        "is not a Google group: write it as a plain email, e.g. ml-team@example.com",
    ),
]


@described("`baseline` or `restricted`", {"enum": ["baseline", "restricted"]})
def _pod_security(value: Any) -> str:
    if value == "privileged":
        raise ValueError(
            "'privileged' would let a team member run privileged, hostPath or hostPID pods, "
            "and read every token on the node; use baseline (the default) or restricted, and "
            "tpuHostNetwork: true where multislice JobSets need the host network"
        )
    if value not in ("baseline", "restricted"):
        raise ValueError(
            f"{value!r} is not a Pod Security level a team may take: baseline or restricted"
        )
    return value


PodSecurityLevel = Annotated[str, BeforeValidator(_pod_security)]
DiskStorageClass = Literal["standard", "standard-rwo", "premium-rwo"]
"""The Persistent Disk StorageClasses GKE creates in every cluster (GKE "Using the Compute
Engine persistent disk CSI Driver": standard-rwo is balanced PD, premium-rwo SSD PD, standard
standard PD). Filestore and Lustre come from `ai-infra:storage`, never from a team's claim."""


class TeamLimits(ConfigModel):
    """`teams[].limits`: what the team may take outside Kueue, in its namespace's
    ResourceQuotas. Services (Deployments, StatefulSets) run under the PriorityClass
    `ai-infra-services`, which a quota scoped to it bounds; Kueue bounds the Jobs and
    JobSets."""

    cpu: Quantity = "8"
    """CPU its services' pods request, in total."""
    memory: Quantity = "32Gi"
    """Memory its services' pods request, in total."""
    pods: int = Field(default=20, ge=0, le=10_000)
    """Pods of its services at once."""
    storage: dict[DiskStorageClass, Quantity] = Field(
        default_factory=lambda: {"standard-rwo": "500Gi"}
    )
    """StorageClass -> what the team's own claims of it request in total; a claim of a
    class not listed is refused. Claims of `ai-infra:storage` volumes take no class and are
    not counted."""
    claims: int = Field(default=20, ge=0, le=10_000)
    """Claims of each listed class."""
    objects: int = Field(default=200, ge=1, le=10_000)
    """ConfigMaps, Secrets, Deployments, StatefulSets and CronJobs, each."""


class TeamConfig(ConfigModel):
    """One entry of `ai-infra:teams`."""

    name: DnsLabel
    """Namespace, ClusterQueue and LocalQueue name; Google service account `<prefix>-<name>`."""
    quota: dict[str, QuotaShare] = Field(default_factory=dict)
    """Slice or GPU pool name -> this team's share of it: chips/GPUs (`64`), a fraction
    (`0.25`) or a percentage (`"25%"`), best a whole number of slices. Entries a team does not
    name are split evenly, in whole slices, among the teams that do not name them; the rest
    stays with the cohort."""
    cpu: Quantity | None = None
    """Nominal quota of the `cpu` flavor, in cores. Unset: the allocatable CPU of the nodes
    behind the team's TPU and GPU quota (GKE's node allocatable), so a job that takes the
    team's whole quota never borrows CPU and is never reclaimed for it. Set it for CPU-only
    jobs, or where the catalog cannot size a GPU pool's nodes."""
    memory: Quantity | None = None
    """Nominal memory quota of the `cpu` flavor; unset, the allocatable memory of the nodes
    behind the team's TPU and GPU quota, as for `cpu`."""
    roles: list[IamRole] = Field(default_factory=list)
    """Extra project roles for the team's Google service account; basic roles are refused."""
    buckets: dict[str, BucketAccess] = Field(default_factory=dict)
    """`ai-infra:buckets` name -> `read`, `write` or `admin` for the team's Google service
    account."""
    groups: list[GroupEmail] = Field(default_factory=list)
    """Google groups (emails) that get `edit` and Kueue's `kueue-batch-user-role` (JobSets and
    Jobs, their LocalQueues' pending workloads) in the team namespace, and
    `roles/container.clusterViewer` on the project; needs `cluster.rbacSecurityGroup`."""
    service_account: DnsLabel = "training"
    """Kubernetes service account that jobs run as (`serviceAccountName`), bound to the
    team's Google service account."""
    pod_security: PodSecurityLevel = "baseline"
    """The Pod Security level the namespace enforces: `baseline` (no privileged, hostPath,
    hostPID or host ports) or `restricted` (also non-root, no privilege escalation, all
    capabilities dropped); `privileged` is refused."""
    tpu_host_network: bool = False
    """Let the team's Kueue-managed pods on its own slices (`tpuSlices[].team`, selected by
    the `ai-infra/dedicated` node label) use the host network, as GKE's multislice JobSets
    do. Such a pod is outside every NetworkPolicy and acts as its node's account, so it runs
    only on nodes that no other team's pod lands on and whose account reads only the team's
    images. Every other baseline check still holds (an admission policy enforces them instead
    of Pod Security Admission, which cannot make that exception). Not with
    `podSecurity: restricted`."""
    priority_classes: list[DnsLabel] | None = None
    """The `kueue.priorityClasses` its jobs may name (`kueue.x-k8s.io/priority-class`); unset,
    every one. A job naming another, or a pod naming a PriorityClass (system ones included),
    is refused."""
    image_repositories: list[ArtifactRepository] = Field(default_factory=list, max_length=100)
    """Artifact Registry repositories holding the team's private images
    (`LOCATION-docker.pkg.dev/PROJECT/REPOSITORY`): the nodes' account reads them, and no other
    team's pod may name an image of them."""
    limits: TeamLimits = Field(default_factory=TeamLimits)
    """What the team may take outside Kueue: its services' CPU, memory and pods, its claims'
    storage per class, and its objects; no LoadBalancer or NodePort Services."""
    gpu_direct_pods: bool = False
    """Let the team's Kueue-managed pods on a GPU pool built on its fast path (A3, A3 Mega,
    A3 Ultra, A4 with GPU NICs) mount the host paths of GKE's GPUDirect/RDMA manifests and give
    the receive daemon NET_ADMIN, as GKE's examples do; every other baseline check still holds
    (an admission policy enforces them instead of Pod Security Admission). Not with
    `podSecurity: restricted`."""


# The system as a whole, resolved.

PROVISIONER_MAX_PODS_PER_NODE = 15
"""The provisioner's pools run at most 15 pods per node, a /27 of the pods range each
(`maxPodsPerNode`, internal/cloud/gke.go at 6789e2a; no setting changes it)."""
PROVISIONER_CHIPS_PER_NODE = 4
"""The provisioner sizes a pool as ceil(chips of the topology / 4) nodes of the machine type
the pod's chip request names (tpuTopologyToNodeCount and tpuMachineType in gke.go)."""
WORKLOAD_POLICY_PREFIX = "tpu-provisioner-"
"""For tpu7x the controller names the workload policy `tpu-provisioner-<topology>` in the
cluster's project and region, and expects it to exist (gke.go; upstream README, Ironwood)."""
PROVISIONER_ACCOUNT = "tpu-prov"
"""The provisioner's Google service account is `<prefix>-tpu-prov`."""
PROVISIONER_SOURCE = "tpuProvisioner."
"""Prefix of a provisioner shape's capacity as a quota source (`tpuProvisioner.v5p-32`); a
slice or pool name (a DNS label) cannot contain the '.'."""


DCN_GROUP_MAX = 17
"""Keeps `<prefix>-<network>-dcn-<group>`, the rule of a group on a node network, within
Compute Engine's 63 characters (prefix and network name take 20 each)."""
PROVISIONED_DCN_GROUP = "provisioned"


def dcn_group_id(name: str) -> str:
    """A short stable id of a DCN group (a flavor's name, or `provisioned`): the name itself
    when it fits, else its head and a hash of the whole."""
    if len(name) <= DCN_GROUP_MAX:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[: DCN_GROUP_MAX - 9].rstrip('-')}-{digest}"


@dataclass(frozen=True)
class DcnGroup:
    """Hosts that may talk over the additional node networks: the slices of one Kueue flavor
    (a multislice job spans slices of one flavor), or every pool the TPU provisioner creates
    (it gives them all the same tags). A rule per network admits the group's tag from itself
    only."""

    id: str
    tag: str
    networks: tuple[str, ...]
    """Node network names some member attaches to, in the stack's order."""
    members: tuple[str, ...]
    """Who: slice entry names, or the provisioner's pools."""
    team: str | None = None
    """The team whose own slices these are, if any."""


@dataclass(frozen=True)
class GkeConfig:
    """Every GKE key of one stack, with the stack context, and what they resolve to."""

    context: StackContext
    cluster: ClusterConfig
    tpu_slices: list[TpuSliceConfig]
    gpu_pools: list[GpuPoolConfig]
    workload_identities: list[WorkloadIdentityConfig]
    tpu_provisioner: TpuProvisionerConfig
    kueue: KueueConfig
    teams: list[TeamConfig]
    network: NetworkConfig
    """The stack's network, for the node networks pools attach to and the plan's account of
    each slice's NICs."""
    lustre_csi_driver: bool = False
    """Whether a team mounts a Managed Lustre volume of `ai-infra:storage`: the cluster then
    runs GKE's Managed Lustre CSI driver, off by default ("About the Managed Lustre CSI
    driver")."""

    @property
    def cluster_name(self) -> str:
        return self.cluster.name or self.context.name("gke")

    @property
    def location(self) -> str:
        """The region, or the zone of a zonal cluster."""
        return self.context.region if self.cluster.regional else self.context.zone

    @property
    def zones(self) -> int:
        """Zones the cluster's CPU pool has nodes in: a regional cluster's three, or one."""
        return 3 if self.cluster.regional else 1

    @property
    def deletion_protection(self) -> bool:
        if self.cluster.deletion_protection is None:
            return self.context.protect
        return self.cluster.deletion_protection

    @property
    def auto_upgrade(self) -> bool:
        """Whether TPU slice pools auto-upgrade; GKE requires it on a release channel."""
        return self.cluster.release_channel != "NONE"

    @property
    def node_account_id(self) -> str:
        """The node service account's id; teams and identities must not take it."""
        return self.context.name("nodes")

    @property
    def node_service_account(self) -> str:
        return service_account_email(self.node_account_id, self.context.project)

    def team_node_account_id(self, team: str) -> str:
        """The node account of the slices dedicated to `team` (`tpuSlices[].team`)."""
        return self.context.name(team, "nodes")

    @property
    def dedicated_teams(self) -> list[str]:
        """Teams that own slices of their own, in the order their first slice is listed."""
        return list(dict.fromkeys(s.team for s in self.tpu_slices if s.team is not None))

    def slice_node_account(self, entry: TpuSliceConfig) -> str:
        """The account a slice's nodes run as: its team's own, or the cluster's."""
        if entry.team is None:
            return self.node_service_account
        return service_account_email(self.team_node_account_id(entry.team), self.context.project)

    def image_repositories(self, team: str | None = None) -> list[str]:
        """The Artifact Registry repositories nodes pull from: with `team`, those its own
        nodes need (`cluster.imageRepositories` and the team's); else every one the stack
        names, the TPU provisioner's image's included (the system pool pulls it)."""
        repositories = list(self.cluster.image_repositories)
        for entry in self.teams:
            if team is None or entry.name == team:
                repositories += entry.image_repositories
        if team is None and self.tpu_provisioner.enabled and self.tpu_provisioner.image:
            own = artifact_repository(self.tpu_provisioner.image)
            repositories += [own] if own else []
        return list(dict.fromkeys(repositories))

    def priority_classes(self, team: TeamConfig) -> list[str]:
        """The WorkloadPriorityClasses a team's jobs may name."""
        if team.priority_classes is None:
            return list(self.kueue.priority_classes)
        return list(team.priority_classes)

    @property
    def provisioner_account_id(self) -> str:
        """Reserved whether or not the provisioner is enabled."""
        return self.context.name(PROVISIONER_ACCOUNT)

    @property
    def provisioner_zone(self) -> str:
        return self.context.zone_of(self.tpu_provisioner.zone)

    @property
    def provisioner_node_service_account(self) -> str:
        """The account of the nodes the TPU provisioner creates."""
        return self.tpu_provisioner.node_service_account or self.node_service_account

    @property
    def tpu_chips(self) -> int:
        return sum(s.chips for s in self.tpu_slices)

    @property
    def pool_names(self) -> list[str]:
        """Every node pool the program creates: the CPU pool, the slices' and the GPU pools'."""
        slices = [pool for s in self.tpu_slices for pool in s.pool_names]
        return [CPU_POOL, SYSTEM_POOL, *slices, *(g.name for g in self.gpu_pools)]

    def slice_node_networks(self, entry: TpuSliceConfig) -> list[NodeNetwork]:
        """The additional node networks a slice's hosts attach to, in NIC order; for an entry
        whose problems are empty."""
        networks = self.network.node_networks(self.context.prefix)
        if entry.additional_node_networks is not None:
            return [networks[name] for name in entry.additional_node_networks]
        if entry.shape.family.additional_node_networks is None:
            return []
        return list(networks.values())

    @property
    def provisioner_node_networks(self) -> list[NodeNetwork]:
        """The stack's additional node networks the pools the TPU provisioner creates attach
        to: those `tpuProvisioner.additionalNodeNetworks` names by VPC and subnet, or, when it
        names none, all of them when every shape in its quota belongs to a family that takes
        them (the controller gives every pool it creates the same networks), else none."""
        config = self.tpu_provisioner
        if not config.enabled or not config.quota:
            return []
        stack = self.network.node_networks(self.context.prefix)
        if config.additional_node_networks:
            own = {(n.vpc, n.subnet): n for n in stack.values()}
            named = [(e.network, e.subnetwork) for e in config.additional_node_networks]
            return [own[pair] for pair in named if pair in own]
        if any(s.family.additional_node_networks is None for s in config.shapes().values()):
            return []
        return list(stack.values())

    @property
    def provisioner_additional_networks(self) -> list[tuple[str, str]]:
        """(VPC, subnet) names of the interfaces beyond the first on the pools the provisioner
        creates (`GCP_NODE_ADDITIONAL_NETWORKS`): those `tpuProvisioner.additionalNodeNetworks`
        names, or else the stack's node networks when its quota's families take them."""
        explicit = self.tpu_provisioner.additional_node_networks
        if explicit:
            return [(n.network, n.subnetwork) for n in explicit]
        return [(n.vpc, n.subnet) for n in self.provisioner_node_networks]

    @property
    def multi_networking(self) -> bool:
        """Whether any pool attaches to an additional node network; the cluster then needs
        multi-networking."""
        return (
            bool(self.provisioner_additional_networks)
            or any(self.slice_node_networks(s) for s in self.tpu_slices)
            or any(g.fast_path for g in self.gpu_pools)
        )

    def dcn_tag(self, group: str) -> str:
        """The network tag of a DCN group's hosts."""
        return self.context.name("dcn", dcn_group_id(group))

    def slice_dcn_tags(self, entry: TpuSliceConfig) -> list[str]:
        """A slice's DCN group tag, when its hosts attach to node networks."""
        if not self.slice_node_networks(entry):
            return []
        return [self.dcn_tag(tpu_flavor_name(entry))]

    def dcn_groups(self) -> list[DcnGroup]:
        """The DCN groups, each with the node networks its members attach to; for a valid
        config."""
        order = [n.name for n in self.network.additional_node_networks]
        groups: dict[str, tuple[set[str], list[str], str | None]] = {}
        for entry in self.tpu_slices:
            attached = {n.name for n in self.slice_node_networks(entry)}
            if attached:
                networks, members, _ = groups.setdefault(
                    tpu_flavor_name(entry), (set(), [], entry.team)
                )
                networks |= attached
                members.append(entry.name)
        provisioned = {n.name for n in self.provisioner_node_networks}
        if provisioned:
            groups[PROVISIONED_DCN_GROUP] = (provisioned, ["the TPU provisioner's pools"], None)
        return [
            DcnGroup(
                id=dcn_group_id(name),
                tag=self.dcn_tag(name),
                networks=tuple(n for n in order if n in networks),
                members=tuple(members),
                team=team,
            )
            for name, (networks, members, team) in groups.items()
        ]

    def node_network_users(self) -> dict[str, list[tuple[str, int]]]:
        """Network name -> (who, most nodes) of every pool that attaches to it, for sizing the
        additional subnets; for a valid config."""
        users: dict[str, list[tuple[str, int]]] = {}
        for entry in self.tpu_slices:
            for network in self.slice_node_networks(entry):
                users.setdefault(network.name, []).append((f"'{entry.name}'", entry.nodes))
        for network in self.provisioner_node_networks:
            users.setdefault(network.name, []).append(
                ("the TPU provisioner's pools", self.provisioned_nodes())
            )
        return users

    def provisioned(self) -> dict[str, tuple[tpu_catalog.TpuShape, int]]:
        """Quota source name (`tpuProvisioner.v5p-32`) -> the shape and the chips the
        provisioner may create of it; empty when it is off. For a valid config."""
        config = self.tpu_provisioner
        if not config.enabled:
            return {}
        return {
            f"{PROVISIONER_SOURCE}{accelerator}": (shape, config.quota[accelerator] * shape.chips)
            for accelerator, shape in config.shapes().items()
        }

    def provisioned_nodes(self) -> int:
        """The most nodes the provisioner's pools reach, for a valid config."""
        config = self.tpu_provisioner
        if not config.enabled:
            return 0
        return sum(config.quota[a] * shape.hosts for a, shape in config.shapes().items())

    def quota_sources(self) -> dict[str, int]:
        """Every name a team's quota may use, with the chips or GPUs behind it."""
        return (
            {s.name: s.chips for s in self.tpu_slices}
            | {g.name: g.gpus for g in self.gpu_pools}
            | {name: chips for name, (_, chips) in self.provisioned().items()}
        )

    @cached_property
    def flavors(self) -> list[Flavor]:
        """The Kueue flavors, derived once; for a valid config."""
        return derive_flavors(self.tpu_slices, self.gpu_pools, self.provisioned())

    @cached_property
    def allocation(self) -> Allocation:
        """Each team's nominal quota per flavor, and the cohort's; for a valid config."""
        return allocate(self.flavors, {team.name: team.quota for team in self.teams})

    def cpu_quota(self, team: TeamConfig) -> dict[str, str]:
        """The team's `cpu` flavor quota: what it sets, else what the nodes behind its
        accelerator quota offer pods; for a valid config."""
        derived = self.host_quota(team.name)
        return {"cpu": team.cpu or derived.cpu, "memory": team.memory or derived.memory}

    def host_quota(self, team: str | None = None, *, provisioned: bool = False) -> HostQuota:
        """The CPU and memory of the nodes behind a team's accelerator quota, or (None) the
        cohort's: in its ClusterQueue, or with `provisioned` in its queue for what the TPU
        provisioner creates; for a valid config."""
        quotas = self.allocation.cohort if team is None else self.allocation.teams[team]
        return host_quota([f for f in self.flavors if f.provisioned == provisioned], quotas)

    @property
    def provisioned_flavors(self) -> list[Flavor]:
        return [f for f in self.flavors if f.provisioned]
