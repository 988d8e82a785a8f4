"""What a recorded plan graph provides, as values: machines (nodes and VMs with their machine
type, chips, GPUs, disks, capacity type and place, at rest and at their most), Cloud TPU
slices, storage held, what could not be read, and the inventory of all of them. `graph.capacity`
reads a graph into these; the plan's numbers, the cost and preflight read them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Literal

from catalog import tpu as tpu_catalog

Capacity = Literal["on-demand", "spot", "flex-start", "reservation"]
"""How VMs get capacity. Best-effort Cloud TPU VMs are `spot`: both are preemptible."""


class System(StrEnum):
    """Who brings the machines up, as the plan groups them."""

    GKE_POOLS = "GKE node pools"
    PROVISIONER = "TPU provisioner"
    TPU_VMS = "TPU VMs"
    GPU_CLUSTERS = "GPU clusters"
    SLURM = "Slurm nodesets"
    VMS = "VMs"


@dataclass(frozen=True)
class Slices:
    """Cloud TPU slices of one accelerator type: a queued resource's, a Slurm TPU nodeset's, or
    the most the TPU provisioner may create of one shape."""

    accelerator: str
    """`v5p-32`: the Cloud TPU accelerator type of one slice."""
    count: int
    """The most slices at once."""
    hosts: int
    """TPU VMs (hosts) per slice."""
    cores: int
    """TensorCores per slice (chips for families that count chips)."""
    runtime: str = ""
    """The TPU software version the Cloud TPU API boots, for TPU VMs."""


@dataclass(frozen=True)
class Machines:
    """Machines of one kind that one resource, or one config entry, brings up."""

    key: str
    """The resource's URN, or the config key of capacity others create later."""
    label: str
    """`NodePool tpu-v5p-train-0`, `Slurm nodeset v4x16`, `TPU provisioner v5p-32 pools`."""
    name: str
    """The name the plan's numbers show: a pool's, a group's, a queued resource's id."""
    config_key: str
    """`tpuSlices[0]`, `slurm.tpuNodesets[1]`; empty where the graph holds none."""
    system: System
    machine_type: str
    """The Compute Engine machine type; for Cloud TPU VMs the host machine type, where the
    catalog names one (empty for v2 and v3)."""
    region: str
    zones: tuple[str, ...]
    """Empty where GKE picks the region's zones."""
    idle: int
    """Nodes or VMs with no job running: autoscaled pools at their minimum, flex-start and
    dynamic capacity at zero."""
    full: int
    """Nodes or VMs at their most."""
    capacity: Capacity
    provisioning: str
    """The capacity as the plan says it: `spot`, `best-effort`, `reservation r1`, ..."""
    autoscaled: bool = False
    """Whether `full` is a maximum rather than a fixed count."""
    per_zone: int | None = None
    """An autoscaled pool's maximum per zone, when its bounds count per zone."""
    reservation: str | None = None
    """As the plan names it: `NAME`, `projects/P/reservations/NAME`, or for Cloud TPU
    `projects/P/locations/Z/reservations/NAME`; None for none or any."""
    tpu: tpu_catalog.TpuHost | None = None
    """The TPU family and chips of each node or VM, for TPU hosts."""
    slices: Slices | None = None
    """The slices these VMs make, where they come in slices of an accelerator type."""
    tpu_api: bool = False
    """Created through the Cloud TPU API (queued resources, Slurm's TPU nodesets), whose quota
    counts per zone; otherwise Compute Engine VMs."""
    gpus: tuple[tuple[str, int], ...] = ()
    """(GPU type, per VM): attached, or the machine type's own."""
    boot_disk: tuple[str, int] | None = None
    """(disk type, GB) of each VM's boot disk; None where Cloud TPU creates it."""
    extra_disks: tuple[tuple[str, int], ...] = ()
    """(disk type, GB) of each VM's other persistent disks, made and deleted with it (a Slurm
    nodeset's `additionalDisks`); local SSDs are not among them."""
    images: tuple[str, ...] = ()
    external_ips: int = 0
    """External addresses per VM."""
    secure_boot: bool | None = None
    """None where whoever creates the VMs decides."""
    metadata: Mapping[str, str] = field(default_factory=dict)
    gke: bool = False
    """GKE nodes (quota in chips per region for TPUs; flex-start through GKE)."""
    later: bool = False
    """Created after `pulumi up`, by the TPU provisioner or Slurm's controller."""
    rollout: str = ""
    """For a managed instance group, how a new template reaches its running VMs: its update
    policy's type, `opportunistic` (only when a VM is recreated) or `proactive`."""

    @property
    def source(self) -> str:
        """Where it comes from, as preflight and the cost name it: `tpuSlices[0] NodePool
        tpu-v5p-train-0`, `slurm.tpuNodesets[0] v4x16`."""
        what = self.name if self.later else self.label
        return f"{self.config_key} {what}" if self.config_key else what

    @property
    def zone(self) -> str:
        """The zone of VMs placed in one (Cloud TPU VMs, instances, groups); else empty."""
        return self.zones[0] if len(self.zones) == 1 else ""

    @property
    def chips_per_node(self) -> int:
        return self.tpu.chips if self.tpu is not None else 0

    @property
    def chips(self) -> int:
        """TPU chips at their most."""
        return self.full * self.chips_per_node

    @property
    def gpus_per_node(self) -> int:
        return sum(count for _, count in self.gpus)

    @property
    def gpu_count(self) -> int:
        """GPUs at their most."""
        return self.full * self.gpus_per_node

    @property
    def gpu_type(self) -> str:
        return self.gpus[0][0] if self.gpus else ""


@dataclass(frozen=True)
class Storage:
    """Capacity a resource holds whether used or not: a persistent disk or a file share."""

    key: str
    label: str
    config_key: str
    kind: str
    """`disk`, `filestore` or `lustre`: what prices it (prices/cost.py STORAGE_PRICES) and
    which quota holds it (catalog/quota_names.py STORAGE_QUOTAS)."""
    tier: str
    """The disk type, the Filestore tier or Lustre's throughput tier (MBps per TiB)."""
    region: str
    gib: int
    """Provisioned size (GB for disks, GiB for shares)."""

    @property
    def source(self) -> str:
        return f"{self.config_key} {self.label}" if self.config_key else self.label


@dataclass(frozen=True)
class Unread:
    """A resource of a type that provides machines or storage, which could not be read: what
    it provides is missing from every count, and the readers say so."""

    key: str
    label: str
    why: str


Item = Machines | Storage


@dataclass(frozen=True)
class Inventory:
    """Everything a graph brings up and holds, in the order the program registers it, then
    what others create later."""

    items: tuple[Item, ...]
    unread: tuple[Unread, ...] = ()

    @property
    def machines(self) -> tuple[Machines, ...]:
        return tuple(i for i in self.items if isinstance(i, Machines))

    @property
    def storage(self) -> tuple[Storage, ...]:
        return tuple(i for i in self.items if isinstance(i, Storage))

    @property
    def chips(self) -> int:
        return sum(m.chips for m in self.machines)

    @property
    def gpus(self) -> int:
        return sum(m.gpu_count for m in self.machines)

    @property
    def nodes(self) -> int:
        return sum(m.full for m in self.machines)
