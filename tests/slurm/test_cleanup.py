"""Cleanup of the TPU and Compute Engine VMs a Slurm controller creates at run time, driven
with fake clients built on the libraries' own types: only the cluster's own nodes go, destroy
waits until they are gone through transient errors, busy VMs and late arrivals, and the graph
orders it between the controller and the network."""

from __future__ import annotations

from typing import Any

import pytest
from google.api_core import exceptions as api_exceptions
from google.cloud import compute_v1 as compute
from google.cloud import tpu_v2 as tpu

from components.slurm.cleanup import (
    CALL_TIMEOUT_SECONDS,
    REASK_SECONDS,
    ComputeCleanupProvider,
    FlexCleanupProvider,
    TpuCleanupProvider,
    owned,
    owned_groups,
    owned_instances,
)
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


# Compute Engine VMs of CPU nodesets


def instance(name: str, cluster: str = "tpu", role: str = "compute") -> compute.Instance:
    return compute.Instance(
        name=name,
        zone=f"https://www.googleapis.com/compute/v1/projects/p/zones/{ZONE}",
        labels={"slurm_cluster_name": cluster, "slurm_instance_role": role},
    )


class FakeInstancesClient:
    """`compute_v1.InstancesClient` as cleanup calls it. VMs disappear `lag` listings after
    their delete is accepted; `busy` VMs refuse their first delete (still being created);
    `flaky` listings fail with 503 first; `late` VMs appear after the first listing (a
    resume in flight)."""

    def __init__(
        self,
        instances: list[compute.Instance],
        *,
        lag: int = 0,
        busy: tuple[str, ...] = (),
        gone: tuple[str, ...] = (),
        flaky: int = 0,
        late: tuple[compute.Instance, ...] = (),
    ) -> None:
        self.instances = {(ZONE, i.name): i for i in instances}
        self.deleted: list[str] = []
        self.pending: dict[tuple[str, str], int] = {}
        self.lag, self.busy, self.gone, self.flaky = lag, set(busy), gone, flaky
        self.late = list(late)
        self.listings = 0

    def list(self, *, project: str, zone: str, timeout: float) -> list[compute.Instance]:
        assert (project, timeout) == ("p", CALL_TIMEOUT_SECONDS)
        self.listings += 1
        if self.flaky:
            self.flaky -= 1
            raise api_exceptions.ServiceUnavailable("try again")
        if zone == "us-central2-d":
            raise api_exceptions.NotFound(f"zone {zone}")
        for key in list(self.pending):
            self.pending[key] -= 1
            if self.pending[key] < 0:
                del self.pending[key], self.instances[key]
        found = [i for (z, _), i in self.instances.items() if z == zone]
        while self.late:
            late = self.late.pop()
            self.instances[(ZONE, late.name)] = late
        return found

    def delete(self, *, project: str, zone: str, instance: str, timeout: float) -> Any:
        assert (project, timeout) == ("p", CALL_TIMEOUT_SECONDS)
        self.deleted.append(instance)
        if instance in self.gone:
            self.instances.pop((zone, instance), None)
            raise api_exceptions.NotFound(instance)
        if instance in self.busy:
            self.busy.discard(instance)
            raise api_exceptions.BadRequest("The resource is not ready (resourceNotReady)")
        self.pending[(zone, instance)] = self.lag
        return object()  # an ExtendedOperation, which cleanup does not await


def compute_provider(
    api: FakeInstancesClient, sleep: Any = lambda _: None, **kwargs: Any
) -> ComputeCleanupProvider:
    return ComputeCleanupProvider(client_factory=lambda: api, sleep=sleep, **kwargs)


def test_only_the_cluster_s_own_nodes_of_a_cpu_nodeset_are_owned():
    instances = [
        instance("tpu-debug-0"),
        instance("tpu-debug-11"),
        instance("tpu-debug-1", role="login"),  # a login group named like the nodeset
        instance("tpu-debug-2", cluster="other"),
        instance("tpu-debugx-0"),
        instance("tpu-controller", role="controller"),
    ]
    assert owned_instances(instances, "tpu", "debug") == ["tpu-debug-0", "tpu-debug-11"]


