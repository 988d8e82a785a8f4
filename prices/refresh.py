"""`python -m prices refresh`: rewrite the catalog's prices from the Cloud Billing Catalog API,
through the official `google-cloud-billing` client.

Every key the program can ask for (`coverage.wanted`) that has a recipe here is looked up in
the SKUs of its service, by description, usage type, unit and region: a whole machine is the
sum of its vCPU, memory, GPU and bundled local SSD SKUs. What matches no SKU keeps its row, and
is reported. Nothing is written when a key matches SKUs of different prices, a unit is not the
one expected, or a Spot price is not below its on-demand price: a wrong match must not pass
for a price. SKU descriptions name a place ("running in Americas"); regions come from
`service_regions` (research notes for issue 21; Cyclenerd build/mapping.csv and SkyPilot
fetch_gcp.py for the description patterns, which exclude commitment, reservation, custom, sole
tenancy, premium and Dynamic Workload Scheduler SKUs).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Protocol

from google.api_core import retry as retries
from google.cloud import billing_v1

from catalog import gpu as gpu_catalog
from catalog import machines
from catalog.price_labels import (
    COMPUTE,
    DISK_LABELS,
    FAMILY_LABELS,
    FILESTORE,
    FILESTORE_WORDS,
    GKE,
    GPU_LABELS,
    NETWORKING,
    SERVICES,
    TPU_LABELS,
)
from prices.catalog import HOURS_PER_MONTH, Catalog, Kind, PriceRow, Status
from prices.coverage import (
    ANY_CAPACITY,
    GKE_FEE,
    NAT,
    ON_DEMAND,
    SPOT,
    Key,
    wanted,
)

RETRY = retries.Retry(
    predicate=retries.if_transient_error, initial=1.0, maximum=30.0, timeout=300.0
)
"""Transient errors (429, 500, 503, connection resets) retry with back-off, per page."""


DENY = re.compile(
    r"commit|reserved|custom|sole tenan|premium|dws|dynamic workload|flex|calendar|"
    r"workstation|extended memory",
    re.IGNORECASE,
)
"""Lookalike SKUs that are not the list price of the plain resource."""


class CatalogClient(Protocol):
    """What `refresh` needs of `billing_v1.CloudCatalogClient`; pagers are iterables."""

    def list_services(
        self, request: billing_v1.ListServicesRequest, *, retry: Any
    ) -> Iterable[billing_v1.Service]: ...

    def list_skus(
        self, request: billing_v1.ListSkusRequest, *, retry: Any
    ) -> Iterable[billing_v1.Sku]: ...


class RefreshError(Exception):
    """Why the catalog cannot be refreshed; nothing was written."""


@dataclass(frozen=True)
class Offer:
    """One SKU's current list price in USD."""

    sku_id: str
    description: str
    usage_type: str
    regions: tuple[str, ...]
    unit: str
    usd: float
    effective: date


def _date(when: Any) -> date:
    """proto-plus hands a Timestamp out as a datetime; an unset one means the current price."""
    return when.date() if isinstance(when, datetime) else date.today()


def _money(money: Any) -> float:
    return money.units + money.nanos / 1e9


def offer(sku: billing_v1.Sku) -> Offer | None:
    """The SKU's latest price per usage unit: its single tier, or the first tier that is not
    free (a free first tier is an allowance, not the rate). None for a SKU with no price."""
    if not sku.pricing_info:
        return None
    info = sku.pricing_info[-1]
    expression = info.pricing_expression
    tiers = [t for t in expression.tiered_rates if _money(t.unit_price) > 0]
    if not tiers:
        return None
    currency = tiers[0].unit_price.currency_code
    if currency != "USD":
        raise RefreshError(f"SKU {sku.sku_id} is priced in {currency}; ask for USD")
    return Offer(
        sku_id=sku.sku_id,
        description=sku.description,
        usage_type=sku.category.usage_type,
        regions=tuple(sku.service_regions),
        unit=expression.usage_unit,
        usd=_money(tiers[0].unit_price),
        effective=_date(info.effective_time),
    )


