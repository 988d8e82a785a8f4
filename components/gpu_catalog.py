"""The GPU machine catalog: which GPUs a Compute Engine machine type carries, and which boot
disks it takes. GKE GPU pools and GPU clusters both check their config against it.

Sources: Compute Engine "Accelerator-optimized machine family" and "GPU machine types" (both
last updated 2026-04); GKE "Deploy GPU workloads" for the A100 40GB type string, which the
Compute page writes both as nvidia-tesla-a100 and nvidia-a100-40gb.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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


_PD = ("pd-balanced", "pd-ssd")
_PD_AND_HYPERDISK = ("pd-balanced", "pd-ssd", "hyperdisk-balanced")
_HYPERDISK_ONLY = ("hyperdisk-balanced",)
"""A3 Ultra, A4 and A4X: "Hyperdisk Balanced is the only disk type supported for the boot
disk" (Compute Engine, accelerator-optimized machines)."""


def _series(
    prefix: str, gpu: str, counts: dict[str, int], disks: tuple[str, ...]
) -> dict[str, GpuMachine]:
    return {f"{prefix}-{suffix}": GpuMachine(gpu, n, disks) for suffix, n in counts.items()}


FIXED_GPU_MACHINES: dict[str, GpuMachine] = {
    **_series(
        "a2-highgpu",
        "nvidia-tesla-a100",
        {"1g": 1, "2g": 2, "4g": 4, "8g": 8},
        (*_PD, "pd-standard"),
    ),
    **_series("a2-megagpu", "nvidia-tesla-a100", {"16g": 16}, (*_PD, "pd-standard")),
    **_series(
        "a2-ultragpu",
        "nvidia-a100-80gb",
        {"1g": 1, "2g": 2, "4g": 4, "8g": 8},
        (*_PD, "pd-standard"),
    ),
    **_series(
        "a3-highgpu", "nvidia-h100-80gb", {"1g": 1, "2g": 2, "4g": 4, "8g": 8}, _PD_AND_HYPERDISK
    ),
    **_series("a3-megagpu", "nvidia-h100-mega-80gb", {"8g": 8}, _PD_AND_HYPERDISK),
    **_series("a3-edgegpu", "nvidia-h100-80gb", {"8g": 8}, _PD_AND_HYPERDISK),
    **_series("a3-ultragpu", "nvidia-h200-141gb", {"8g": 8}, _HYPERDISK_ONLY),
    **_series("a4-highgpu", "nvidia-b200", {"8g": 8}, _HYPERDISK_ONLY),
    **_series("a4x-highgpu", "nvidia-gb200", {"4g": 4}, _HYPERDISK_ONLY),
    # G2 takes neither pd-standard nor hyperdisk-balanced boot disks; note g2-standard-32 has
    # one L4, not four.
    **_series(
        "g2-standard",
        "nvidia-l4",
        {"4": 1, "8": 1, "12": 1, "16": 1, "32": 1, "24": 2, "48": 4, "96": 8},
        _PD,
    ),
}

N1_GPU_COUNTS: dict[str, tuple[int, ...]] = {
    "nvidia-tesla-t4": (1, 2, 4),
    "nvidia-tesla-p4": (1, 2, 4),
    "nvidia-tesla-v100": (1, 2, 4, 8),
    "nvidia-tesla-p100": (1, 2, 4),
}
"""GPUs an N1 machine type can attach, and how many ("GPU machine types", N1 series)."""

_NOLSSD = re.compile(r"-nolssd\Z")


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
                "accelerator-optimized machine type that carries it (a2, a3, a4, g2)"
            )
        if gpu_count not in counts:
            return f"N1 machines attach {gpu_type} in counts of {', '.join(map(str, counts))}"
        return None
    return (
        f"'{machine_type}' is not a GPU machine type this program knows: use an a2, a3, a4, "
        "a4x or g2 machine type, or n1 with an attachable GPU"
    )


def boot_disk_problem(machine_type: str, disk_type: str) -> str | None:
    fixed = fixed_gpus(machine_type)
    if fixed is None or disk_type in fixed.boot_disk_types:
        return None
    return f"{machine_type} boots only from {' or '.join(fixed.boot_disk_types)}, not {disk_type}"


