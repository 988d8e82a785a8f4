"""Unit prices per hour for what the program creates, read from the catalog: a TPU chip, a
machine (whole, or as vCPUs and memory of its family), an N1 GPU, a GB of disk, a GiB of
Filestore, a VM behind Cloud NAT, a GKE cluster. Each quote carries the rows it rests on; one
the catalog cannot price says why, and is never zero.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from catalog import gpu as gpu_catalog
from catalog import machines
from prices.catalog import HOURS_PER_MONTH, Catalog, Kind, PriceRow, Status
from prices.coverage import ANY_CAPACITY, GKE_FEE, NAT, ON_DEMAND, RESERVATION

_PER_HOUR = {
    "hour": 1.0,
    "chip-hour": 1.0,
    "GPU-hour": 1.0,
    "vCPU-hour": 1.0,
    "GiB-hour": 1.0,
    "VM-hour": 1.0,
    "IP-hour": 1.0,
    "cluster-hour": 1.0,
    "GB-month": 1 / HOURS_PER_MONTH,
    "GiB-month": 1 / HOURS_PER_MONTH,
}
"""A row's unit -> the factor that turns its price into one per hour."""


@dataclass(frozen=True)
class Quote:
    """What one unit (a chip, a VM, a GB) costs per hour, or why that is not known."""

    what: str
    """`v5p chip`, `n2-standard-8`, `pd-balanced GB`."""
    usd_per_hour: float | None
    rows: tuple[PriceRow, ...]
    reason: str = ""
    """Why the price is unknown; empty when it is known."""
    shown: str = ""
    """The price as the catalog states it, e.g. `$4.20/chip-hour`."""
    notes: tuple[str, ...] = ()
    """Caveats of the rows behind a known price (a Spot figure that may be flex-start's, a
    reservation shown at its on-demand list price)."""

    @property
    def known(self) -> bool:
        return self.usd_per_hour is not None


def money(usd: float) -> str:
    """`$1,234.56`; amounts under a dollar keep four significant digits (`$0.0014`, `$0.10`)."""
    sign = "-" if usd < 0 else ""
    usd = abs(usd)
    if usd == 0 or usd >= 1:
        return f"{sign}${usd:,.2f}"
    digits = f"{usd:.4f}" if usd >= 0.001 else f"{usd:.8f}"
    whole, _, cents = digits.partition(".")
    return f"{sign}${whole}.{cents.rstrip('0').ljust(2, '0')}"


def unit_price(usd: float, unit: str) -> str:
    """A catalog price as the catalog states it, every digit: `$0.02456747/vCPU-hour`."""
    return f"${usd:.10g}/{unit}"


def _from_row(what: str, row: PriceRow | None, key: str) -> Quote:
    if row is None:
        return Quote(what, None, (), f"the price catalog has no row for {key}")
    if row.status is Status.UNKNOWN:
        return Quote(what, None, (row,), f"{row.note} ({row.cited})")
    notes = (row.note,) if row.note else ()
    if row.status is Status.INCLUDED:
        return Quote(what, 0.0, (row,), shown="included", notes=notes)
    assert row.usd is not None
    per_hour = row.usd * _PER_HOUR[row.unit]
    return Quote(what, per_hour, (row,), shown=unit_price(row.usd, row.unit), notes=notes)


def _lookup(
    catalog: Catalog, kind: Kind, item: str, region: str, capacity: str, what: str
) -> Quote:
    """A row-backed quote. A reservation is billed at its commitment's price, which is set by
    contract: the reservation row says so, and the quote is the on-demand list price."""
    key = f"{kind.value} {item} in {region} ({capacity})"
    if capacity != RESERVATION:
        return _from_row(what, catalog.find(kind, item, region, capacity), key)
    committed = catalog.find(kind, item, region, RESERVATION)
    if committed is not None and committed.status is not Status.UNKNOWN:
        return _from_row(what, committed, key)
    listed = _from_row(what, catalog.find(kind, item, region, ON_DEMAND), key)
    if committed is None:
        return listed
    return replace(listed, rows=(*listed.rows, committed), notes=(*listed.notes, committed.note))