@dataclass(frozen=True)
class Matcher:
    """Which SKUs price one thing: those of `service` whose description matches `pattern` and
    not `exclude` or `DENY`, with one of `usage_types`, in the region (or global)."""

    service: str
    pattern: str
    units: dict[str, str]
    """The SKU usage units accepted -> the catalog's unit for each."""
    usage_types: tuple[str, ...] = ("OnDemand",)
    exclude: str | None = None
    per: float = 1.0
    """Divide the SKU price by this: a v2-8 device is four chips."""


@dataclass(frozen=True)
class Found:
    usd: float
    unit: str
    skus: tuple[str, ...]
    effective: date


def _spot(name: str) -> str:
    return f"^Spot Preemptible {name}"


def _core_ram(label: str, capacity: str) -> tuple[Matcher, Matcher]:
    prefix = f"^{label}" if capacity == ON_DEMAND else _spot(label)
    usage = ("OnDemand",) if capacity == ON_DEMAND else ("Preemptible",)
    return (
        Matcher(COMPUTE, f"{prefix} Core running in", {"h": "vCPU-hour"}, usage),
        Matcher(COMPUTE, f"{prefix} Ram running in", {"GiBy.h": "GiB-hour"}, usage),
    )


NOT_REFRESHED: dict[str, str] = {
    "v2-pod": "Cloud TPU's v2 Pod SKUs bill a unit this program has not confirmed",
    "v3-pod": "Cloud TPU's v3 Pod SKUs bill a unit this program has not confirmed",
}
"""TPU price families with priced rows that `refresh` has no recipe for, and why; every other
priced row it can rewrite (tests/prices/test_catalog.py)."""
_MONTH = {"GiBy.mo": "GB-month"}


def _gpu(gpu: str, capacity: str) -> Matcher:
    label = GPU_LABELS[gpu]
    if capacity == ON_DEMAND:
        return Matcher(COMPUTE, f"^{label} running in", {"h": "GPU-hour"})
    return Matcher(COMPUTE, f"^{label} attached to Spot", {"h": "GPU-hour"}, ("Preemptible",))


def _local_ssd(capacity: str) -> Matcher:
    if capacity == ON_DEMAND:
        return Matcher(COMPUTE, "^SSD backed Local Storage running in", _MONTH)
    return Matcher(COMPUTE, "^SSD backed Local Storage attached to Spot", _MONTH, ("Preemptible",))


Recipe = tuple[tuple[Matcher, float], ...]
"""Matchers with the quantity of each: a machine is vCPUs x core + GiB x RAM + ..."""