def test_destroy_deletes_the_cluster_s_cpu_vms_and_waits_for_them():
    api = FakeInstancesClient(
        [instance("tpu-debug-0"), instance("tpu-debug-1"), instance("keep-me")], lag=2
    )
    sleeps: list[float] = []
    compute_provider(api, sleeps.append).delete("p/tpu", props("debug"))
    assert sorted(api.deleted) == ["tpu-debug-0", "tpu-debug-1"]
    assert [name for _, name in api.instances] == ["keep-me"]
    assert len(sleeps) == 3


def test_a_transient_listing_error_is_waited_out():
    api = FakeInstancesClient([instance("tpu-debug-0")], flaky=2)
    compute_provider(api).delete("p/tpu", props("debug"))
    assert api.deleted == ["tpu-debug-0"] and api.instances == {}


def test_a_busy_vm_is_asked_again_until_it_goes():
    api = FakeInstancesClient([instance("tpu-debug-0")], busy=("tpu-debug-0",))
    sleeps: list[float] = []
    compute_provider(api, sleeps.append).delete("p/tpu", props("debug"))
    assert api.deleted == ["tpu-debug-0", "tpu-debug-0"]
    assert sum(sleeps) >= REASK_SECONDS


def test_a_vm_created_during_cleanup_is_deleted_too():
    api = FakeInstancesClient([instance("tpu-debug-0")], late=(instance("tpu-debug-1"),))
    compute_provider(api).delete("p/tpu", props("debug"))
    assert sorted(api.deleted) == ["tpu-debug-0", "tpu-debug-1"] and api.instances == {}


def test_vms_and_zones_already_gone_are_not_errors():
    api = FakeInstancesClient(
        [instance("tpu-debug-0"), instance("tpu-debug-1")], gone=("tpu-debug-0",)
    )
    nodesets = props("debug")
    nodesets["nodesets"].append({"name": "debug", "zone": "us-central2-d"})
    compute_provider(api).delete("p/tpu", nodesets)
    assert sorted(api.deleted) == ["tpu-debug-0", "tpu-debug-1"] and api.instances == {}


def test_cpu_cleanup_gives_up_loudly_and_names_what_is_left():
    api = FakeInstancesClient([instance("tpu-debug-0")], lag=10**6)
    with pytest.raises(TimeoutError, match=r"Compute Engine VMs .* tpu-debug-0"):
        compute_provider(api, wait_seconds=30).delete("p/tpu", props("debug"))


def test_dropping_a_cpu_nodeset_cleans_it_but_dropping_a_zone_leaves_its_nodes_to_slurm():
    api = FakeInstancesClient([instance("tpu-a-0"), instance("tpu-b-0")])
    cleanup = compute_provider(api)
    two_zones = {**props("a"), "nodesets": [*props("a")["nodesets"], {"name": "a", "zone": "z2"}]}
    cleanup.update("p/tpu", two_zones, props("a"))
    assert api.deleted == []
    cleanup.update("p/tpu", props("a", "b"), props("a"))
    assert api.deleted == ["tpu-b-0"]


def test_the_cpu_cleanup_exists_only_with_cpu_nodesets_and_runs_between_controller_and_network():
    assert not [r for r in build_graph(stack()) if r.name == "slurm-compute-cleanup"]
    graph = build_graph(
        stack(
            cpuNodesets=[{"name": "cpu", "zones": ["us-central2-b", "us-central2-c"]}],
            partitions=[{"name": "tpu", "nodesets": ["v4"]}, {"name": "cpu", "nodesets": ["cpu"]}],
        )
    )
    cleanup = graph.named("slurm-compute-cleanup")
    assert cleanup.type == "pulumi-python:dynamic/slurm:ComputeCleanup", cleanup.urn
    assert cleanup.inputs["nodesets"] == [
        {"name": "cpu", "zone": "us-central2-b"},
        {"name": "cpu", "zone": "us-central2-c"},
    ]
    assert cleanup.urn in graph.named("slurm-controller").dependencies, cleanup.urn
    for before in ("network-subnet", "slurm-cpu-sa", "slurm-template-cpu"):
        assert graph.named(before).urn in cleanup.dependencies, before


# Flex-start groups of GPU nodesets

REGION = "us-central2"
A3 = "https://www.googleapis.com/compute/v1/projects/p/global/instanceTemplates/tpu-a3-0123456789"


