"""The price catalog: every price the program can ask for has a row (a price, or a sourced
statement that there is none), every row says where it came from and when, and Spot is below
on-demand wherever a family has both."""

from __future__ import annotations

import re

import pytest

from catalog import gpu as gpu_catalog
from catalog import machines
from catalog import tpu as tpu_catalog
from components.gke.config import CpuPoolConfig
from components.gpu_clusters.config import GpuClusterConfig
from components.slurm.config import ControllerConfig, CpuNodesetConfig, LoginGroupConfig
from graph.engine import list_stacks, load_stack_config
from prices import quotes
from prices.catalog import (
    AGE_UNKNOWN,
    ANY,
    CATALOG_FILE,
    SOURCES,
    Catalog,
    CatalogError,
    Kind,
    PriceRow,
    Status,
    load,
)
from prices.coverage import (
    ACCELERATOR_CAPACITIES,
    CPU_CAPACITIES,
    DISK_TYPES,
    FILESTORE_TIERS,
    ON_DEMAND,
    REGIONS,
    SPOT,
    family_regions,
    tpu_capacities,
    tpu_price_items,
    wanted,
)
from prices.refresh import NOT_REFRESHED, recipe, spot_problems

CATALOG = load()
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def test_the_catalog_file_is_in_its_canonical_form():
    # `prices refresh` writes it with to_csv; a hand edit that reorders or reformats shows.
    assert CATALOG.to_csv() == CATALOG_FILE.read_text()


def test_every_row_names_a_source_and_a_date_and_every_unknown_says_why():
    for row in CATALOG:
        assert row.source in SOURCES, row
        # A source with no date of its own says so: its age is unknown, not the day it was read.
        assert _DATE.fullmatch(row.as_of) or row.as_of == AGE_UNKNOWN, row
        if row.status is Status.UNKNOWN:
            assert row.usd is None and row.note, row
        if row.status is Status.PRICED:
            assert row.usd is not None and row.usd > 0, row


def test_every_priced_row_the_program_asks_for_is_one_refresh_can_rewrite():
    """A price that cannot be refreshed ages for ever: every key the program can ask for that
    a priced row answers has a recipe, but the families `NOT_REFRESHED` names with why."""
    stuck = set()
    for key in wanted():
        row = CATALOG.find(*key)
        if row is None or row.status is not Status.PRICED or recipe(key) is not None:
            continue
        assert key[1] in NOT_REFRESHED, f"{key} is priced ({row.source}) but not refreshable"
        stuck.add(key[1])
    assert stuck == set(NOT_REFRESHED), "a family NOT_REFRESHED names is refreshable now"


def test_every_key_the_program_can_ask_for_has_a_row():
    """No silent gaps: each TPU family, region and capacity, each host, GPU, machine, disk,
    Filestore tier, NAT and cluster fee resolves to a row, if only one saying "unknown"."""
    keys = list(wanted())
    assert len(keys) > 1000
    missing = [k for k in keys if CATALOG.find(*k) is None]
    assert missing == []


def test_coverage_asks_for_every_tpu_shape_gpu_and_machine_the_program_accepts():
    keys = set(wanted())
    for family in tpu_catalog.FAMILIES:
        for region in family_regions(family):
            for capacity in tpu_capacities(family):
                for item in tpu_price_items(family):
                    assert (Kind.TPU, item, region, capacity) in keys
    for accelerator in tpu_catalog.accelerator_types():
        shape = tpu_catalog.resolve(accelerator)
        if shape.machine_type:
            region = family_regions(shape.family)[0]
            assert (Kind.TPU_HOST, shape.machine_type, region, ON_DEMAND) in keys, accelerator
    for region in REGIONS:
        for machine in gpu_catalog.FIXED_GPU_MACHINES:
            for capacity in ACCELERATOR_CAPACITIES:
                assert (Kind.MACHINE, machine, region, capacity) in keys
        for gpu in gpu_catalog.N1_GPU_COUNTS:
            assert (Kind.GPU, gpu, region, ON_DEMAND) in keys
        for disk in DISK_TYPES:
            assert (Kind.DISK, disk, region, "any") in keys
        for tier in FILESTORE_TIERS:
            assert (Kind.FILESTORE, tier, region, "any") in keys


def _defaults() -> set[str]:
    return {
        CpuPoolConfig.model_fields["machine_type"].default,
        ControllerConfig.model_fields["machine_type"].default,
        LoginGroupConfig.model_fields["machine_type"].default,
        CpuNodesetConfig.model_fields["machine_type"].default,
        GpuClusterConfig.model_fields["machine_type"].default,
    }


def _named_in_stacks() -> set[str]:
    text = " ".join(str(load_stack_config(s)) for s in list_stacks())
    return set(re.findall(r"'machineType': '([^']+)'", text))


@pytest.mark.parametrize("machine_type", sorted(_defaults() | _named_in_stacks()))
def test_default_and_shipped_machine_types_have_a_price_in_the_shipped_regions(machine_type):
    for region in ("us-west4", "us-central1", "us-east5"):
        for capacity in CPU_CAPACITIES:
            quote = quotes.machine(CATALOG, machine_type, region, capacity)
            assert quote.usd_per_hour is not None and quote.usd_per_hour > 0, (
                machine_type,
                region,
                capacity,
                quote.reason,
            )


