"""Config edits tested as edits: build before and after, and compare URNs and inputs."""

from __future__ import annotations

from plan.engine import Graph
from tests.conftest import build_graph, with_config

SLICES = [
    {"name": "a", "accelerator": "v5p-16", "count": 1},
    {"name": "b", "accelerator": "v6e-16"},
]


def config(slices: list[dict]) -> dict:
    return with_config(tpuSlices=slices, cluster={"maxPodsPerNode": 32})


def diff(before: Graph, after: Graph) -> tuple[set[str], set[str], set[str]]:
    """(added, removed, changed) URNs."""
    old = {r.urn: r for r in before}
    new = {r.urn: r for r in after}
    changed = {
        u
        for u in old.keys() & new.keys()
        if old[u].inputs != new[u].inputs or old[u].protect != new[u].protect
    }
    return new.keys() - old.keys(), old.keys() - new.keys(), changed


def test_adding_a_slice_copy_only_adds_its_pool():
    slices = [dict(s) for s in SLICES]
    before = build_graph(config(slices))
    slices[0]["count"] = 2
    after = build_graph(config(slices))
    added, removed, changed = diff(before, after)
    assert {u.rsplit("::", 1)[1] for u in added} == {"tpu-a-1"}
    assert not removed and not changed


def test_dropping_all_slices_leaves_the_cluster_and_cpu_pool_untouched():
    before = build_graph(config(SLICES))
    after = build_graph(config([]))
    added, removed, changed = diff(before, after)
    assert not added and not changed
    assert {u.rsplit("::", 1)[1] for u in removed} == {"tpu-a", "tpu-a-0", "tpu-b", "tpu-b-0"}


def test_count_zero_removes_pools_but_nothing_else():
    slices = [dict(s) for s in SLICES]
    before = build_graph(config(slices))
    slices[1]["count"] = 0
    after = build_graph(config(slices))
    added, removed, changed = diff(before, after)
    assert {u.rsplit("::", 1)[1] for u in removed} == {"tpu-b-0"}
    assert not added and not changed
