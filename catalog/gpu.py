"""The GPU machine catalog: which GPUs a Compute Engine machine type carries, its vCPUs and the
boot disks it takes, the N1 attachment limits, how each series can be had (on demand, Spot,
flex-start, reservations), how a group of it is placed, and the NIC layouts GPUDirect and RDMA
need. GKE GPU pools and GPU clusters both check their config against it.

Sources: Compute Engine "Accelerator-optimized machine family" and "GPU machine types" (both
last updated 2026-04); GKE "Deploy GPU workloads" for the A100 40GB type string, which the
Compute page writes both as nvidia-tesla-a100 and nvidia-a100-40gb. vCPU counts as tabulated by
Cyclenerd/google-cloud-pricing-cost-calculator@build/gcp.yml (2026-08) and Cluster Toolkit
v1.95.0 blueprints; memory as the same Compute Engine page tabulates it (A2 85 or 170 GB per
GPU, A3 High/Mega/Edge 1,872 GB, A3 Ultra 2,952 GB, A4 3,968 GB, A4X 884 GB, G2 4 GB per
vCPU), where Compute Engine's GB is 2^30 bytes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

GPU_RESOURCE = "nvidia.com/gpu"
"""The extended resource GKE advertises for GPUs; pods request it, Kueue quotas count it."""


@dataclass(frozen=True)
class GpuMachine:
    """A machine type with a fixed GPU complement."""

    gpu_type: str
    """`guest_accelerator.type`, e.g. nvidia-h100-80gb."""
    gpu_count: int
    boot_disk_types: tuple[str, ...]
    """Boot disk types the machine accepts."""
    vcpus: int = 0
    """vCPUs of the machine type, which cap its NICs."""
    memory_gib: int | None = None
    """Memory of the machine type in GiB (Compute Engine's GB), where the sources give it."""


_PD = ("pd-balanced", "pd-ssd")
_PD_AND_HYPERDISK = ("pd-balanced", "pd-ssd", "hyperdisk-balanced")
_HYPERDISK_ONLY = ("hyperdisk-balanced",)
"""A3 Ultra, A4 and A4X: "Hyperdisk Balanced is the only disk type supported for the boot
disk" (Compute Engine, accelerator-optimized machines). G4 and A4X Max boot from Hyperdisk
Balanced in Cluster Toolkit v1.95.0 (examples/ml-slurm-g4.yaml, a4xmax-bm blueprint)."""


def _series(
    prefix: str,
    gpu: str,
    counts: dict[str, int],
    disks: tuple[str, ...],
    vcpus_per_gpu: int,
    gib_per_gpu: int | None = None,
) -> dict[str, GpuMachine]:
    return {
        f"{prefix}-{suffix}": GpuMachine(
            gpu, n, disks, vcpus_per_gpu * n, gib_per_gpu * n if gib_per_gpu else None
        )
        for suffix, n in counts.items()
    }


def _by_vcpus(
    prefix: str,
    gpu: str,
    gpus: dict[int, int],
    disks: tuple[str, ...],
    gib_per_vcpu: int | None = None,
) -> dict[str, GpuMachine]:
    """A series named by vCPUs (g2-standard-24): `gpus` maps vCPUs to GPUs."""
    return {
        f"{prefix}-{v}": GpuMachine(gpu, n, disks, v, gib_per_vcpu * v if gib_per_vcpu else None)
        for v, n in gpus.items()
    }


FIXED_GPU_MACHINES: dict[str, GpuMachine] = {
    **_series(
        "a2-highgpu",
        "nvidia-tesla-a100",
        {"1g": 1, "2g": 2, "4g": 4, "8g": 8},
        (*_PD, "pd-standard"),
        12,
        85,
    ),
    "a2-megagpu-16g": GpuMachine("nvidia-tesla-a100", 16, (*_PD, "pd-standard"), 96, 1360),
    **_series(
        "a2-ultragpu",
        "nvidia-a100-80gb",
        {"1g": 1, "2g": 2, "4g": 4, "8g": 8},
        (*_PD, "pd-standard"),
        12,
        170,
    ),
    **_series(
        "a3-highgpu",
        "nvidia-h100-80gb",
        {"1g": 1, "2g": 2, "4g": 4, "8g": 8},
        _PD_AND_HYPERDISK,
        26,
        234,
    ),
    **_series("a3-megagpu", "nvidia-h100-mega-80gb", {"8g": 8}, _PD_AND_HYPERDISK, 26, 234),
    **_series("a3-edgegpu", "nvidia-h100-80gb", {"8g": 8}, _PD_AND_HYPERDISK, 26, 234),
    **_series("a3-ultragpu", "nvidia-h200-141gb", {"8g": 8}, _HYPERDISK_ONLY, 28, 369),
    **_series("a4-highgpu", "nvidia-b200", {"8g": 8}, _HYPERDISK_ONLY, 28, 496),
    **_series("a4x-highgpu", "nvidia-gb200", {"4g": 4}, _HYPERDISK_ONLY, 35, 221),
    # Bare metal, two 72-core Grace sockets at one thread per core (Cluster Toolkit v1.95.0
    # a4x-maxgpu-4g-metal/a4xmax-bm-slurm-blueprint.yaml).
    "a4x-maxgpu-4g-metal": GpuMachine("nvidia-gb300", 4, _HYPERDISK_ONLY, 144),
    # G2 takes neither pd-standard nor hyperdisk-balanced boot disks; note g2-standard-32 has
    # one L4, not four.
    **_by_vcpus(
        "g2-standard",
        "nvidia-l4",
        {4: 1, 8: 1, 12: 1, 16: 1, 32: 1, 24: 2, 48: 4, 96: 8},
        _PD,
        4,
    ),
    # G4 (RTX PRO 6000) in whole GPUs; g4-standard-6/12/24 carry a fraction of one, which a
    # GPU count cannot express (Cluster Toolkit pkg/config/hardware.go, machine_mappings.json).
    **_by_vcpus(
        "g4-standard", "nvidia-rtx-pro-6000", {48: 1, 96: 2, 192: 4, 384: 8}, _HYPERDISK_ONLY
    ),
}

N1_GPU_COUNTS: dict[str, tuple[int, ...]] = {
    "nvidia-tesla-t4": (1, 2, 4),
    "nvidia-tesla-p4": (1, 2, 4),
    "nvidia-tesla-v100": (1, 2, 4, 8),
    "nvidia-tesla-p100": (1, 2, 4),
}
"""GPUs an N1 machine type can attach, and how many ("GPU machine types", N1 series)."""

N1_MAX_VCPUS: dict[str, dict[int, int]] = {
    "nvidia-tesla-t4": {1: 48, 2: 48, 4: 96},
    "nvidia-tesla-p4": {1: 24, 2: 48, 4: 96},
    "nvidia-tesla-v100": {1: 12, 2: 24, 4: 48, 8: 96},
    "nvidia-tesla-p100": {1: 16, 2: 32, 4: 96},
}
"""The most vCPUs an N1 VM may have with that many GPUs ("GPU machine types", N1 tables, as
transcribed by skypilot-org/skypilot sky/clouds/catalog/gcp_catalog.py). The memory limits
there are 6.5 GB per allowed vCPU, which no predefined N1 type exceeds, so vCPUs decide."""

N1_SIZES = (1, 2, 4, 8, 16, 32, 64, 96)
"""vCPU counts of the predefined N1 types."""
_NOLSSD = re.compile(r"-nolssd\Z")
_N1 = re.compile(r"n1-(standard|highmem|highcpu)-(?P<vcpus>[0-9]+)")


BUNDLED_LOCAL_SSDS: dict[str, int] = {
    "a3-highgpu-8g": 16,
    "a3-megagpu-8g": 16,
    "a3-ultragpu-8g": 32,
    "a4-highgpu-8g": 32,
}
"""375 GiB NVMe local SSDs that Compute Engine attaches to every VM of the type (Compute Engine
"Add a Local SSD": A4X, A4, A3 and A2 Ultra types all come with local SSD; the counts as Cluster
Toolkit v1.95.0 modules/compute/gke-node-pool/disk_definitions.tf `local_ssd_machines` gives
them). Other bundled counts (a2-ultragpu, smaller a3-highgpu, a3-edgegpu, a4x) were not read
from a source, so those types get no scratch until they are."""


def bundled_local_ssds(machine_type: str) -> int:
    """How many local SSDs a VM of the type comes with; 0 when none or not known here."""
    return BUNDLED_LOCAL_SSDS.get(machine_type, 0)


def fixed_gpus(machine_type: str) -> GpuMachine | None:
    """The GPUs built into a machine type, or None for a machine without a fixed complement
    (N1, or a type this catalog does not know). `-nolssd` variants carry the same GPUs."""
    return FIXED_GPU_MACHINES.get(_NOLSSD.sub("", machine_type))


def gpu_problem(machine_type: str, gpu_type: str, gpu_count: int) -> str | None:
    """Why `gpu_count` x `gpu_type` cannot run on `machine_type`, or None when it can."""
    fixed = fixed_gpus(machine_type)
    if fixed is not None:
        if (fixed.gpu_type, fixed.gpu_count) == (gpu_type, gpu_count):
            return None
        return (
            f"{machine_type} comes with {fixed.gpu_count} x {fixed.gpu_type}, not "
            f"{gpu_count} x {gpu_type}; set the GPU type and count to match, or pick the "
            "machine type that carries what you want"
        )
    if machine_type.startswith("n1-"):
        counts = N1_GPU_COUNTS.get(gpu_type)
        if counts is None:
            return (
                f"N1 machines attach only {', '.join(N1_GPU_COUNTS)}; for {gpu_type} use the "
                "accelerator-optimized machine type that carries it (a2, a3, a4, g2, g4)"
            )
        if gpu_count not in counts:
            return f"N1 machines attach {gpu_type} in counts of {', '.join(map(str, counts))}"
        return None
    return (
        f"'{machine_type}' is not a GPU machine type this program knows: use an a2, a3, a4, "
        "a4x, g2 or g4 machine type, or n1 with an attachable GPU"
    )


def vcpus(machine_type: str) -> int | None:
    """vCPUs of a GPU machine type, or None for one this catalog does not know."""
    fixed = fixed_gpus(machine_type)
    if fixed is not None:
        return fixed.vcpus
    match = _N1.fullmatch(machine_type)
    return int(match["vcpus"]) if match else None


def n1_problem(machine_type: str, gpu_type: str, gpu_count: int) -> str | None:
    """Why an N1 machine has too many vCPUs for `gpu_count` x `gpu_type`, or None. Call it
    once `gpu_problem` passes."""
    limit = N1_MAX_VCPUS.get(gpu_type, {}).get(gpu_count)
    cpus = vcpus(machine_type) if machine_type.startswith("n1-") else None
    if limit is None or cpus is None or cpus <= limit:
        return None
    largest = max(v for v in N1_SIZES if v <= limit)
    return (
        f"{machine_type} has {cpus} vCPUs, but N1 VMs with {gpu_count} x {gpu_type} take at "
        f"most {limit}; use n1-standard-{largest} (or n1-highmem-{largest}), or attach more GPUs"
    )


def boot_disk_problem(machine_type: str, disk_type: str) -> str | None:
    fixed = fixed_gpus(machine_type)
    if fixed is None or disk_type in fixed.boot_disk_types:
        return None
    return f"{machine_type} boots only from {' or '.join(fixed.boot_disk_types)}, not {disk_type}"


MAX_VNICS = 8
"""The vNIC cap of large machines: one vNIC per vCPU, at least 2, at most 8 (VPC "Multiple
network interfaces", maximum interfaces by vCPU count: "2 or less: 2; 2 to 8: 2 to 8; 8 or
more: 8"). Newer machine families allow more; 8 holds for every one. The RDMA layouts of
A3 Ultra, A4 and A4X are fixed by Google and go beyond it."""


def max_nics(machine_type: str) -> int:
    """How many vNICs a VM of this machine type takes."""
    cpus = vcpus(machine_type)
    return MAX_VNICS if cpus is None else max(2, min(MAX_VNICS, cpus))


Transport = Literal["tcpx", "tcpxo", "rdma"]
"""How NCCL reaches the other VMs' GPUs: GPUDirect-TCPX (A3 High), GPUDirect-TCPXO (A3 Mega),
or RDMA over RoCE with the gIB plugin (A3 Ultra, A4, A4X)."""


@dataclass(frozen=True)
class GpuNicLayout:
    """The NICs GPU-to-GPU traffic needs: `host_nics` gVNICs for host traffic (the first one
    carries the default route) plus `gpu_nics` more. TCPX and TCPXO put each GPU NIC in a VPC
    of its own at `gpu_mtu`; RDMA puts all of them, as MRDMA NICs, in one VPC with the zone's
    RoCE network profile. From Google's cluster provisioning tool (a3/ and a3-mega/
    terraform/modules/common/network at 2ff9b95: 4 GPU NICs on A3 High, 8 on A3 Mega, MTU
    8244, the host VPC at 8896) and Cluster Toolkit v1.95.0 (a3ultra-vm.yaml, a4high-vm.yaml,
    a4x-vm.yaml: net-0 and net-1 at MTU 8896, then 8 or 4 MRDMA NICs on a `-vpc-roce` VPC)."""

    gpu_nics: int
    gpu_mtu: int = 8244
    host_mtu: int = 8896
    host_nics: int = 1
    transport: Transport = "tcpx"

    @property
    def nics(self) -> int:
        return self.host_nics + self.gpu_nics

    @property
    def rdma(self) -> bool:
        return self.transport == "rdma"


def _rdma(gpu_nics: int) -> GpuNicLayout:
    return GpuNicLayout(gpu_nics=gpu_nics, gpu_mtu=8896, host_nics=2, transport="rdma")


GPU_NIC_LAYOUTS: dict[str, GpuNicLayout] = {
    "a3-highgpu-8g": GpuNicLayout(gpu_nics=4, transport="tcpx"),
    "a3-megagpu-8g": GpuNicLayout(gpu_nics=8, transport="tcpxo"),
    "a3-ultragpu-8g": _rdma(8),
    "a4-highgpu-8g": _rdma(8),
    "a4x-highgpu-4g": _rdma(4),
}


def nic_layout(machine_type: str) -> GpuNicLayout | None:
    return GPU_NIC_LAYOUTS.get(_NOLSSD.sub("", machine_type))


def roce_profile(project: str, zone: str) -> str:
    """The network profile an RDMA VPC is created with: one per zone, `<zone>-vpc-roce`
    (Cluster Toolkit v1.95.0 modules/network/gpu-rdma-vpc; pulumi-gcp 10.2.0
    `Network.network_profile` takes this partial URL)."""
    return f"projects/{project}/global/networkProfiles/{zone}-vpc-roce"


def smt(machine_type: str) -> bool:
    """Whether the machine's cores run two threads. A4X and A4X Max VMs sit on Arm Neoverse
    (Grace) cores, one thread each (Compute Engine, "Set the number of threads per core": Arm
    machine series have one thread per core); the x86 GPU families run two unless told
    otherwise."""
    return not arm(machine_type)


def arm(machine_type: str) -> bool:
    """A4X and A4X Max run Arm (Grace) CPUs and need arm64 images."""
    return machine_type.startswith("a4x-")


def bare_metal(machine_type: str) -> bool:
    return _NOLSSD.sub("", machine_type).endswith("-metal")


Provisioning = Literal["on-demand", "spot", "flex-start", "reservation"]
"""How a GPU cluster's VMs are had."""
ALL_PROVISIONING: tuple[Provisioning, ...] = ("on-demand", "spot", "flex-start", "reservation")


@dataclass(frozen=True)
class SeriesCapacity:
    """How VMs of a series can be had and placed."""

    provisioning: frozenset[str]
    """The provisioning models the series is sold under."""
    workload_policy: frozenset[str] = frozenset()
    """Provisioning models under which a MIG of the series takes a HIGH_THROUGHPUT workload
    policy."""
    compact: bool = False
    """A MIG of the series takes a compact placement policy (general-purpose GPUs)."""
    reservation_bound: Literal["never", "allowed", "required"] = "never"
    """Whether reservations of the series are consumed with the reservation-bound model."""
    accelerator_topology: str | None = None
    """The workload policy's accelerator topology, for the NVLink-domain series."""


_OPEN = frozenset({"on-demand", "spot", "reservation"})
_NOT_ON_DEMAND = frozenset({"spot", "reservation", "flex-start"})
_ALL = frozenset(ALL_PROVISIONING)
_SPOT_OR_RESERVED = frozenset({"spot", "reservation"})
_RESERVED = frozenset({"reservation"})

# AI Hypercomputer, "Compact placement policy and workload policy overview" (comparison
# table): workload policies for MIGs "for flex-start: A4 and A3 Ultra; for Spot or
# reservations: A4X, A4, A3 Ultra, A3 Mega, A3 High (8 GPUs)" (on-demand is not listed);
# compact placement for "MIGs that use general-purpose GPUs" (A2, G2, G4, A3 Edge, A3 High
# 1-4 GPUs). Cluster Director, "Choose a consumption option": flex-start and Spot for A4, A3
# Ultra and A3 Mega, capacity blocks (reservation-bound) for A4X, A4, A3 Ultra, A3 Mega; A4X
# only through reservations. Cluster Toolkit v1.95.0 offers reservation, Spot and DWS flex
# for A3 High 8g and G4 (a3high-slurm-blueprint.yaml:33-36, ml-slurm-g4.yaml:45-48).
SERIES: tuple[tuple[re.Pattern[str], SeriesCapacity], ...] = (
    (re.compile(r"n1-.*"), SeriesCapacity(_OPEN)),
    (re.compile(r"(a2|g2)-.*"), SeriesCapacity(_OPEN, compact=True)),
    (re.compile(r"g4-.*"), SeriesCapacity(_ALL, compact=True)),
    # "a3-highgpu-1g, 2g and 4g come only as Spot or flex-start" (accelerator-optimized).
    (
        re.compile(r"a3-highgpu-[124]g"),
        SeriesCapacity(frozenset({"spot", "flex-start"}), compact=True),
    ),
    (re.compile(r"a3-edgegpu-8g"), SeriesCapacity(_OPEN, compact=True)),
    (re.compile(r"a3-highgpu-8g"), SeriesCapacity(_ALL, workload_policy=_SPOT_OR_RESERVED)),
    (
        re.compile(r"a3-megagpu-8g"),
        SeriesCapacity(_ALL, workload_policy=_SPOT_OR_RESERVED, reservation_bound="allowed"),
    ),
    (
        re.compile(r"(a3-ultragpu|a4-highgpu)-8g"),
        SeriesCapacity(_NOT_ON_DEMAND, workload_policy=_NOT_ON_DEMAND, reservation_bound="allowed"),
    ),
    # "If you use A4X Max or A4X instances, then a workload policy is required unless you
    # create a single compute instance" with acceleratorTopology 1x72 (Compute Engine, "About
    # workload policies in MIGs").
    (
        re.compile(r"a4x-.*"),
        SeriesCapacity(
            _RESERVED,
            workload_policy=_RESERVED,
            reservation_bound="required",
            accelerator_topology="1x72",
        ),
    ),
)


def series_capacity(machine_type: str) -> SeriesCapacity | None:
    machine = _NOLSSD.sub("", machine_type)
    for pattern, capacity in SERIES:
        if pattern.fullmatch(machine):
            return capacity
    return None


def capacity_problem(machine_type: str, provisioning: str) -> str | None:
    """Why VMs of this machine type cannot be had with `provisioning`, or None."""
    capacity = series_capacity(machine_type)
    if capacity is None or provisioning in capacity.provisioning:
        return None
    offered = [p for p in ALL_PROVISIONING if p in capacity.provisioning]
    return (
        f"{machine_type} is not offered {provisioning}; set provisioning to {' or '.join(offered)}"
    )


PlacementKind = Literal["compact", "workload"]


def group_placement(machine_type: str, provisioning: str) -> PlacementKind | None:
    """How a managed instance group of this machine type is kept close together under
    `provisioning`: "workload" (a HIGH_THROUGHPUT workload policy on the group) where the AI
    Hypercomputer comparison table allows one for that capacity type, "compact" (a group
    placement policy on the instance template) for general-purpose GPUs, or None: N1, an
    on-demand A3 8-GPU group (neither kind is documented for it), a specific reservation of
    general-purpose GPUs (the reservation's own placement decides; Slurm-GCP drops external
    policies for such reservations, resume.py:126-140), and flex-start outside A4 and A3
    Ultra (a resize request's VMs are already densely colocated; Cluster Toolkit's nodeset
    allows compact placement with DWS flex only for A3 Ultra, A4 and H4D)."""
    capacity = series_capacity(machine_type)
    if capacity is None:
        return None
    if provisioning in capacity.workload_policy:
        return "workload"
    if capacity.compact and provisioning in ("on-demand", "spot"):
        return "compact"
    return None


COMPACT_LIMITS: dict[int | None, int] = {1: 22, 2: 150, 3: 1500, None: 1500}
"""VMs one compact placement policy holds, by its max distance: Slurm-GCP's
`calculate_chunk_size` in Cluster Toolkit v1.95.0 (schedmd-slurm-gcp-v6-controller/modules/
slurm_files/scripts/resume.py:609-631): 22 at distance 1, 150 at 2 (256 for A3), 1500 at 3,
and 1500 (`PLACEMENT_MAX_CNT`) with none set."""
A3_DISTANCE_2_LIMIT = 256


def compact_limit(machine_type: str, max_distance: int | None) -> int:
    if max_distance == 2 and machine_type.startswith("a3-"):
        return A3_DISTANCE_2_LIMIT
    return COMPACT_LIMITS[max_distance]


def max_distance_problem(machine_type: str, max_distance: int) -> str | None:
    """Cluster Toolkit's nodeset refuses max distance 1 on A3 ("A3 machines do not support a
    placement_max_distance of 1", schedmd-slurm-gcp-v6-nodeset/outputs.tf:50-53)."""
    if max_distance == 1 and machine_type.startswith("a3-"):
        return "A3 machines do not take a max distance of 1; use 2 (up to 256 VMs) or 3"
    return None


TOPOLOGY_DISTANCES: dict[int, str] = {1: "SUBBLOCK", 2: "BLOCK", 3: "CLUSTER"}
"""A workload policy's `maxTopologyDistance` for a max distance of 1, 2 or 3, as Slurm-GCP maps
its nodesets' `placement_max_distance` (Cluster Toolkit v1.95.0 schedmd-slurm-gcp-v6-
controller/modules/slurm_files/scripts/resume.py:477-495, create_placement_request)."""


def topology_distance(machine_type: str, max_distance: int | None) -> str | None:
    """The workload policy's `maxTopologyDistance` for a group of `machine_type`: None when
    no distance is asked for (Compute Engine then places the VMs as close as capacity allows,
    "About workload policies in MIGs") and for a series whose policy carries an accelerator
    topology instead (A4X; A4, A3 Ultra, A3 Mega and A3 High 8-GPU take a distance, never
    both)."""
    capacity = series_capacity(machine_type)
    if max_distance is None or (capacity is not None and capacity.accelerator_topology):
        return None
    return TOPOLOGY_DISTANCES[max_distance]


def pool_capacity_problem(machine_type: str, provisioning: str) -> str | None:
    """Why a GKE GPU pool of this machine type cannot get capacity by `provisioning`
    (on-demand, spot, reservation, flex-start), or None: the series' own capacity types
    (`SERIES`), except that GKE's flex-start (Dynamic Workload Scheduler provisioning
    requests) serves every series not sold through reservations only."""
    capacity = series_capacity(machine_type)
    if provisioning == "flex-start" and (capacity is None or capacity.provisioning != _RESERVED):
        return None
    return capacity_problem(machine_type, provisioning)
