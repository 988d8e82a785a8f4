"""Cleanup of the TPU VMs a Slurm controller creates at run time, driven with a fake TPU client:
only the cluster's own nodes go, destroy waits until they are gone, and the graph orders it
between the controller and the network."""

from __future__ import annotations

from typing import Any

import pytest
from google.api_core import exceptions as api_exceptions
from google.cloud import tpu_v2 as tpu

from components.slurm.cleanup import CALL_TIMEOUT_SECONDS, TpuCleanupProvider, owned
from tests.conftest import build_graph
from tests.slurm.test_config import stack

ZONE = "us-central2-b"


def node(name: str, cluster: str = "tpu", zone: str = ZONE) -> tpu.Node:
    return tpu.Node(
        name=f"projects/p/locations/{zone}/nodes/{name}",
        metadata={"slurm_cluster_name": cluster},
    )


class FakeTpuClient:
    """`tpu_v2.TpuClient` as cleanup calls it: nodes disappear `lag` listings after their
    delete call, like a long operation; `gone` nodes are already deleted when the call comes."""

    def __init__(self, nodes: list[tpu.Node], lag: int = 0, gone: tuple[str, ...] = ()) -> None:
        self.nodes = {n.name: n for n in nodes}
        self.deleted: list[str] = []
        self.pending: dict[str, int] = {}
        self.lag = lag
        self.gone = gone

    def list_nodes(self, *, parent: str, timeout: float) -> list[tpu.Node]:
        assert timeout == CALL_TIMEOUT_SECONDS
        assert parent.startswith("projects/p/locations/"), parent
        zone = parent.rsplit("/", 1)[1]
        if zone == "us-central2-d":
            raise api_exceptions.NotFound(f"no TPU location {zone}")
        for name in list(self.pending):
            self.pending[name] -= 1
            if self.pending[name] < 0:
                del self.pending[name]
                self.nodes.pop(name)
        return [n for n in self.nodes.values() if n.name.startswith(f"{parent}/nodes/")]

    def delete_node(self, *, name: str, timeout: float) -> None:
        assert timeout == CALL_TIMEOUT_SECONDS
        self.deleted.append(name)
        if name.rsplit("/", 1)[1] in self.gone:
            self.nodes.pop(name)
            raise api_exceptions.NotFound(name)
        self.pending[name] = self.lag


def provider(api: FakeTpuClient, sleep: Any = lambda _: None, **kwargs: Any) -> TpuCleanupProvider:
    return TpuCleanupProvider(client_factory=lambda: api, sleep=sleep, **kwargs)


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
    api = FakeTpuClient([node("tpu-v4-0"), node("tpu-v4-1"), node("keep-me")], lag=2)
    sleeps: list[float] = []
    provider(api, sleeps.append).delete("p/tpu", props("v4"))
    assert sorted(n.rsplit("/", 1)[1] for n in api.deleted) == ["tpu-v4-0", "tpu-v4-1"]
    assert [n.rsplit("/", 1)[1] for n in api.nodes] == ["keep-me"]
    assert sleeps, "returned before the deletes finished"


def test_destroy_gives_up_loudly_when_deletes_never_finish():
    api = FakeTpuClient([node("tpu-v4-0")], lag=10**6)
    with pytest.raises(TimeoutError, match="tpu-v4-0"):
        provider(api, wait_seconds=30).delete("p/tpu", props("v4"))


def test_nodes_and_zones_already_gone_are_not_errors():
    api = FakeTpuClient([node("tpu-v4-0"), node("tpu-v4-1")], gone=("tpu-v4-0",))
    nodesets = props("v4")
    nodesets["nodesets"].append({"name": "v4", "zone": "us-central2-d"})
    provider(api).delete("p/tpu", nodesets)
    assert sorted(n.rsplit("/", 1)[1] for n in api.deleted) == ["tpu-v4-0", "tpu-v4-1"]
    assert api.nodes == {}


def test_creating_touches_nothing_and_dropping_a_nodeset_cleans_only_it():
    api = FakeTpuClient([node("tpu-a-0"), node("tpu-b-0")])
    cleanup = provider(api)
    created = cleanup.create(props("a", "b"))
    assert api.deleted == [] and created.outs == props("a", "b")
    assert cleanup.diff("p/tpu", props("a", "b"), props("a", "b")).changes is False
    assert cleanup.diff("p/tpu", props("a", "b"), props("a")).replaces == []
    cleanup.update("p/tpu", props("a", "b"), props("a"))
    assert [n.rsplit("/", 1)[1] for n in api.deleted] == ["tpu-b-0"]


def test_cleanup_runs_after_the_controller_goes_and_before_the_network_does():
    graph = build_graph(stack())
    cleanup = graph.named("slurm-tpu-cleanup")
    assert cleanup.type == "pulumi-python:dynamic/slurm:TpuCleanup", cleanup.urn
    assert cleanup.inputs["nodesets"] == [{"name": "v4", "zone": ZONE}]
    assert cleanup.inputs["cluster"] == "tpu"
    # Destroy deletes dependents first: the controller before the cleanup, the cleanup
    # before the subnet and the TPU node account.
    assert cleanup.urn in graph.named("slurm-controller").dependencies, cleanup.urn
    assert graph.named("network-subnet").urn in cleanup.dependencies, cleanup.urn
    assert graph.named("slurm-tpu-sa").urn in cleanup.dependencies, cleanup.urn
