"""`python -m prices refresh` against a fake Billing Catalog built from google-cloud-billing's
own types: what it matches, what it refuses to guess, and that a failure writes nothing."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from google.api_core import exceptions
from google.api_core import retry as retries
from google.auth import exceptions as auth_exceptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import billing_v1
from google.type import money_pb2

from catalog.price_labels import COMPUTE, FILESTORE, GKE, NETWORKING, TPU
from prices import refresh as refresh_module
from prices.__main__ import main
from prices.catalog import CATALOG_FILE, Catalog, PriceRow, Status, load
from prices.refresh import RefreshError, offer, refresh

WHEN = datetime(2026, 11, 20, 8, tzinfo=UTC)
SERVICES = {
    COMPUTE: "Compute Engine",
    TPU: "Cloud TPU",
    NETWORKING: "Networking",
    FILESTORE: "Cloud Filestore",
    GKE: "Kubernetes Engine",
}


def sku(
    sku_id: str,
    description: str,
    usd: float,
    unit: str = "h",
    usage: str = "OnDemand",
    regions: tuple[str, ...] = ("us-east5",),
    tiers: list[tuple[float, float]] | None = None,
    currency: str = "USD",
) -> billing_v1.Sku:
    def money(amount: float) -> money_pb2.Money:
        units = int(amount)
        return money_pb2.Money(
            currency_code=currency, units=units, nanos=round((amount - units) * 1e9)
        )

    rates = [
        billing_v1.PricingExpression.TierRate(start_usage_amount=start, unit_price=money(price))
        for start, price in (tiers or [(0, usd)])
    ]
    return billing_v1.Sku(
        name=f"services/x/skus/{sku_id}",
        sku_id=sku_id,
        description=description,
        category=billing_v1.Category(usage_type=usage, resource_family="Compute"),
        service_regions=list(regions),
        pricing_info=[
            billing_v1.PricingInfo(
                effective_time=WHEN,
                pricing_expression=billing_v1.PricingExpression(
                    usage_unit=unit, tiered_rates=rates
                ),
            )
        ],
    )


def compute_skus() -> list[billing_v1.Sku]:
    return [
        sku("E2C", "E2 Instance Core running in Columbus", 0.03),
        sku("E2R", "E2 Instance Ram running in Columbus", 0.004, "GiBy.h"),
        sku(
            "E2CS",
            "Spot Preemptible E2 Instance Core running in Columbus",
            0.01,
            usage="Preemptible",
        ),
        sku(
            "E2RS",
            "Spot Preemptible E2 Instance Ram running in Columbus",
            0.001,
            "GiBy.h",
            usage="Preemptible",
        ),
        # Lookalikes that must not be taken for the list price:
        sku("CUD", "Commitment v1: E2 Cpu in Columbus for 1 Year", 0.019, usage="Commit1Yr"),
        sku("E2CUST", "E2 Instance Core running in Columbus Custom", 0.05),
        sku("A2C", "A2 Instance Core running in Columbus", 0.031611),
        sku("A2R", "A2 Instance Ram running in Columbus", 0.004237, "GiBy.h"),
        sku("A100", "Nvidia Tesla A100 GPU running in Columbus", 2.933908),
        sku("A100DWS", "Nvidia Tesla A100 GPU running in Columbus for DWS", 1.2),
        sku("V5P", "TpuV5p chip running in Columbus", 4.5),
        sku("V5PS", "TpuV5p chip Preemptible in Columbus", 1.5),
        sku("PDB", "Balanced PD Capacity in Columbus", 0.12, "GiBy.mo"),
        sku("RPDB", "Regional Balanced PD Capacity in Columbus", 0.24, "GiBy.mo"),
    ]


class FakeCatalog:
    """`CloudCatalogClient`'s two calls, answering from lists of billing_v1 objects."""

    def __init__(self, skus: dict[str, list[billing_v1.Sku]], services: dict[str, str] = SERVICES):
        self.skus = skus
        self.services = services
        self.requests: list[billing_v1.ListSkusRequest] = []

    def list_services(self, request: Any, *, retry: Any) -> list[billing_v1.Service]:
        return [
            billing_v1.Service(name=f"services/{i}", service_id=i, display_name=name)
            for i, name in self.services.items()
        ]

    def list_skus(self, request: billing_v1.ListSkusRequest, *, retry: Any) -> list[billing_v1.Sku]:
        self.requests.append(request)
        return self.skus.get(request.parent.removeprefix("services/"), [])


def fake(**extra: list[billing_v1.Sku]) -> FakeCatalog:
    skus = {
        COMPUTE: compute_skus(),
        NETWORKING: [
            sku("NAT", "Networking Cloud Nat Gateway Uptime", 0.0015, regions=("global",))
        ],
        GKE: [
            sku("GKR", "Regional Kubernetes Clusters", 0.1, regions=("global",)),
            sku("GKZ", "Zonal Kubernetes Clusters", 0.1, regions=("global",)),
        ],
    }
    for service, more in extra.items():
        skus[{"compute": COMPUTE, "tpu": TPU}[service]] = [*skus.get(COMPUTE, []), *more]
    return FakeCatalog(skus)


