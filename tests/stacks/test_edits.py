"""Config edits tested as edits: build before and after, then compare URNs and inputs with the
diff `python -m plan --base` prints (plan/diff.py).

Only queue quotas (team ClusterQueues and the cohort) may change as a side effect; everything
else an edit is not about keeps its URN and its inputs, queues included."""

from __future__ import annotations

import copy
from typing import Any

from graph.engine import Graph
from plan.diff import ABSENT, GraphDiff, Op, ResourceChange, diff
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
QUEUE_KINDS = (":ClusterQueue:", ":Cohort:")


def edited(**changes: Any) -> dict[str, Any]:
    config = copy.deepcopy(CONFIG)
    config.update(changes)
    return config


def names(urns: set[str]) -> set[str]:
    return {u.rsplit("::", 1)[1] for u in urns}


def quota_only(change: ResourceChange) -> bool:
    """A queue whose inputs differ only in a nominalQuota: quotas are re-divided by design when
    slices or teams change, so that alone is not a side effect."""
    return (
        any(kind in change.urn for kind in QUEUE_KINDS)
        and change.protect is None
        and all(c.path[-1] == "nominalQuota" for c in change.changes)
    )


def edit(before: Graph, after: Graph) -> tuple[set[str], set[str], set[str], GraphDiff]:
    """(added, removed, changed) URNs, where a ClusterQueue or Cohort counts as changed unless
    only its nominalQuotas differ; and the whole diff."""
    d = diff(before, after)
    changed = {r.urn for r in d if r.op in (Op.UPDATE, Op.REPLACE) and not quota_only(r)}
    return d.created, d.deleted, changed, d


def paths(d: GraphDiff, name: str) -> dict[str, tuple[Any, Any]]:
    """The changed inputs of the resource `name`, apart from nominalQuotas."""
    (change,) = [r for r in d if r.resource.name == name]
    return {c.rendered_path: (c.old, c.new) for c in change.changes if c.path[-1] != "nominalQuota"}


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
    added, removed, changed, d = edit(before(), after)
    assert not removed and not changed
    assert names(added) == {
        "team-green",
        "team-green-namespace",
        "team-green-identity",
        "team-green-identity-sa",
        "team-green-identity-iam.workloadIdentityUser",
        "team-green-identity-service-account",
        "team-green-member",
        "team-green-batch-user",
        "team-green-network-policy",
        "team-green-services-quota",
        "team-green-objects-quota",
        "team-green-limit-range",
        "team-green-cluster-queue",
        "team-green-local-queue",
        "team-green-default-queue",
        "team-groups-green-example.com-container.clusterViewer",
    }
    # Quota comes in whole slices: slice b, one v6e-16, divides neither between red and
    # blue nor three ways, so the cohort keeps it and no other queue changes.
    assert not d.changed


def test_removing_a_team_removes_only_its_resources():
    after = build(edited(teams=CONFIG["teams"][:1]))
    added, removed, changed, _ = edit(before(), after)
    assert not added and not changed
    assert names(removed) == {
        "team-blue",
        "team-blue-namespace",
        "team-blue-identity",
        "team-blue-identity-sa",
        "team-blue-identity-iam.workloadIdentityUser",
        "team-blue-identity-service-account",
        "team-blue-identity-bucket-data-storage.objectUser",
        "team-blue-member",
        "team-blue-batch-user",
        "team-blue-network-policy",
        "team-blue-services-quota",
        "team-blue-objects-quota",
        "team-blue-limit-range",
        "team-blue-cluster-queue",
        "team-blue-local-queue",
        "team-blue-default-queue",
        "team-groups-blue-example.com-container.clusterViewer",
    }


def test_no_slices_removes_pools_and_flavors_and_leaves_the_rest_untouched():
    after = build(edited(tpuSlices=[], teams=[{**t, "quota": {}} for t in CONFIG["teams"]]))
    added, removed, changed, d = edit(before(), after)
    assert not added
    assert names(removed) == {
        "tpu-a",
        "tpu-a-0",
        "tpu-b",
        "tpu-b-0",
        "queues-flavor-v5p-16",
        "queues-flavor-v6e-16",
    }
    # The queues and the cohort lose their TPU resource group (the cpu group stays, its
    # quota with the nodes gone); nothing else changed (hostNetwork is pinned to a team's own
    # slices by their label, which no policy lists).
    assert names(changed) == {
        "team-red-cluster-queue",
        "team-blue-cluster-queue",
        "queues-cohort",
    }
    for queue in ("team-red-cluster-queue", "team-blue-cluster-queue", "queues-cohort"):
        ((path, (old, new)),) = paths(d, queue).items()
        assert path == "spec.resourceGroups[1]" and new is ABSENT, queue
        assert [f["name"] for f in old["flavors"]] == ["v5p-16", "v6e-16"], queue
    for kept in (
        "gke-cluster",
        "gke-cpu",
        "batch-kueue",
        "batch-jobset",
        "team-red-namespace",
        "team-red-local-queue",
        "team-blue-identity-sa",
    ):
        assert after.named(kept).inputs == before().named(kept).inputs, kept


def test_resizing_a_slice_touches_only_its_pool_and_flavor():
    slices = copy.deepcopy(CONFIG["tpuSlices"])
    slices[1]["accelerator"] = "v6e-32"
    after = build(edited(tpuSlices=slices))
    added, removed, changed, d = edit(before(), after)
    assert names(added) == {"queues-flavor-v6e-32"}
    assert names(removed) == {"queues-flavor-v6e-16"}
    # Every queue names the flavor, so each follows the rename.
    assert names(changed) == {
        "tpu-b-0",
        "team-red-cluster-queue",
        "team-blue-cluster-queue",
        "queues-cohort",
    }
    for queue in ("team-red-cluster-queue", "team-blue-cluster-queue", "queues-cohort"):
        assert paths(d, queue) == {"spec.resourceGroups[1].flavors[1].name": ("v6e-16", "v6e-32")}
    assert paths(d, "tpu-b-0") == {
        "nodeCount": (4, 8),
        "placementPolicy.tpuTopology": ("4x4", "4x8"),
    }
    # GKE cannot reshape a multi-host slice in place: the pool is replaced, deleted first
    # because its replacement has the same name.
    (pool,) = [r for r in d if r.urn.endswith("::tpu-b-0")]
    assert pool.op is Op.REPLACE
    assert after.named("tpu-b-0").delete_before_replace is True


def test_a_single_host_pool_grows_in_place():
    config = edited(tpuSlices=[{"name": "serve", "accelerator": "v6e-8"}], teams=[])
    grown = edited(tpuSlices=[{"name": "serve", "accelerator": "v6e-8", "count": 3}], teams=[])
    d = diff(build(config), build(grown))
    (pool,) = [r for r in d if r.urn.endswith("::tpu-serve-pool")]
    assert pool.op is Op.UPDATE and pool.changes[0].path == ("nodeCount",)


def test_adding_a_slice_copy_only_adds_its_pool():
    slices = copy.deepcopy(CONFIG["tpuSlices"])
    slices[0]["count"] = 2
    after = build(edited(tpuSlices=slices))
    added, removed, changed, _ = edit(before(), after)
    assert names(added) == {"tpu-a-1"} and not removed and not changed


def test_count_zero_removes_pools_but_keeps_the_flavor():
    slices = copy.deepcopy(CONFIG["tpuSlices"])
    slices[1]["count"] = 0
    after = build(edited(tpuSlices=slices))
    added, removed, changed, _ = edit(before(), after)
    assert names(removed) == {"tpu-b-0"} and not added and not changed
    assert after.named("queues-flavor-v6e-16")
