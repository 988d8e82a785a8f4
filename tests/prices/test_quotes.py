"""Unit prices from the catalog: machine shapes, whole machines against vCPU and memory rates,
reservations, and the prices the catalog says it does not know."""

from __future__ import annotations

import pytest

from catalog import machines
from catalog import tpu as tpu_catalog
from prices import quotes
from prices.catalog import HOURS_PER_MONTH, load
from prices.coverage import tpu_price_item

CATALOG = load()


@pytest.mark.parametrize(
    ("machine_type", "shape"),
    [
        ("e2-standard-8", (8, 32)),
        ("n1-standard-4", (4, 15)),
        ("n1-highcpu-96", (96, 86.4)),
        ("n2-highmem-96", (96, 768)),
        ("n2-highmem-128", (128, 864)),
        ("c3-highcpu-22", (22, 44)),
        ("n2-standard-3", None),
        ("n2-custom-8-32768", None),
        ("c2-standard-4", None),
        ("a2-highgpu-2g", None),
    ],
)
def test_shapes_of_predefined_types(machine_type, shape):
    assert machines.shape(machine_type) == shape


def test_a_predefined_type_is_its_vcpus_and_memory_at_the_family_rates():
    vcpu = CATALOG.get(("vcpu", "n2", "us-east5", "on-demand"))
    ram = CATALOG.get(("ram", "n2", "us-east5", "on-demand"))
    assert vcpu and ram and vcpu.usd and ram.usd
    quote = quotes.machine(CATALOG, "n2-standard-8", "us-east5", "on-demand")
    assert quote.usd_per_hour == pytest.approx(8 * vcpu.usd + 32 * ram.usd)
    # The rates reproduce the whole-machine price they were solved from (Cyclenerd:
    # n2-standard-8 in us-east5, 0.388472/h).
    assert quote.usd_per_hour == pytest.approx(0.388472, abs=1e-6)
    assert quote.rows == (vcpu, ram)


def test_a_whole_machine_row_wins_and_its_gpus_are_inside_it():
    row = CATALOG.get(("machine", "a3-highgpu-8g", "us-central1", "on-demand"))
    assert row and row.usd == pytest.approx(88.49, abs=1e-6)
    quote = quotes.machine(CATALOG, "a3-highgpu-8g", "us-central1", "on-demand")
    assert quote.usd_per_hour == row.usd
    assert not quotes.gpus_billed_apart("a3-highgpu-8g")
    assert quotes.gpus_billed_apart("n1-standard-8")


def test_a_reservation_is_quoted_at_the_on_demand_list_price_with_its_note():
    listed = quotes.tpu_chip(CATALOG, "v5p", "us-east5", "on-demand")
    held = quotes.tpu_chip(CATALOG, "v5p", "us-east5", "reservation")
    assert held.usd_per_hour == listed.usd_per_hour == 4.2
    assert any("bills whether used or not" in n for n in held.notes)


@pytest.mark.parametrize(
    ("what", "reason"),
    [
        (
            lambda: quotes.machine(CATALOG, "n2-custom-8-32768", "us-east5", "on-demand"),
            "neither a whole machine in the price catalog nor a predefined type",
        ),
        (
            lambda: quotes.machine(CATALOG, "n2-standard-8", "us-central2", "on-demand"),
            "no Compute Engine prices for us-central2",
        ),
        (
            lambda: quotes.machine(CATALOG, "a4-highgpu-8g", "us-central1", "spot"),
            "no verified list price for this machine type",
        ),
        (
            lambda: quotes.tpu_chip(CATALOG, "tpu7x", "us-central1", "on-demand"),
            "contact your account team",
        ),
        (
            lambda: quotes.disk(CATALOG, "hyperdisk-balanced", "us-east5"),
            "capacity price not verified",
        ),
        (
            lambda: quotes.filestore(CATALOG, "ENTERPRISE", "us-central1"),
            "no verified price for this tier",
        ),
        (
            lambda: quotes.machine(CATALOG, "g2-standard-24", "us-central1", "flex-start"),
            "no verified flex-start VM price",
        ),
        (
            lambda: quotes.machine(CATALOG, "e2-standard-8", "southamerica-east1", "on-demand"),
            "the price catalog has no row for vcpu e2 in southamerica-east1",
        ),
    ],
)
def test_what_the_catalog_cannot_price_is_unknown_with_its_reason(what, reason):
    quote = what()
    assert quote.usd_per_hour is None and not quote.known
    assert reason in quote.reason


def test_a_tpu_host_is_included_in_its_chip_price():
    quote = quotes.tpu_host(CATALOG, "ct5p-hightpu-4t", "us-east5", "on-demand")
    assert (quote.usd_per_hour, quote.shown) == (0.0, "included")
    assert any("chip-hour price" in n for n in quote.notes)


def test_monthly_prices_turn_hourly_at_730_hours():
    quote = quotes.disk(CATALOG, "pd-ssd", "us-central1")
    assert quote.usd_per_hour == pytest.approx(0.17 / HOURS_PER_MONTH)
    assert quote.shown == "$0.17/GB-month"


def test_v2_and_v3_are_priced_per_device_or_at_pod_rates():
    v3 = next(f for f in tpu_catalog.FAMILIES if f.prefix == "v3")
    assert tpu_price_item(v3, 4) == "v3-device"
    assert tpu_price_item(v3, 16) == "v3-pod"
    v5p = next(f for f in tpu_catalog.FAMILIES if f.prefix == "v5p")
    assert tpu_price_item(v5p, 4) == "v5p"


@pytest.mark.parametrize(
    ("usd", "shown"),
    [
        (0, "$0.00"),
        (0.1, "$0.10"),
        (0.0014, "$0.0014"),
        (0.00001234, "$0.00001234"),
        (1234.5, "$1,234.50"),
        (-2.5, "-$2.50"),
    ],
)
def test_money(usd, shown):
    assert quotes.money(usd) == shown
