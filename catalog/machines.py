"""Machine shapes the price catalog needs: the vCPUs and memory of predefined general-purpose
machine types (priced per vCPU and per GiB, so that any such type the config names has a
price), and what the accelerator-optimized types are made of (which `prices refresh` sums from
the Billing Catalog's vCPU, memory, GPU and local SSD SKUs).

Shapes are Compute Engine's ("General-purpose machine family", "Accelerator-optimized machine
family"), as Cyclenerd's pricing.yml (fd66b26) lists them for every predefined type.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from catalog import gpu as gpu_catalog


@dataclass(frozen=True)
class Family:
    """A general-purpose family whose predefined types are vCPUs x a fixed GiB per vCPU."""

    gib_per_vcpu: dict[str, float]
    """Machine class (`standard`, `highmem`, `highcpu`) -> GiB of memory per vCPU."""
    sizes: dict[str, tuple[int, ...]]
    """Machine class -> the vCPU counts Compute Engine offers."""


_POWERS = (2, 4, 8, 16, 32)
FAMILIES: dict[str, Family] = {
    "e2": Family(
        {"standard": 4, "highmem": 8, "highcpu": 1},
        {"standard": _POWERS, "highmem": (2, 4, 8, 16), "highcpu": _POWERS},
    ),
    "n1": Family(
        {"standard": 3.75, "highmem": 6.5, "highcpu": 0.9},
        {
            "standard": (1, *_POWERS, 64, 96),
            "highmem": (*_POWERS, 64, 96),
            "highcpu": (*_POWERS, 64, 96),
        },
    ),
    "n2": Family(
        {"standard": 4, "highmem": 8, "highcpu": 1},
        {
            "standard": (*_POWERS, 48, 64, 80, 96, 128),
            "highmem": (*_POWERS, 48, 64, 80, 96, 128),
            "highcpu": (*_POWERS, 48, 64, 80, 96),
        },
    ),
    "n2d": Family(
        {"standard": 4, "highmem": 8, "highcpu": 1},
        {
            "standard": (*_POWERS, 48, 64, 80, 96, 128, 224),
            "highmem": (*_POWERS, 48, 64, 80, 96),
            "highcpu": (*_POWERS, 48, 64, 80, 96, 128, 224),
        },
    ),
    "c2d": Family(
        {"standard": 4, "highmem": 8, "highcpu": 2},
        {c: (*_POWERS, 56, 112) for c in ("standard", "highmem", "highcpu")},
    ),
    "c3": Family(
        {"standard": 4, "highmem": 8, "highcpu": 2},
        {c: (4, 8, 22, 44, 88, 176) for c in ("standard", "highmem", "highcpu")},
    ),
    "n4": Family(
        {"standard": 4, "highmem": 8, "highcpu": 2},
        {c: (*_POWERS, 48, 64, 80) for c in ("standard", "highmem", "highcpu")},
    ),
}
"""Families with more than one memory ratio, so that their per-vCPU and per-GiB rates are
determined by their machine prices. C2 (one ratio) and the shared-core E2 types are priced as
whole machines instead."""
MEMORY_EXCEPTIONS: dict[str, float] = {"n2-highmem-128": 864}
"""Predefined types whose memory breaks their class's ratio (864 GiB, not 1,024)."""

_PREDEFINED = re.compile(r"(?P<family>[a-z0-9]+)-(?P<cls>standard|highmem|highcpu)-(?P<n>[0-9]+)")


def shape(machine_type: str) -> tuple[int, float] | None:
    """(vCPUs, GiB) of a predefined type of a family in `FAMILIES`, or None."""
    match = _PREDEFINED.fullmatch(machine_type)
    if match is None or match["family"] not in FAMILIES:
        return None
    family = FAMILIES[match["family"]]
    vcpus = int(match["n"])
    if vcpus not in family.sizes[match["cls"]]:
        return None
    gib = MEMORY_EXCEPTIONS.get(machine_type, vcpus * family.gib_per_vcpu[match["cls"]])
    return vcpus, gib


@dataclass(frozen=True)
class Build:
    """What an accelerator-optimized machine is billed as: its family's vCPU and memory SKUs,
    its GPUs' SKU, and the local SSD that comes with it."""

    family: str
    """The SKU family of its vCPUs and memory (`A2`, `A3`, `G2`, `E2`, `C2`)."""
    vcpus: float
    gib: float
    gpu: str
    """The GPU type (`guest_accelerator` type); empty for a machine without GPUs."""
    gpus: int
    local_ssd_gib: int = 0


_MAKEUP: dict[str, tuple[int, int, int]] = {
    "a2-highgpu-1g": (12, 85, 0),
    "a2-highgpu-2g": (24, 170, 0),
    "a2-highgpu-4g": (48, 340, 0),
    "a2-highgpu-8g": (96, 680, 0),
    "a2-megagpu-16g": (96, 1360, 0),
    "a2-ultragpu-1g": (12, 170, 375),
    "a2-ultragpu-2g": (24, 340, 750),
    "a2-ultragpu-4g": (48, 680, 1500),
    "a2-ultragpu-8g": (96, 1360, 3000),
    "a3-highgpu-1g": (26, 234, 750),
    "a3-highgpu-2g": (52, 468, 1500),
    "a3-highgpu-4g": (104, 936, 3000),
    "a3-highgpu-8g": (208, 1872, 6000),
    "a3-megagpu-8g": (208, 1872, 6000),
    "g2-standard-4": (4, 16, 0),
    "g2-standard-8": (8, 32, 0),
    "g2-standard-12": (12, 48, 0),
    "g2-standard-16": (16, 64, 0),
    "g2-standard-24": (24, 96, 0),
    "g2-standard-32": (32, 128, 0),
    "g2-standard-48": (48, 192, 0),
    "g2-standard-96": (96, 384, 0),
}
"""Accelerator-optimized type -> (vCPUs, GiB of memory, GiB of bundled local SSD); its GPUs
are the GPU catalog's."""


def _build(name: str, vcpus: int, gib: int, local_ssd_gib: int) -> Build:
    gpus = gpu_catalog.fixed_gpus(name)
    assert gpus is not None, name
    family = name.split("-", 1)[0].upper()
    return Build(family, vcpus, gib, gpus.gpu_type, gpus.gpu_count, local_ssd_gib)


BUILDS: dict[str, Build] = {name: _build(name, *makeup) for name, makeup in _MAKEUP.items()}
"""Accelerator-optimized types whose make-up is known; A3 Edge, A3 Ultra, A4 and A4X are not
in the source and have no price here."""

WHOLE_MACHINES: dict[str, Build] = {
    "e2-micro": Build("E2", 0.25, 1, "", 0),
    "e2-small": Build("E2", 0.5, 2, "", 0),
    "e2-medium": Build("E2", 1, 4, "", 0),
    **{f"c2-standard-{n}": Build("C2", n, 4 * n, "", 0) for n in (4, 8, 16, 30, 60)},
}
"""Types priced as whole machines although not accelerator-optimized: the shared-core E2 types,
billed a fraction of a vCPU (a quarter, a half, one), and C2, whose single memory ratio leaves
its per-vCPU rate undetermined by machine prices."""
