"""What the user writes under `ai-infra:tpuSlices` and `ai-infra:gpuPools`: each entry's
accelerator, size, zone, capacity and NICs, and what the catalogs resolve of it.
"""

from __future__ import annotations

import ipaddress
from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from catalog import tpu as tpu_catalog
from catalog.gpu import GpuNicLayout
from components.base import ConfigModel, described
from components.gke.config.cluster import (
    GPU_MAX_PODS_PER_NODE,
    MAX_NODES_PER_POOL,
    MAX_SLICES_PER_ENTRY,
    TPU_MAX_PODS_PER_NODE,
    HostMaintenanceInterval,
    Provisioning,
)
from components.gke.gpu_direct import fast_path as gpu_fast_path
from components.network import MAX_NODE_NETWORKS
from components.types import (
    Cidr,
    DnsLabel,
    MachineType,
    Reservation,
    Zone,
)


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
    additional_node_networks: (
        Annotated[list[DnsLabel], Field(max_length=MAX_NODE_NETWORKS)] | None
    ) = None
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