def recipe(key: Key) -> Recipe | None:
    """How a catalog key is priced from SKUs, or None where this module has no way."""
    kind, item, _, capacity = key
    if capacity not in (ON_DEMAND, SPOT, ANY_CAPACITY):
        return None
    if kind in (Kind.VCPU, Kind.RAM) and item in FAMILY_LABELS:
        core, ram = _core_ram(FAMILY_LABELS[item], capacity)
        return ((core if kind is Kind.VCPU else ram, 1.0),)
    if kind is Kind.MACHINE:
        build = machines.BUILDS.get(item) or machines.WHOLE_MACHINES.get(item)
        if build is None:
            return None
        core, ram = _core_ram(FAMILY_LABELS[build.family], capacity)
        parts: list[tuple[Matcher, float]] = [(core, build.vcpus), (ram, build.gib)]
        if build.gpus:
            parts.append((_gpu(build.gpu, capacity), build.gpus))
        if build.local_ssd_gib:
            parts.append((_local_ssd(capacity), build.local_ssd_gib / HOURS_PER_MONTH))
        return tuple(parts)
    if kind is Kind.GPU and item in gpu_catalog.N1_GPU_COUNTS and item in GPU_LABELS:
        return ((_gpu(item, capacity), 1.0),)
    if kind is Kind.TPU and item in TPU_LABELS:
        service, token, per = TPU_LABELS[item]
        # Spot TPU SKUs carry usage type OnDemand and "Preemptible" in the description.
        usage = ("OnDemand", "Preemptible")
        if capacity == ON_DEMAND:
            matcher = Matcher(service, token, {"h": "chip-hour"}, usage, "Preemptible", per)
        else:
            matcher = Matcher(
                service,
                f"{token}.*Preemptible|Preemptible.*{token}",
                {"h": "chip-hour"},
                usage,
                None,
                per,
            )
        return ((matcher, 1.0),)
    if kind is Kind.DISK and item in DISK_LABELS:
        # Regional (replicated) disks bill apart; the program makes zonal ones.
        return ((Matcher(COMPUTE, DISK_LABELS[item], _MONTH, exclude="(?i)regional"), 1.0),)
    if kind is Kind.FILESTORE and item in FILESTORE_WORDS:
        words = "".join(f"(?=.*\\b{w}\\b)" for w in (*FILESTORE_WORDS[item], "capacity"))
        units = {"GiBy.mo": "GiB-month", "GiBy.h": "GiB-hour"}
        return ((Matcher(FILESTORE, f"(?i)^{words}", units), 1.0),)
    if kind is Kind.NAT_GATEWAY and item == NAT:
        return (
            (Matcher(NETWORKING, "^Networking Cloud Nat Gateway Uptime", {"h": "VM-hour"}), 1.0),
        )
    if kind is Kind.NAT_IP and item == NAT:
        # One global SKU (8515-9425-D2CE) at one price for every region (nat/pricing).
        return ((Matcher(NETWORKING, "^Networking Cloud NAT IP Usage", {"h": "IP-hour"}), 1.0),)
    if kind is Kind.NAT_DATA and item == NAT:
        return (
            (Matcher(NETWORKING, "^Networking Cloud Nat Data Processing", {"GiBy": "GiB"}), 1.0),
        )
    if kind is Kind.GKE_CLUSTER and item == GKE_FEE:
        matcher = Matcher(GKE, "^(Regional|Zonal) Kubernetes Clusters", {"h": "cluster-hour"})
        return ((matcher, 1.0),)
    return None


@dataclass
class Result:
    catalog: Catalog
    updated: list[tuple[PriceRow | None, PriceRow]] = field(default_factory=list)
    kept: list[Key] = field(default_factory=list)
    """Keys with a recipe that matched no SKU: their rows stay as they were."""


def _match(
    matcher: Matcher, region: str, offers: Sequence[Offer], problems: list[str], what: str
) -> Found | None:
    pattern = re.compile(matcher.pattern)
    exclude = re.compile(matcher.exclude) if matcher.exclude else None
    found = [
        o
        for o in offers
        if pattern.search(o.description)
        and not DENY.search(o.description)
        and not (exclude and exclude.search(o.description))
        and o.usage_type in matcher.usage_types
        and (region in o.regions or "global" in o.regions)
    ]
    if not found:
        return None
    units = {o.unit for o in found}
    if not units <= set(matcher.units):
        skus = ", ".join(o.sku_id for o in found)
        problems.append(
            f"{what}: SKUs {skus} bill per {', '.join(sorted(units))}, expected "
            f"{', '.join(matcher.units)}"
        )
        return None
    prices = {round(o.usd, 9) for o in found}
    if len(prices) > 1 or len(units) > 1:
        listed = "; ".join(f"{o.sku_id} {o.description!r} ${o.usd:g}/{o.unit}" for o in found)
        problems.append(f"{what}: SKUs of different prices match: {listed}")
        return None
    return Found(
        usd=found[0].usd / matcher.per,
        unit=matcher.units[found[0].unit],
        skus=tuple(sorted(o.sku_id for o in found)),
        effective=max(o.effective for o in found),
    )