def test_any_predefined_type_of_a_rated_family_has_a_price():
    # The program accepts any machine type: a general-purpose one is priced per vCPU and GiB.
    for family, spec in machines.FAMILIES.items():
        for cls, sizes in spec.sizes.items():
            machine_type = f"{family}-{cls}-{sizes[-1]}"
            quote = quotes.machine(CATALOG, machine_type, "us-central1", ON_DEMAND)
            assert quote.known, (machine_type, quote.reason)


def _pairs() -> list[tuple[PriceRow, PriceRow]]:
    on_demand = {(r.kind, r.item, r.region): r for r in CATALOG if r.capacity == ON_DEMAND}
    return [
        (on_demand[(r.kind, r.item, r.region)], r)
        for r in CATALOG
        if r.capacity == SPOT and r.usd is not None and (r.kind, r.item, r.region) in on_demand
    ]


def test_spot_is_below_on_demand_for_every_family_that_has_both():
    pairs = _pairs()
    tpu_families = {od.item for od, _ in pairs if od.kind is Kind.TPU}
    assert {"v4", "v5litepod", "v5p", "v6e", "v2-device", "v3-device"} <= tpu_families
    assert {od.kind for od, _ in pairs} >= {Kind.TPU, Kind.MACHINE, Kind.GPU, Kind.VCPU, Kind.RAM}
    for on_demand, spot in pairs:
        if on_demand.usd is not None:
            assert spot.usd is not None and spot.usd < on_demand.usd, (on_demand, spot)
    assert spot_problems(list(CATALOG)) == []


def test_find_prefers_the_most_specific_row():
    def row(item: str, region: str, capacity: str, note: str) -> PriceRow:
        status = Status.UNKNOWN if note else Status.PRICED
        usd = None if note else 1.0
        return PriceRow(
            Kind.TPU,
            item,
            region,
            capacity,
            status,
            usd,
            "chip-hour",
            "skypilot",
            "2026-11-23",
            note,
        )

    catalog = Catalog(
        [
            row("v5p", "us-east5", ON_DEMAND, ""),
            row("v5p", ANY, ANY, "v5p anywhere"),
            row(ANY, ANY, "flex-start", "no flex-start prices"),
            row(ANY, "us-east5", ANY, "nothing in us-east5"),
        ]
    )

    def found(item: str, region: str, capacity: str) -> str:
        row = catalog.find(Kind.TPU, item, region, capacity)
        assert row is not None
        return row.note or f"${row.usd}"

    assert found("v5p", "us-east5", ON_DEMAND) == "$1.0"
    assert found("v5p", "us-east5", "flex-start") == "v5p anywhere"
    assert found("v6e", "us-east5", "flex-start") == "nothing in us-east5"
    assert found("v6e", "us-west4", "flex-start") == "no flex-start prices"
    assert catalog.find(Kind.TPU, "v6e", "us-west4", ON_DEMAND) is None
    assert catalog.find(Kind.GPU, "v5p", "us-east5", ON_DEMAND) is None


_HEADER = "kind,item,region,capacity,usd,unit,source,as_of,note\n"


@pytest.mark.parametrize(
    ("line", "error"),
    [
        ("cpu,e2,us-east5,on-demand,1,hour,cyclenerd,2026-07-30,", "unknown kind"),
        ("vcpu,e2,us-east5,on-demand,-1,hour,cyclenerd,2026-07-30,", "not a price of 0 or more"),
        ("vcpu,e2,us-east5,on-demand,cheap,hour,cyclenerd,2026-07-30,", "neither a number"),
        ("vcpu,e2,us-east5,on-demand,unknown,hour,cyclenerd,2026-07-30,", "needs a note"),
        ("vcpu,e2,us-east5,on-demand,1,hour,a-blog,2026-07-30,", "unknown source"),
        ("vcpu,e2,us-east5,on-demand,nan,hour,cyclenerd,2026-07-30,", "not a price of 0 or more"),
        ("vcpu,e2,us-east5,on-demand,1,hour,cyclenerd,undated,", "not a date"),
        ("vcpu,e2,us-east5,on-demand,1,hour,cyclenerd,2026-13-01,", "not a date"),
    ],
)
def test_a_bad_catalog_row_is_refused_with_its_line(line, error):
    with pytest.raises(CatalogError, match=error) as raised:
        Catalog.from_csv(_HEADER + line + "\n")
    assert "line 2" in str(raised.value)


def test_a_key_written_twice_is_refused():
    line = "vcpu,e2,us-east5,on-demand,1,vCPU-hour,cyclenerd,2026-07-30,\n"
    with pytest.raises(CatalogError, match="two catalog rows for vcpu/e2/us-east5/on-demand"):
        Catalog.from_csv(_HEADER + line + line)


def test_a_catalog_with_other_columns_is_refused():
    with pytest.raises(CatalogError, match="must have the columns"):
        Catalog.from_csv("kind,item,usd\n")
