"""The storage instances as the cost, preflight and the diff read them from the graph: a line
per instance by provisioned capacity and tier, the permissions their creation needs, and the
data a replacement loses (refused where the stack protects them)."""

from __future__ import annotations

import copy

from graph import capacity, types
from plan.diff import diff
from plan.hazards import Kind
from preflight import permissions
from tests.conftest import build_graph
from tests.prices.conftest import cost_of, line
from tests.storage.stack import VOLUMES, config, storage


def test_each_instance_is_read_as_storage_by_capacity_and_tier():
    inventory = capacity.read(build_graph(config()))
    held = {(s.kind, s.tier, s.region, s.gib) for s in inventory.storage}
    assert ("lustre", "500", "us-central1", 18000) in held
    assert ("filestore", "ZONAL", "us-central1", 1024) in held


def test_each_instance_has_a_cost_line_and_an_unknown_price_is_never_zero():
    report = cost_of(config())
    lustre = line(report, "Instance storage-scratch")
    assert lustre.units == "18000 GiB 500"
    assert not lustre.parts[0].quote.known
    assert lustre.full.unknown, "an unpriced Lustre instance must say so, not cost $0"
    assert lustre.rows[0].source == "lustre-pricing"
    share = line(report, "Instance storage-shared")
    assert share.units == "1024 GiB ZONAL"
    # The private services range and its peering bill nothing of their own.
    assert not [u for u in report.unpriced if "GlobalAddress" in u or "Connection" in u]


def test_preflight_asks_for_what_creating_each_kind_needs():
    graph = build_graph(config())
    registered = {r.type for r in graph}
    for type_ in (types.LUSTRE, types.GLOBAL_ADDRESS, types.SERVICE_NETWORKING_CONNECTION):
        assert type_ in registered, type_
        needed = permissions.PERMISSIONS[type_]
        assert needed and all(permissions.role_for(p).startswith("roles/") for p in needed)
    assert permissions.role_for("lustre.instances.create") == "roles/lustre.admin"


def _lustre_throughput(value: int) -> list[dict]:
    volumes = copy.deepcopy(VOLUMES)
    volumes[2]["lustre"]["throughput"] = value
    return volumes


def test_replacing_a_lustre_instance_warns_of_data_loss():
    before = build_graph(config())
    after = build_graph(config(storage=storage(volumes=_lustre_throughput(1000))))
    changes = diff(before, after)
    (change,) = [c for c in changes if c.resource.type == types.LUSTRE]
    assert change.urn.endswith("storage-scratch") and change.destructive, change.urn
    assert [h.kind for h in change.hazards] == [Kind.DATA_LOSS], change.hazards
    assert "export" in change.hazards[0].message
    assert change in changes.destructive


def test_a_protected_stack_refuses_to_replace_a_share():
    before = build_graph(config(protect=True))
    after = build_graph(config(protect=True, storage=storage(volumes=_lustre_throughput(1000))))
    changes = diff(before, after)
    refused = {c.urn for c in changes.refused}
    assert any(u.endswith("storage-scratch") for u in refused), refused