def _price(
    key: Key, parts: Recipe, offers: dict[str, list[Offer]], problems: list[str]
) -> PriceRow | None:
    kind, item, region, capacity = key
    what = f"{kind.value} {item} in {region} ({capacity})"
    usd = 0.0
    skus: list[str] = []
    effective: list[date] = []
    unit = ""
    for matcher, quantity in parts:
        found = _match(matcher, region, offers.get(matcher.service, []), problems, what)
        if found is None:
            return None
        usd += found.usd * quantity
        skus += found.skus
        effective.append(found.effective)
        unit = found.unit if len(parts) == 1 else "hour"
    return PriceRow(
        kind=kind,
        item=item,
        region=region,
        capacity=capacity,
        status=Status.PRICED,
        usd=round(usd, 9),
        unit=unit,
        source="billing-api",
        as_of=max(effective).isoformat(),
        note=f"SKU {', '.join(dict.fromkeys(skus))}",
    )


def _services(client: CatalogClient) -> dict[str, billing_v1.Service]:
    listed = {
        s.service_id: s for s in client.list_services(billing_v1.ListServicesRequest(), retry=RETRY)
    }
    found = {}
    for service_id, word in SERVICES.items():
        service = listed.get(service_id)
        if service is None:
            raise RefreshError(
                f"the Billing Catalog lists no service {service_id} ({word}); its id may have "
                "changed: find it with list_services and update prices/refresh.py"
            )
        if word not in service.display_name.lower():
            raise RefreshError(
                f"service {service_id} is {service.display_name!r}, not the {word} service "
                "prices/refresh.py expects"
            )
        found[service_id] = service
    return found


def spot_problems(rows: Sequence[PriceRow]) -> list[str]:
    """A Spot price at or above its on-demand price is a wrong match (SkyPilot's A100 80GB
    "on-demand" figure is a Dynamic Workload Scheduler SKU, below its Spot price)."""
    on_demand = {
        (r.kind, r.item, r.region): r for r in rows if r.capacity == ON_DEMAND and r.usd is not None
    }
    found = []
    for row in rows:
        base = on_demand.get((row.kind, row.item, row.region))
        if row.capacity != SPOT or row.usd is None or base is None or base.usd is None:
            continue
        if row.usd >= base.usd:
            found.append(
                f"{row.kind.value} {row.item} in {row.region}: Spot ${row.usd:g} "
                f"({row.source} {row.note}) is not below on-demand ${base.usd:g} "
                f"({base.source} {base.note})"
            )
    return found


def refresh(client: CatalogClient, catalog: Catalog) -> Result:
    """The catalog with every price the Billing Catalog gives; raises `RefreshError` listing
    every match that cannot be trusted, and then nothing is to be written."""
    services = _services(client)
    offers: dict[str, list[Offer]] = {}
    for service_id, service in services.items():
        request = billing_v1.ListSkusRequest(parent=service.name, currency_code="USD")
        offers[service_id] = [
            o for sku in client.list_skus(request, retry=RETRY) if (o := offer(sku)) is not None
        ]
    problems: list[str] = []
    rows = {row.key: row for row in catalog}
    result = Result(catalog)
    for key in wanted():
        parts = recipe(key)
        if parts is None:
            continue
        row = _price(key, parts, offers, problems)
        if row is None:
            result.kept.append(key)
            continue
        old = rows.get(row.key)
        if old is None or (old.usd, old.unit) != (row.usd, row.unit) or old.source != row.source:
            result.updated.append((old, row))
        rows[row.key] = row
    problems += spot_problems(list(rows.values()))
    if problems:
        raise RefreshError("\n".join(problems))
    result.catalog = Catalog(rows.values())
    return result


def describe(result: Result) -> list[str]:
    """What a refresh changed and what it left as it was."""
    lines = [f"{len(result.updated)} prices updated, {len(result.kept)} kept (no SKU matched)"]
    for old, new in result.updated:
        was = "new" if old is None or old.usd is None else f"${old.usd:.10g} ({old.source})"
        lines.append(f"  {'/'.join(new.key)}: {was} -> ${new.usd:.10g}/{new.unit}")
    kept: dict[str, int] = {}
    for kind, item, _, _ in result.kept:
        kept[f"{kind.value} {item}"] = kept.get(f"{kind.value} {item}", 0) + 1
    if kept:
        lines.append("  kept as they were (no SKU matched):")
        lines += [f"    {what} ({count} regions and capacities)" for what, count in kept.items()]
    return lines
