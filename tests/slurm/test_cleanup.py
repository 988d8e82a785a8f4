"""Cleanup of the TPU VMs a Slurm controller creates at run time, driven with a fake TPU API:
only the cluster's own nodes go, destroy waits until they are gone, and the graph orders it
between the controller and the network."""

from __future__ import annotations

from typing import Any

import pytest

from components.slurm.cleanup import TpuCleanupProvider, owned
from tests.conftest import build_graph
from tests.slurm.test_config import stack

ZONE = "us-central2-b"


def node(name: str, cluster: str = "tpu", zone: str = ZONE) -> dict[str, Any]:
    return {
        "name": f"projects/p/locations/{zone}/nodes/{name}",
        "metadata": {"slurm_cluster_name": cluster},
    }


class FakeTpuApi:
    """Nodes disappear `lag` listings after their delete call, like a long operation."""

    def __init__(self, nodes: list[dict[str, Any]], lag: int = 0) -> None:
        self.nodes = {n["name"]: n for n in nodes}
        self.deleted: list[str] = []
        self.pending: dict[str, int] = {}
        self.lag = lag

    def list_nodes(self, project: str, zone: str) -> list[dict[str, Any]]:
        for name in list(self.pending):
            self.pending[name] -= 1
            if self.pending[name] < 0:
                del self.pending[name]
                self.nodes.pop(name)
        return [n for n in self.nodes.values() if f"/locations/{zone}/" in n["name"]]

    def delete_node(self, name: str) -> None:
        self.deleted.append(name)
        self.pending[name] = self.lag


def props(*nodesets: str) -> dict[str, Any]:
    return {
        "project": "p",
        "cluster": "tpu",
        "nodesets": [{"name": n, "zone": ZONE} for n in nodesets],
    }


def test_only_the_cluster_s_own_nodes_of_the_nodeset_are_owned():
    nodes = [
        node("tpu-v4-0"),
        node("tpu-v4-12"),
        node("tpu-v4b-0"),  # another nodeset
        node("tpu-v4-x-0", cluster="tpu-v4"),  # another cluster sharing the prefix
        node("tpu-v4-3", cluster="other"),  # metadata names another cluster
        node("tpu-v4-debug"),  # not an index
    ]
    assert owned(nodes, "tpu", "v4") == [
        "projects/p/locations/us-central2-b/nodes/tpu-v4-0",
        "projects/p/locations/us-central2-b/nodes/tpu-v4-12",
    ]


def test_destroy_deletes_the_cluster_s_tpu_vms_and_waits_for_them():
    api = FakeTpuApi([node("tpu-v4-0"), node("tpu-v4-1"), node("keep-me")], lag=2)
    sleeps: list[float] = []
    TpuCleanupProvider(api, sleeps.append).delete("p/tpu", props("v4"))
    assert sorted(n.rsplit("/", 1)[1] for n in api.deleted) == ["tpu-v4-0", "tpu-v4-1"]
    assert [n.rsplit("/", 1)[1] for n in api.nodes] == ["keep-me"]
    assert sleeps, "returned before the deletes finished"


def test_destroy_gives_up_loudly_when_deletes_never_finish():
    api = FakeTpuApi([node("tpu-v4-0")], lag=10**6)
    with pytest.raises(TimeoutError, match="tpu-v4-0"):
        TpuCleanupProvider(api, lambda _: None, wait_seconds=30).delete("p/tpu", props("v4"))


def test_creating_touches_nothing_and_dropping_a_nodeset_cleans_only_it():
    api = FakeTpuApi([node("tpu-a-0"), node("tpu-b-0")])
    provider = TpuCleanupProvider(api, lambda _: None)
    created = provider.create(props("a", "b"))
    assert api.deleted == [] and created.outs == props("a", "b")
    assert provider.diff("p/tpu", props("a", "b"), props("a", "b")).changes is False
    assert provider.diff("p/tpu", props("a", "b"), props("a")).replaces == []
    provider.update("p/tpu", props("a", "b"), props("a"))
    assert [n.rsplit("/", 1)[1] for n in api.deleted] == ["tpu-b-0"]


def test_cleanup_runs_after_the_controller_goes_and_before_the_network_does():
    graph = build_graph(stack())
    cleanup = graph.named("slurm-tpu-cleanup")
    assert cleanup.type == "pulumi-python:dynamic:Resource"
    assert cleanup.inputs["nodesets"] == [{"name": "v4", "zone": ZONE}]
    assert cleanup.inputs["cluster"] == "tpu"
    # Destroy deletes dependents first: the controller before the cleanup, the cleanup
    # before the subnet and the TPU node account.
    assert cleanup.urn in graph.named("slurm-controller").dependencies
    assert graph.named("network-subnet").urn in cleanup.dependencies
    assert graph.named("slurm-tpu").urn in cleanup.dependencies
