"""The price catalog: list prices in USD, one row per item, region and capacity type, each with
where it came from and as of when. `catalog.csv` holds the rows; `python -m prices refresh`
rewrites it from the Cloud Billing Catalog API. Nothing here invents a price: where no public
price is known, the row says so (`usd` is `unknown`) and its note says why.

A row's item, region or capacity may be `*`: a statement about every value there (tpu7x has no
public price in any region). `find` prefers the most specific row.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import date
from enum import StrEnum
from pathlib import Path

CATALOG_FILE = Path(__file__).with_name("catalog.csv")
ANY = "*"
AGE_UNKNOWN = "unknown"
"""`as_of` of a row whose source carries no date of its own: the plan counts it as of unknown
age, never as the day it was read."""
HOURS_PER_MONTH = 730
"""A month is 730 hours, as Google's pricing calculator and Infracost reckon it, and as Google
turns monthly prices (disks, Filestore: per GB-month) into hourly ones (Compute Engine disk
pricing; the Billing Catalog's `GiBy.mo` SKUs). Every monthly figure the plan prints uses it."""


class Kind(StrEnum):
    TPU = "tpu"
    """Per chip-hour of a TPU price family (`v5p`, `v2-device`, `v2-pod`, ...)."""
    TPU_HOST = "tpu_host"
    """The host VM of a TPU machine type, where the chip price does not already cover it."""
    GPU = "gpu"
    """Per GPU-hour of a GPU attached to an N1 machine."""
    MACHINE = "machine"
    """A whole machine type per hour: vCPUs, memory, built-in GPUs and bundled local SSD."""
    VCPU = "vcpu"
    """Per vCPU-hour of a machine family, for any predefined shape of it."""
    RAM = "ram"
    """Per GiB-hour of memory of a machine family."""
    DISK = "disk"
    FILESTORE = "filestore"
    LUSTRE = "lustre"
    """Per GiB of a Managed Lustre instance's provisioned capacity, by throughput tier."""
    NAT_GATEWAY = "nat_gateway"
    NAT_DATA = "nat_data"
    NAT_IP = "nat_ip"
    """Per hour of each external IP address a Cloud NAT gateway uses, static or ephemeral."""
    GKE_CLUSTER = "gke_cluster"


class Status(StrEnum):
    PRICED = "priced"
    UNKNOWN = "unknown"
    """No public list price is known; the note says why."""
    INCLUDED = "included"
    """Billed as part of another row (a TPU host in its chip-hour price)."""


@dataclass(frozen=True)
class Source:
    title: str
    url: str


SOURCES: dict[str, Source] = {
    "billing-api": Source(
        "Cloud Billing Catalog API (python -m prices refresh)",
        "https://cloud.google.com/billing/docs/reference/rest/v1/services.skus/list",
    ),
    "cyclenerd": Source(
        "Cyclenerd google-cloud-pricing-cost-calculator pricing.yml, generated from the Cloud "
        "Billing Catalog API on 2026-07-30",
        "https://github.com/Cyclenerd/google-cloud-pricing-cost-calculator/blob/"
        "fd66b26ff84fee5cdd94f341ea89206e76c06b99/pricing.yml",
    ),
    "cyclenerd-derived": Source(
        "Solved exactly from Cyclenerd pricing.yml (2026-07-30): per-vCPU and per-GiB rates "
        "from its predefined shapes, the NAT per-VM rate from its 32-VM gateway cap",
        "https://github.com/Cyclenerd/google-cloud-pricing-cost-calculator/blob/"
        "fd66b26ff84fee5cdd94f341ea89206e76c06b99/pricing.yml",
    ),
    "skypilot": Source(
        "SkyPilot catalog vms.csv at 8427bbf (built from the Cloud Billing Catalog API by "
        "sky/catalog/data_fetchers/fetch_gcp.py), read 2026-11-23; it carries no date of its "
        "own (its Spot VM prices equal Cyclenerd's February 2026 snapshots): age unknown, "
        "refresh",
        "https://github.com/skypilot-org/skypilot-catalog/blob/"
        "8427bbff988abdd050a9f51addd314ef31cb4e85/catalogs/v8/gcp/vms.csv",
    ),
    "skypilot-v9": Source(
        "SkyPilot catalog v9 vms.csv at 2c3d7ea (built from the Cloud Billing Catalog API by "
        "fetch_gcp.py), read 2026-11-28; it carries no date of its own (its Spot VM prices "
        "equal Cyclenerd's July 2026 snapshots): age unknown, refresh",
        "https://github.com/skypilot-org/skypilot-catalog/blob/"
        "2c3d7ea7d76bf84cf80d382e946c1609571485fd/catalogs/v9/gcp/vms.csv",
    ),
    "nat-pricing": Source(
        "Cloud NAT pricing, read 2026-11-28 (the page carries no date)",
        "https://cloud.google.com/nat/pricing",
    ),
    "foldrun": Source(
        'A public file headed "FoldRun cost estimation engine" (Google LLC, 2026), unit '
        "prices verified against the Cloud Billing Catalog API on 2026-04-15; its repository "
        "was not identified",
        "",
    ),
    "gke-pricing": Source(
        "GKE pricing: cluster management fee",
        "https://cloud.google.com/kubernetes-engine/pricing",
    ),
    "filestore-pricing": Source("Filestore pricing", "https://cloud.google.com/filestore/pricing"),
    "lustre-pricing": Source(
        "Managed Lustre pricing", "https://cloud.google.com/managed-lustre/pricing"
    ),
    "tpu7x-docs": Source("Cloud TPU: TPU7x (Ironwood)", "https://cloud.google.com/tpu/docs/tpu7x"),
    "tpu-consumption": Source(
        "Cloud TPU consumption options", "https://cloud.google.com/tpu/docs/consumption-options"
    ),
    "flex-start-docs": Source(
        "Flex-start VMs and Cloud TPU flex-start",
        "https://cloud.google.com/compute/docs/instances/about-flex-start-vms",
    ),
    "hyperdisk-docs": Source(
        "Hyperdisk Balanced",
        "https://cloud.google.com/compute/docs/disks/hd-types/hyperdisk-balanced",
    ),
    "tpu-host-practice": Source(
        "SkyPilot prices v5e/v5p/v6e TPU VMs as accelerator rows with no instance type "
        "(fetch_gcp.py); no Google page says the host is billed apart",
        "https://github.com/skypilot-org/skypilot/blob/"
        "21fd5541/sky/catalog/data_fetchers/fetch_gcp.py",
    ),
}


@dataclass(frozen=True)
class PriceRow:
    """One price: `usd` per `unit`, or a statement that there is none (`status`)."""

    kind: Kind
    item: str
    region: str
    capacity: str
    status: Status
    usd: float | None
    unit: str
    source: str
    """A key of `SOURCES`."""
    as_of: str
    """The date of the price at its source (YYYY-MM-DD): the date the source itself carries
    (generated, verified, effective), or `unknown` where it carries none (age unknown; the
    source's title says when it was read)."""
    note: str = ""

    @property
    def dated(self) -> date | None:
        """The price's own date; None where its source carries none."""
        return None if self.as_of == AGE_UNKNOWN else date.fromisoformat(self.as_of)

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.kind.value, self.item, self.region, self.capacity)

    @property
    def cited(self) -> str:
        """Where the price comes from, as the plan prints it."""
        return f"{SOURCES[self.source].title}, as of {self.as_of}"