def group(name: str, template: str = A3) -> compute.InstanceGroupManager:
    """A group as mig_flex.py creates it: its template in `versions`, none at the top."""
    return compute.InstanceGroupManager(
        name=name, versions=[compute.InstanceGroupManagerVersion(instance_template=template)]
    )


class FakeGroupsClient:
    """`compute_v1.RegionInstanceGroupManagersClient` as cleanup calls it: groups go `lag`
    listings after their delete is accepted; `busy` groups refuse their first delete (a
    resize in flight), `gone` ones are already deleted, `flaky` listings fail with 503."""

    def __init__(
        self,
        groups: list[compute.InstanceGroupManager],
        *,
        lag: int = 0,
        busy: tuple[str, ...] = (),
        gone: tuple[str, ...] = (),
        flaky: int = 0,
    ) -> None:
        self.groups = {g.name: g for g in groups}
        self.deleted: list[str] = []
        self.pending: dict[str, int] = {}
        self.lag, self.busy, self.gone, self.flaky = lag, set(busy), gone, flaky

    def list(self, *, project: str, region: str, timeout: float) -> list[Any]:
        assert (project, region, timeout) == ("p", REGION, CALL_TIMEOUT_SECONDS)
        if self.flaky:
            self.flaky -= 1
            raise api_exceptions.ServiceUnavailable("try again")
        for name in list(self.pending):
            self.pending[name] -= 1
            if self.pending[name] < 0:
                del self.pending[name], self.groups[name]
        return list(self.groups.values())

    def delete(
        self, *, project: str, region: str, instance_group_manager: str, timeout: float
    ) -> Any:
        assert (project, region, timeout) == ("p", REGION, CALL_TIMEOUT_SECONDS)
        self.deleted.append(instance_group_manager)
        if instance_group_manager in self.gone:
            self.groups.pop(instance_group_manager, None)
            raise api_exceptions.NotFound(instance_group_manager)
        if instance_group_manager in self.busy:
            self.busy.discard(instance_group_manager)
            raise api_exceptions.BadRequest("resourceNotReady")
        self.pending[instance_group_manager] = self.lag
        return object()


def flex_provider(api: FakeGroupsClient, **kwargs: Any) -> FlexCleanupProvider:
    return FlexCleanupProvider(client_factory=lambda: api, sleep=lambda _: None, **kwargs)


def test_only_the_groups_the_controller_made_for_the_nodeset_are_owned():
    groups = [
        group("tpu-a3-1a2b3c4d"),
        group("tpu-a3-job-17-0f0f0f0f"),
        group("tpu-a3-1a2b3c4"),  # not mig_flex.py's eight hex digits
        group("tpu-a3-job-17-0f0f0f0f-x"),
        group("tpu-a3-deadbeef", template=A3.replace("tpu-a3-", "other-a3-")),
        group("tpu-a3x-1a2b3c4d"),
    ]
    assert owned_groups(groups, "tpu", "a3") == ["tpu-a3-1a2b3c4d", "tpu-a3-job-17-0f0f0f0f"]


def test_destroy_deletes_the_flex_groups_through_busy_and_transient_answers():
    api = FakeGroupsClient(
        [group("tpu-a3-1a2b3c4d"), group("tpu-a3-job-2-00000000"), group("keep-me")],
        lag=1,
        busy=("tpu-a3-1a2b3c4d",),
        gone=("tpu-a3-job-2-00000000",),
        flaky=1,
    )
    flex_provider(api).delete("p/tpu", props("a3"))
    assert list(api.groups) == ["keep-me"]
    assert api.deleted.count("tpu-a3-1a2b3c4d") == 2


def test_flex_cleanup_gives_up_loudly_and_dropping_a_nodeset_deletes_only_its_groups():
    api = FakeGroupsClient([group("tpu-a3-1a2b3c4d")], lag=10**6)
    with pytest.raises(TimeoutError, match=r"flex-start instance groups .* tpu-a3-1a2b3c4d"):
        flex_provider(api, wait_seconds=30).delete("p/tpu", props("a3"))
    api = FakeGroupsClient(
        [group("tpu-a3-1a2b3c4d"), group("tpu-b-1a2b3c4d", A3.replace("a3", "b"))]
    )
    flex_provider(api).update("p/tpu", props("a3", "b"), props("a3"))
    assert api.deleted == ["tpu-b-1a2b3c4d"]