@dataclass(frozen=True)
class GpuNicLayout:
    """The NICs GPUDirect needs: one gVNIC for host traffic plus `gpu_nics` more, each in its own
    VPC with `gpu_mtu`. From Google's cluster provisioning tool (a3/ and a3-mega/
    terraform/modules/common/network at 2ff9b95): 4 GPU NICs on A3 High, 8 on A3 Mega, MTU
    8244, the host NIC's VPC at MTU 8896."""

    gpu_nics: int
    gpu_mtu: int = 8244
    host_mtu: int = 8896


GPU_NIC_LAYOUTS: dict[str, GpuNicLayout] = {
    "a3-highgpu-8g": GpuNicLayout(gpu_nics=4),
    "a3-megagpu-8g": GpuNicLayout(gpu_nics=8),
}


def nic_layout(machine_type: str) -> GpuNicLayout | None:
    return GPU_NIC_LAYOUTS.get(_NOLSSD.sub("", machine_type))


_COMPACT_PLACEMENT = re.compile(r"(a2|g2)-.*|a3-highgpu-[124]g|a3-edgegpu-8g")
_WORKLOAD_PLACEMENT = re.compile(r"a3-(high|mega|ultra)gpu-8g|a4-highgpu-8g|a4x-.*")


def group_placement(machine_type: str) -> str | None:
    """How a managed instance group of this machine type is kept close together: "compact" (a
    group placement policy on the instance template), "workload" (a HIGH_THROUGHPUT workload
    policy on the group), or None where neither applies (N1). AI Hypercomputer, "Compact
    placement policy and workload policy overview": compact policies serve MIGs of
    general-purpose GPUs (A2, G2, A3 Edge, ...), workload policies MIGs of A4X, A4, A3 Ultra,
    A3 Mega and A3 High with 8 GPUs."""
    machine = _NOLSSD.sub("", machine_type)
    if _WORKLOAD_PLACEMENT.fullmatch(machine):
        return "workload"
    if _COMPACT_PLACEMENT.fullmatch(machine):
        return "compact"
    return None


def smt(machine_type: str) -> bool:
    """Whether the machine's cores run two threads. A4X VMs sit on Arm Neoverse (Grace) cores,
    one thread each (Compute Engine, "Set the number of threads per core": Arm machine series
    have one thread per core); the x86 GPU families run two unless told otherwise."""
    return not machine_type.startswith("a4x-")


_SPOT_OR_RESERVED = re.compile(r"a3-highgpu-[124]g|a3-ultragpu-8g|a4-highgpu-8g")
_RESERVED_ONLY = re.compile(r"a4x-.*")


def capacity_problem(machine_type: str, spot: bool) -> str | None:
    """Why on-demand (or Spot) VMs of this machine type cannot be had, or None. Compute Engine,
    accelerator-optimized machines: a3-highgpu-1g/2g/4g come only as Spot or flex-start; A3
    Ultra and A4 need a reservation, Spot or flex-start; A4X a reservation."""
    machine = _NOLSSD.sub("", machine_type)
    if _RESERVED_ONLY.fullmatch(machine):
        return (
            f"{machine_type} is sold only through reservations; use a GKE pool "
            "(ai-infra:gpuPools) with provisioning: reservation"
        )
    if _SPOT_OR_RESERVED.fullmatch(machine) and not spot:
        return (
            f"{machine_type} is not available on demand; set spot: true, or use a GKE pool "
            "(ai-infra:gpuPools) with a reservation or flex-start"
        )
    return None


def pool_capacity_problem(machine_type: str, provisioning: str) -> str | None:
    """Why a GKE GPU pool of this machine type cannot get capacity by `provisioning`
    (on-demand, spot, reservation, flex-start), or None; the same facts as
    `capacity_problem`."""
    machine = _NOLSSD.sub("", machine_type)
    if provisioning == "reservation":
        return None
    if _RESERVED_ONLY.fullmatch(machine):
        return f"{machine_type} is sold only through reservations; set provisioning: reservation"
    if provisioning == "on-demand" and _SPOT_OR_RESERVED.fullmatch(machine):
        return (
            f"{machine_type} is not available on demand; set provisioning to spot, flex-start "
            "or reservation"
        )
    return None
