"""What the catalog must answer: every key (kind, item, region, capacity) the program can ask a
price for, in the regions where its TPUs can be. A test holds the catalog to it, so a TPU shape,
GPU or machine type the program accepts never goes unpriced without a row saying why, and
`prices refresh` asks the Billing Catalog for each.
"""

from __future__ import annotations

from collections.abc import Iterator

from catalog import gpu as gpu_catalog
from catalog import machines
from catalog import storage as storage_catalog
from catalog import tpu as tpu_catalog
from components.locations import region_of
from prices.catalog import Kind

Key = tuple[Kind, str, str, str]

ON_DEMAND = "on-demand"
SPOT = "spot"
FLEX_START = "flex-start"
RESERVATION = "reservation"
ANY_CAPACITY = "any"
"""For what has no capacity types (disks, Filestore, NAT, the GKE fee)."""

DISK_TYPES = ("pd-standard", "pd-balanced", "pd-ssd", "hyperdisk-balanced")
"""Every disk type a config can name (boot disks, the Slurm state disk)."""
FILESTORE_TIERS = tuple(storage_catalog.FILESTORE_TIERS)
"""Every Filestore tier the storage catalog knows (`catalog/storage.py`)."""
LUSTRE_TIERS = tuple(str(t) for t in storage_catalog.LUSTRE_TIERS)
"""Managed Lustre's throughput tiers, MBps per TiB, as the instance's input spells them."""
GKE_FEE = "management-fee"
NAT = "cloud-nat"


def family_regions(family: tpu_catalog.TpuFamily) -> list[str]:
    return sorted({region_of(zone) for zone in family.zones})


REGIONS: tuple[str, ...] = tuple(
    sorted({r for family in tpu_catalog.FAMILIES for r in family_regions(family)})
)
"""Every region a TPU of the catalog can be in, which includes the shipped stacks' regions."""


def tpu_price_items(family: tpu_catalog.TpuFamily) -> tuple[str, ...]:
    """v2 and v3 are billed per 8-core device for v2-8/v3-8 and at Pod rates above that
    (Cloud TPU pricing); the others per chip."""
    if family.prefix in ("v2", "v3"):
        return (f"{family.prefix}-device", f"{family.prefix}-pod")
    return (family.prefix,)


def tpu_price_item(family: tpu_catalog.TpuFamily, slice_chips: int) -> str:
    """The price family of a slice: `v3-device` for v3-8 (4 chips), `v3-pod` for larger v3,
    else the prefix."""
    if family.prefix in ("v2", "v3"):
        return f"{family.prefix}-{'device' if slice_chips <= 4 else 'pod'}"
    return family.prefix


def tpu_capacities(family: tpu_catalog.TpuFamily) -> tuple[str, ...]:
    """Capacity types the program can request for the family: flex-start only on GKE, where
    GKE offers it for the family."""
    found = (ON_DEMAND, SPOT, RESERVATION)
    return (*found, FLEX_START) if family.gke and family.flex_start else found


ACCELERATOR_CAPACITIES = (ON_DEMAND, SPOT, RESERVATION, FLEX_START)
"""GKE GPU pools take all four; GPU clusters on-demand and Spot."""
CPU_CAPACITIES = (ON_DEMAND, SPOT)
"""CPU pools, Slurm controller and login VMs."""


def wanted() -> Iterator[Key]:
    for family in tpu_catalog.FAMILIES:
        for region in family_regions(family):
            for capacity in tpu_capacities(family):
                for item in tpu_price_items(family):
                    yield (Kind.TPU, item, region, capacity)
    for host, tpu in tpu_catalog.TPU_HOSTS.items():
        for region in family_regions(tpu.family):
            for capacity in tpu_capacities(tpu.family):
                yield (Kind.TPU_HOST, host, region, capacity)
    for region in REGIONS:
        for machine in gpu_catalog.FIXED_GPU_MACHINES:
            for capacity in ACCELERATOR_CAPACITIES:
                yield (Kind.MACHINE, machine, region, capacity)
        for gpu in gpu_catalog.N1_GPU_COUNTS:
            for capacity in ACCELERATOR_CAPACITIES:
                yield (Kind.GPU, gpu, region, capacity)
        for machine in machines.WHOLE_MACHINES:
            for capacity in CPU_CAPACITIES:
                yield (Kind.MACHINE, machine, region, capacity)
        for family in machines.FAMILIES:
            for capacity in (*CPU_CAPACITIES, RESERVATION, FLEX_START):
                yield (Kind.VCPU, family, region, capacity)
                yield (Kind.RAM, family, region, capacity)
        for disk in DISK_TYPES:
            yield (Kind.DISK, disk, region, ANY_CAPACITY)
        for tier in FILESTORE_TIERS:
            yield (Kind.FILESTORE, tier, region, ANY_CAPACITY)
        for tier in LUSTRE_TIERS:
            yield (Kind.LUSTRE, tier, region, ANY_CAPACITY)
        yield (Kind.NAT_GATEWAY, NAT, region, ANY_CAPACITY)
        yield (Kind.NAT_DATA, NAT, region, ANY_CAPACITY)
        yield (Kind.NAT_IP, NAT, region, ANY_CAPACITY)
        yield (Kind.GKE_CLUSTER, GKE_FEE, region, ANY_CAPACITY)