def test_refresh_prices_rows_from_matching_skus_and_keeps_the_rest():
    before = load()
    client = fake()
    result = refresh(client, before)
    after = result.catalog

    def row(kind: str, item: str, region: str, capacity: str) -> PriceRow:
        found = after.get((kind, item, region, capacity))
        assert found is not None, (kind, item, region, capacity)
        return found

    core = row("vcpu", "e2", "us-east5", "on-demand")
    assert (core.usd, core.unit, core.source, core.as_of) == (
        0.03,
        "vCPU-hour",
        "billing-api",
        "2026-11-20",
    )
    assert core.note == "SKU E2C"
    assert row("vcpu", "e2", "us-east5", "spot").usd == 0.01
    # A whole machine is the sum of its SKUs: e2-medium is one vCPU and 4 GiB.
    assert row("machine", "e2-medium", "us-east5", "on-demand").usd == pytest.approx(
        0.03 + 4 * 0.004
    )
    # a2-highgpu-2g: 24 vCPUs, 170 GiB and two A100s; neither the commitment nor the DWS SKU.
    a2 = row("machine", "a2-highgpu-2g", "us-east5", "on-demand")
    assert a2.usd == pytest.approx(24 * 0.031611 + 170 * 0.004237 + 2 * 2.933908)
    assert a2.note == "SKU A2C, A2R, A100"
    assert row("tpu", "v5p", "us-east5", "on-demand").usd == 4.5
    assert row("tpu", "v5p", "us-east5", "spot").usd == 1.5
    disk = row("disk", "pd-balanced", "us-east5", "any")
    assert (disk.usd, disk.unit) == (0.12, "GB-month")
    # Global SKUs price every region; two GKE SKUs of one price are one price.
    for region in ("us-east5", "us-central1", "europe-west4"):
        assert row("nat_gateway", "cloud-nat", region, "any").usd == 0.0015
        assert row("gke_cluster", "management-fee", region, "any").usd == 0.1
    # What matched nothing stays as it was, source and date included.
    assert after.get(("vcpu", "e2", "us-central1", "on-demand")) == before.get(
        ("vcpu", "e2", "us-central1", "on-demand")
    )
    assert ("tpu", "v5p", "us-central1", "on-demand") in {
        (k.value, i, r, c) for k, i, r, c in result.kept
    }
    # Statements about no price stay.
    tpu7x = after.get(("tpu", "tpu7x", "*", "*"))
    assert tpu7x is not None and tpu7x.status is Status.UNKNOWN
    assert {r.parent for r in client.requests} == {f"services/{i}" for i in SERVICES}
    assert {r.currency_code for r in client.requests} == {"USD"}
    # Round trip through the file format.
    assert Catalog.from_csv(after.to_csv()).to_csv() == after.to_csv()


def test_skus_of_different_prices_for_one_key_are_refused():
    client = fake(compute=[sku("V5P2", "TpuV5p chip running in Columbus, second", 5.0)])
    with pytest.raises(
        RefreshError,
        match=r"tpu v5p in us-east5 \(on-demand\): SKUs of different prices match: "
        r"V5P 'TpuV5p chip running in Columbus' \$4.5/h; V5P2",
    ):
        refresh(client, load())


def test_a_spot_price_not_below_on_demand_is_refused():
    skus = [s for s in compute_skus() if s.sku_id != "V5PS"]
    skus.append(sku("V5PS", "TpuV5p chip Preemptible in Columbus", 4.5))
    client = FakeCatalog({COMPUTE: skus})
    with pytest.raises(
        RefreshError, match=r"tpu v5p in us-east5: Spot \$4.5 .* is not below on-demand \$4.5"
    ):
        refresh(client, load())


def test_a_sku_billed_in_another_unit_is_refused():
    skus = [s for s in compute_skus() if s.sku_id != "E2C"]
    skus.append(sku("E2C", "E2 Instance Core running in Columbus", 0.03, unit="GiBy.h"))
    with pytest.raises(
        RefreshError,
        match=r"vcpu e2 in us-east5 \(on-demand\): SKUs E2C bill per GiBy.h, expected h",
    ):
        refresh(FakeCatalog({COMPUTE: skus}), load())


def test_a_missing_or_renamed_service_is_refused():
    services = {k: v for k, v in SERVICES.items() if k != FILESTORE}
    with pytest.raises(RefreshError, match="lists no service D97E-AB26-5D95"):
        refresh(FakeCatalog({}, services), load())
    services = {**SERVICES, FILESTORE: "BigQuery"}
    with pytest.raises(RefreshError, match="service D97E-AB26-5D95 is 'BigQuery'"):
        refresh(FakeCatalog({}, services), load())


