"""Config edits tested as edits: build before and after, then compare URNs and inputs.

Only queue quotas (team ClusterQueues and the cohort) may change as a side effect; everything
else an edit is not about keeps its URN and its inputs."""

from __future__ import annotations

import copy
from typing import Any

from plan.engine import Graph
from tests.conftest import build_graph, with_config

CONFIG: dict[str, Any] = dict(
    cluster={"maxPodsPerNode": 32, "rbacSecurityGroup": "gke-security-groups@example.com"},
    tpuSlices=[{"name": "a", "accelerator": "v5p-16"}, {"name": "b", "accelerator": "v6e-16"}],
    buckets=[{"name": "data"}],
    teams=[
        {
            "name": "red",
            "quota": {"a": 8},
            "groups": ["red@example.com"],
            "buckets": {"data": "read"},
        },
        {"name": "blue", "groups": ["blue@example.com"], "buckets": {"data": "write"}},
    ],
)
QUOTA_KINDS = (":ClusterQueue:", ":Cohort:")


def without_quotas(value: Any) -> Any:
    """A queue's inputs with every nominalQuota blanked: what must not change as a side effect."""
    if isinstance(value, dict):
        return {k: None if k == "nominalQuota" else without_quotas(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_quotas(v) for v in value]
    return value


def edited(**changes: Any) -> dict[str, Any]:
    config = copy.deepcopy(CONFIG)
    config.update(changes)
    return config


def names(urns: set[str]) -> set[str]:
    return {u.rsplit("::", 1)[1] for u in urns}


def diff(before: Graph, after: Graph) -> tuple[set[str], set[str], set[str]]:
    """(added, removed, changed) URNs; changes to queue quotas are left out of `changed`."""
    old = {r.urn: r for r in before}
    new = {r.urn: r for r in after}
    changed = {
        u
        for u in old.keys() & new.keys()
        if (old[u].inputs, old[u].protect) != (new[u].inputs, new[u].protect)
        and not any(kind in u for kind in QUOTA_KINDS)
    }
    return set(new) - set(old), set(old) - set(new), changed


def build(config: dict[str, Any]) -> Graph:
    return build_graph(with_config(**config))


BEFORE = None


def before() -> Graph:
    global BEFORE
    if BEFORE is None:
        BEFORE = build(CONFIG)
    return BEFORE


def test_adding_a_team_creates_only_that_teams_resources():
    teams = [*CONFIG["teams"], {"name": "green", "groups": ["green@example.com"]}]
    after = build(edited(teams=teams))
    added, removed, changed = diff(before(), after)
    assert not removed and not changed
    assert names(added) == {
        "team-green",
        "team-green-namespace",
        "team-green-identity",
        "team-green-identity-gsa",
        "team-green-identity-workload-identity",
        "team-green-identity-service-account",
        "team-green-edit",
        "team-green-cluster-queue",
        "team-green-local-queue",
        "team-groups-green-example.com",
    }


def test_removing_a_team_removes_only_its_resources():
    after = build(edited(teams=CONFIG["teams"][:1]))
    added, removed, changed = diff(before(), after)
    assert not added and not changed
    assert names(removed) == {
        "team-blue",
        "team-blue-namespace",
        "team-blue-identity",
        "team-blue-identity-gsa",
        "team-blue-identity-workload-identity",
        "team-blue-identity-service-account",
        "team-blue-identity-bucket-data",
        "team-blue-edit",
        "team-blue-cluster-queue",
        "team-blue-local-queue",
        "team-groups-blue-example.com",
    }


def test_no_slices_removes_pools_and_flavors_and_leaves_the_rest_untouched():
    after = build(edited(tpuSlices=[], teams=[{**t, "quota": {}} for t in CONFIG["teams"]]))
    added, removed, changed = diff(before(), after)
    assert not added
    assert names(removed) == {
        "tpu-a",
        "tpu-a-0",
        "tpu-b",
        "tpu-b-0",
        "queues-flavor-v5p-16",
        "queues-flavor-v6e-16",
    }
    # red's quota entry went away with the slice it named; nothing else changed.
    assert not changed
    for kept in (
        "gke-cluster",
        "gke-cpu",
        "batch-kueue",
        "batch-jobset",
        "team-red-namespace",
        "team-red-local-queue",
        "team-blue-identity-gsa",
    ):
        assert after.named(kept).inputs == before().named(kept).inputs, kept


def test_resizing_a_slice_touches_only_its_pool_and_flavor():
    slices = copy.deepcopy(CONFIG["tpuSlices"])
    slices[1]["accelerator"] = "v6e-32"
    after = build(edited(tpuSlices=slices))
    added, removed, changed = diff(before(), after)
    assert names(added) == {"queues-flavor-v6e-32"}
    assert names(removed) == {"queues-flavor-v6e-16"}
    assert names(changed) == {"tpu-b-0"}
    pool = after.named("tpu-b-0").inputs
    assert pool["nodeCount"] == 8 and pool["placementPolicy"]["tpuTopology"] == "4x8"


def test_adding_a_slice_copy_only_adds_its_pool():
    slices = copy.deepcopy(CONFIG["tpuSlices"])
    slices[0]["count"] = 2
    after = build(edited(tpuSlices=slices))
    added, removed, changed = diff(before(), after)
    assert names(added) == {"tpu-a-1"} and not removed and not changed


def test_count_zero_removes_pools_but_keeps_the_flavor():
    slices = copy.deepcopy(CONFIG["tpuSlices"])
    slices[1]["count"] = 0
    after = build(edited(tpuSlices=slices))
    added, removed, changed = diff(before(), after)
    assert names(removed) == {"tpu-b-0"} and not added and not changed
    assert after.named("queues-flavor-v6e-16")