def tpu_chip(catalog: Catalog, item: str, region: str, capacity: str) -> Quote:
    return _lookup(catalog, Kind.TPU, item, region, capacity, f"{item} chip")


def tpu_host(catalog: Catalog, machine_type: str, region: str, capacity: str) -> Quote:
    return _lookup(catalog, Kind.TPU_HOST, machine_type, region, capacity, machine_type)


def machine(catalog: Catalog, machine_type: str, region: str, capacity: str) -> Quote:
    """A machine type per hour: its whole-machine rows where the catalog has them; else its
    family's vCPU and memory rates times its shape; else unknown. Custom types are not priced:
    they bill at custom rates this catalog does not hold."""
    if machine_type in catalog.items(Kind.MACHINE):
        return _lookup(catalog, Kind.MACHINE, machine_type, region, capacity, machine_type)
    shape = machines.shape(machine_type)
    if shape is None:
        return Quote(
            machine_type,
            None,
            (),
            f"'{machine_type}' is neither a whole machine in the price catalog nor a predefined "
            f"type of a family it prices per vCPU ({', '.join(machines.FAMILIES)})",
        )
    vcpus, gib = shape
    family = machine_type.split("-", 1)[0]
    cpu = _lookup(catalog, Kind.VCPU, family, region, capacity, f"{family} vCPU")
    ram = _lookup(catalog, Kind.RAM, family, region, capacity, f"{family} memory GiB")
    rows = (*cpu.rows, *ram.rows)
    if cpu.usd_per_hour is None or ram.usd_per_hour is None:
        return Quote(machine_type, None, rows, cpu.reason or ram.reason)
    return Quote(
        machine_type,
        vcpus * cpu.usd_per_hour + gib * ram.usd_per_hour,
        rows,
        shown=f"({vcpus} vCPU x {cpu.shown} + {gib:g} GiB x {ram.shown})",
        notes=tuple(dict.fromkeys((*cpu.notes, *ram.notes))),
    )


def attached_gpu(catalog: Catalog, gpu_type: str, region: str, capacity: str) -> Quote:
    return _lookup(catalog, Kind.GPU, gpu_type, region, capacity, gpu_type)


def gpus_billed_apart(machine_type: str) -> bool:
    """Whether a machine's GPUs are billed on top of it: N1 attaches them; an
    accelerator-optimized machine's price already holds its GPUs."""
    return gpu_catalog.fixed_gpus(machine_type) is None


def disk(catalog: Catalog, disk_type: str, region: str) -> Quote:
    return _lookup(catalog, Kind.DISK, disk_type, region, ANY_CAPACITY, f"{disk_type} GB")


def filestore(catalog: Catalog, tier: str, region: str) -> Quote:
    return _lookup(catalog, Kind.FILESTORE, tier, region, ANY_CAPACITY, f"Filestore {tier} GiB")


def lustre(catalog: Catalog, throughput: str, region: str) -> Quote:
    return _lookup(
        catalog, Kind.LUSTRE, throughput, region, ANY_CAPACITY, f"Lustre {throughput} MBps/TiB GiB"
    )


def nat_vm(catalog: Catalog, region: str) -> Quote:
    return _lookup(catalog, Kind.NAT_GATEWAY, NAT, region, ANY_CAPACITY, "VM behind Cloud NAT")


def nat_ip(catalog: Catalog, region: str) -> Quote:
    return _lookup(catalog, Kind.NAT_IP, NAT, region, ANY_CAPACITY, "Cloud NAT IP address")


def gke_cluster(catalog: Catalog, region: str) -> Quote:
    return _lookup(catalog, Kind.GKE_CLUSTER, GKE_FEE, region, ANY_CAPACITY, "GKE cluster")