FIELDS = ("kind", "item", "region", "capacity", "usd", "unit", "source", "as_of", "note")


class CatalogError(ValueError):
    """A catalog file that does not read as one: the message names the line."""


def _row(line: int, raw: dict[str, str]) -> PriceRow:
    try:
        kind = Kind(raw["kind"])
    except ValueError:
        raise CatalogError(f"catalog.csv line {line}: unknown kind {raw['kind']!r}") from None
    text = raw["usd"]
    if text in (Status.UNKNOWN, Status.INCLUDED):
        status, usd = Status(text), None
    else:
        try:
            usd = float(text)
        except ValueError:
            raise CatalogError(
                f"catalog.csv line {line}: usd {text!r} is neither a number, unknown nor included"
            ) from None
        if not usd >= 0:
            raise CatalogError(f"catalog.csv line {line}: usd {text!r} is not a price of 0 or more")
        status = Status.PRICED
    if raw["source"] not in SOURCES:
        raise CatalogError(f"catalog.csv line {line}: unknown source {raw['source']!r}")
    if status is Status.UNKNOWN and not raw["note"]:
        raise CatalogError(f"catalog.csv line {line}: an unknown price needs a note saying why")
    try:
        if raw["as_of"] != AGE_UNKNOWN:
            date.fromisoformat(raw["as_of"])
    except ValueError:
        raise CatalogError(
            f"catalog.csv line {line}: as_of {raw['as_of']!r} is not a date (YYYY-MM-DD) nor "
            f"{AGE_UNKNOWN!r}: every price says how old it is, or that its source does not say"
        ) from None
    return PriceRow(
        kind=kind,
        item=raw["item"],
        region=raw["region"],
        capacity=raw["capacity"],
        status=status,
        usd=usd,
        unit=raw["unit"],
        source=raw["source"],
        as_of=raw["as_of"],
        note=raw["note"],
    )


class Catalog:
    """Price rows by (kind, item, region, capacity); one row per key."""

    def __init__(self, rows: Iterable[PriceRow]):
        self._rows: dict[tuple[str, str, str, str], PriceRow] = {}
        for row in rows:
            if row.key in self._rows:
                raise CatalogError(f"two catalog rows for {'/'.join(row.key)}")
            self._rows[row.key] = row

    def __iter__(self) -> Iterator[PriceRow]:
        return iter(self._rows.values())

    def __len__(self) -> int:
        return len(self._rows)

    def get(self, key: tuple[str, str, str, str]) -> PriceRow | None:
        return self._rows.get(key)

    def items(self, kind: Kind) -> set[str]:
        """The items the catalog has rows of, of one kind (`*` apart)."""
        return {r.item for r in self if r.kind is kind and r.item != ANY}

    def find(self, kind: Kind, item: str, region: str, capacity: str) -> PriceRow | None:
        """The most specific row for the key: an exact one, else one with `*` for the
        capacity, the region, or both (the item matters most), else one for any item."""
        for i in (item, ANY):
            for r in (region, ANY):
                for c in (capacity, ANY):
                    row = self._rows.get((kind.value, i, r, c))
                    if row is not None:
                        return row
        return None

    def to_csv(self) -> str:
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(FIELDS)
        for row in sorted(self, key=lambda r: r.key):
            usd = row.status.value if row.usd is None else f"{row.usd:.10g}"
            writer.writerow(
                (
                    row.kind.value,
                    row.item,
                    row.region,
                    row.capacity,
                    usd,
                    row.unit,
                    row.source,
                    row.as_of,
                    row.note,
                )
            )
        return out.getvalue()

    @classmethod
    def from_csv(cls, text: str) -> Catalog:
        reader = csv.DictReader(io.StringIO(text))
        if tuple(reader.fieldnames or ()) != FIELDS:
            raise CatalogError(f"catalog.csv must have the columns {', '.join(FIELDS)}")
        return cls(_row(n, raw) for n, raw in enumerate(reader, start=2))


def load(path: Path = CATALOG_FILE) -> Catalog:
    return Catalog.from_csv(path.read_text())