def test_offer_takes_the_first_billable_tier_and_refuses_other_currencies():
    free_first = sku("EG", "Egress", 0, "GiBy", tiers=[(0, 0.0), (1024, 0.05), (10240, 0.04)])
    found = offer(free_first)
    assert found is not None and (found.usd, found.effective) == (0.05, date(2026, 11, 20))
    assert offer(sku("FREE", "Free", 0.0)) is None
    with pytest.raises(RefreshError, match="priced in EUR"):
        offer(sku("EU", "E2 Instance Core running in Frankfurt", 0.03, currency="EUR"))


@pytest.fixture
def catalog_copy(tmp_path: Path) -> Path:
    path = tmp_path / "catalog.csv"
    path.write_text(CATALOG_FILE.read_text())
    return path


def test_the_command_writes_the_refreshed_catalog(catalog_copy: Path, capsys):
    assert main(["refresh", "--catalog", str(catalog_copy)], lambda key: fake()) == 0
    out = capsys.readouterr().out
    assert "prices updated" in out and f"wrote {catalog_copy}" in out
    assert "vcpu/e2/us-east5/on-demand: $0.02181159 (cyclenerd-derived) -> $0.03/vCPU-hour" in out
    row = load(catalog_copy).get(("vcpu", "e2", "us-east5", "on-demand"))
    assert row is not None and row.usd == 0.03


def test_a_dry_run_writes_nothing(catalog_copy: Path, capsys):
    before = catalog_copy.read_text()
    assert main(["refresh", "--dry-run", "--catalog", str(catalog_copy)], lambda key: fake()) == 0
    assert "$0.03/vCPU-hour" in capsys.readouterr().out
    assert catalog_copy.read_text() == before


@pytest.mark.parametrize(
    ("failure", "code", "message"),
    [
        (RefreshError("tpu v5p: SKUs of different prices match"), 1, "nothing written: tpu v5p"),
        (exceptions.PermissionDenied("billing API disabled"), 1, "nothing written: 403"),
        (exceptions.DeadlineExceeded("too slow"), 1, "nothing written: 504"),
        (auth_exceptions.DefaultCredentialsError("no ADC"), 2, "gcloud auth application-default"),
    ],
)
def test_a_failure_writes_nothing(catalog_copy: Path, capsys, failure, code, message):
    before = catalog_copy.read_text()

    class Failing(FakeCatalog):
        def list_skus(self, request: Any, *, retry: Any) -> list[billing_v1.Sku]:
            raise failure

    def factory(key: str | None) -> FakeCatalog:
        if isinstance(failure, auth_exceptions.DefaultCredentialsError):
            raise failure
        return Failing({})

    assert main(["refresh", "--catalog", str(catalog_copy)], factory) == code
    assert message in capsys.readouterr().err
    assert catalog_copy.read_text() == before


def test_an_empty_api_key_variable_is_refused(catalog_copy: Path, capsys, monkeypatch):
    monkeypatch.delenv("BILLING_KEY", raising=False)
    assert main(["refresh", "--api-key-env", "BILLING_KEY", "--catalog", str(catalog_copy)]) == 1
    assert "BILLING_KEY: that environment variable is empty" in capsys.readouterr().err


def test_the_official_client_pages_and_retries_transient_errors(monkeypatch):
    """Through billing_v1.CloudCatalogClient itself, its transport stubbed: a 503 is retried,
    and every page of SKUs is read."""
    monkeypatch.setattr(
        refresh_module,
        "RETRY",
        retries.Retry(predicate=retries.if_transient_error, initial=0.01, maximum=0.02, timeout=5),
    )
    client = billing_v1.CloudCatalogClient(credentials=AnonymousCredentials())
    services = billing_v1.ListServicesResponse(
        services=[
            billing_v1.Service(name=f"services/{i}", service_id=i, display_name=name)
            for i, name in SERVICES.items()
        ]
    )
    skus = compute_skus()
    pages = {
        COMPUTE: [
            exceptions.ServiceUnavailable("try again"),
            billing_v1.ListSkusResponse(skus=skus[:5], next_page_token="2"),
            billing_v1.ListSkusResponse(skus=skus[5:]),
        ]
    }
    calls: list[tuple[str, str]] = []

    def answer(request: Any, **kwargs: Any) -> Any:
        # Both RPCs go through one gRPC callable type: tell them apart by the request.
        if isinstance(request, billing_v1.ListServicesRequest):
            return services
        service = request.parent.removeprefix("services/")
        calls.append((service, request.page_token))
        queue = pages.get(service)
        if not queue:
            return billing_v1.ListSkusResponse()
        found = queue.pop(0)
        if isinstance(found, Exception):
            raise found
        return found

    with mock.patch.object(type(client.transport.list_skus), "__call__", side_effect=answer):
        result = refresh(client, load())
    assert [c for c in calls if c[0] == COMPUTE] == [(COMPUTE, ""), (COMPUTE, ""), (COMPUTE, "2")]
    # SKUs from both pages were read: E2 (page 1) and TpuV5p (page 2).
    e2 = result.catalog.get(("vcpu", "e2", "us-east5", "on-demand"))
    v5p = result.catalog.get(("tpu", "v5p", "us-east5", "on-demand"))
    assert e2 is not None and v5p is not None and (e2.usd, v5p.usd) == (0.03, 4.5)
