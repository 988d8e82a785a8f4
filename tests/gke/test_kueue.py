"""JobSet and Kueue: installs, flavors and quotas derived from the slices, schema validity."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from components.gke.kueue import CHARTS, MANAGED_NAMESPACE_LABEL
from components.gke.quota import tpu_flavor_name
from graph.engine import Graph, list_stacks, load_stack_config
from stacks.loading import parse
from tests.conftest import build_graph, with_config
from workload.schemas import validate

KUEUE = "kueue.x-k8s.io/v1beta2"
# us-central1 offers every family: v5p and v5e in -a, v6e in -b, tpu7x in -c.
MIXED = {
    "gcp:region": "us-central1",
    "gcp:zone": "us-central1-a",
}
MIXED |= dict(
    tpuSlices=[
        {"name": "big", "accelerator": "v5p-32", "count": 4},
        {"name": "big2", "accelerator": "v5p-32", "provisioning": "spot", "count": 3},
        {
            "name": "flex",
            "accelerator": "v6e-16",
            "provisioning": "flex-start",
            "count": 2,
            "zone": "us-central1-b",
            # GKE lists no us-central1 zone for flex-start v6e; the escape hatch keeps every
            # family in one region here.
            "allowUnlistedZone": True,
        },
        {"name": "iron", "accelerator": "tpu7x-16", "zone": "us-central1-c", "count": 2},
        {"name": "idle", "accelerator": "v5litepod-16", "count": 0},
    ],
    gpuPools=[
        {
            "name": "l4",
            "machineType": "g2-standard-24",
            "acceleratorType": "nvidia-l4",
            "acceleratorCount": 2,
            "maxNodes": 3,
        }
    ],
    teams=[
        {"name": "alpha", "quota": {"big": 16, "flex": "50%"}},
        {"name": "beta", "quota": {"l4": 0.5}},
        {"name": "gamma"},
    ],
    cluster={"maxPodsPerNode": 32},
)


def kueue_objects(graph: Graph) -> list[tuple[str, dict[str, Any]]]:
    """(urn, object) for every Kueue object the program renders."""
    found = []
    for r in graph:
        if r.type.startswith(f"kubernetes:{KUEUE}:"):
            obj = {
                "apiVersion": KUEUE,
                "kind": r.type.rsplit(":", 1)[1],
                "metadata": r.inputs["metadata"],
                "spec": r.inputs.get("spec", {}),
            }
            found.append((r.urn, obj))
        elif r.type == "kubernetes:yaml/v2:ConfigGroup":
            found += [(r.urn, obj) for obj in r.inputs["objs"]]
    return found


def objects_of(graph: Graph, kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for _, o in kueue_objects(graph) if o["kind"] == kind}


def nominal(queue: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """flavor -> resource -> nominalQuota."""
    out: dict[str, dict[str, Any]] = {}
    for group in queue["spec"].get("resourceGroups", []):
        for flavor in group["flavors"]:
            for res in flavor["resources"]:
                out.setdefault(flavor["name"], {})[res["name"]] = res["nominalQuota"]
    return out


@pytest.fixture(scope="module")
def mixed() -> Graph:
    return build_graph(with_config(**MIXED))


@pytest.mark.parametrize("stack", list_stacks())
def test_every_kueue_object_of_every_stack_matches_the_upstream_crd(stack):
    graph = build_graph(load_stack_config(stack), stack=stack)
    objects = kueue_objects(graph)
    assert {o["kind"] for _, o in objects} >= {
        "ResourceFlavor",
        "ClusterQueue",
        "LocalQueue",
        "Cohort",
        "WorkloadPriorityClass",
    }
    for urn, obj in objects:
        assert validate(obj) == [], urn


def test_mixed_stack_objects_match_the_upstream_crd(mixed):
    objects = kueue_objects(mixed)
    assert {"AdmissionCheck", "ProvisioningRequestConfig"} <= {o["kind"] for _, o in objects}
    for urn, obj in objects:
        assert validate(obj) == [], urn


def test_flavor_per_shape_and_capacity(mixed):
    flavors = objects_of(mixed, "ResourceFlavor")
    assert set(flavors) == {
        "cpu",
        "v5p-32",
        "v6e-16-flex-start",
        "tpu7x-16",
        "v5litepod-16",
        "gpu-l4",
    }
    v5p = flavors["v5p-32"]["spec"]
    assert v5p["nodeLabels"] == {
        "cloud.google.com/gke-tpu-accelerator": "tpu-v5p-slice",
        "cloud.google.com/gke-tpu-topology": "2x2x4",
    }
    assert v5p["tolerations"] == [
        {"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}
    ]
    flex = flavors["v6e-16-flex-start"]["spec"]
    assert {
        "key": "cloud.google.com/gke-queued",
        "operator": "Exists",
        "effect": "NoSchedule",
    } in flex["tolerations"]
    assert flavors["gpu-l4"]["spec"]["nodeLabels"] == {"cloud.google.com/gke-nodepool": "l4"}
    assert flavors["cpu"]["spec"] == {}


def test_each_slice_pool_is_selected_by_exactly_its_flavor(mixed):
    """A flavor's node labels must be ones its pools' nodes carry: the labels GKE sets from the
    machine type and topology (from the catalog) plus the labels we set on the pool."""
    config = parse(with_config(**MIXED), "test")
    slices = {s.name: s for s in config.tpu_slices}
    flavors = {
        name: f["spec"].get("nodeLabels", {})
        for name, f in objects_of(mixed, "ResourceFlavor").items()
        if name != "cpu"
    }
    pools = [
        p
        for p in mixed.of_type("gcp:container/nodePool:NodePool")
        if "ai-infra/slice" in p.inputs["nodeConfig"]["labels"]
    ]
    assert len(pools) == 11  # big 4, big2 3, flex 2, iron 2
    for pool in pools:
        labels = dict(pool.inputs["nodeConfig"]["labels"])
        slice_ = slices[labels["ai-infra/slice"]]
        labels |= slice_.shape.node_labels | {"cloud.google.com/gke-nodepool": pool.inputs["name"]}
        selecting = [name for name, wanted in flavors.items() if wanted.items() <= labels.items()]
        assert selecting == [tpu_flavor_name(slice_)], pool.urn


def test_quota_of_each_flavor_across_queues_equals_the_chips_of_its_slices(mixed):
    config = parse(with_config(**MIXED), "test")
    queues = objects_of(mixed, "ClusterQueue")
    cohort = objects_of(mixed, "Cohort")["ai-infra"]
    # Capacity per flavor from the catalog: hosts x chips per host x count, per slice entry.
    expected: dict[str, int] = {}
    for slice_ in config.tpu_slices:
        shape = slice_.shape
        flavor = tpu_flavor_name(slice_)
        expected[flavor] = expected.get(flavor, 0) + shape.hosts * shape.chips_per_host * (
            slice_.count
        )
    for pool in config.gpu_pools:
        expected[f"gpu-{pool.name}"] = pool.max_nodes * pool.accelerator_count
    assert expected == {
        "v5p-32": 112,
        "v6e-16-flex-start": 32,
        "tpu7x-16": 16,
        "v5litepod-16": 0,
        "gpu-l4": 6,
    }
    assert set(expected) == set(objects_of(mixed, "ResourceFlavor")) - {"cpu"}
    for flavor, chips in expected.items():
        resource = "nvidia.com/gpu" if flavor.startswith("gpu") else "google.com/tpu"
        total = sum(nominal(q)[flavor][resource] for q in queues.values())
        total += nominal(cohort)[flavor][resource]
        assert total == chips, flavor
    # In whole 16-chip slices: big (4 slices) gives alpha 1, beta and gamma 1 each, and the
    # cohort the fourth; big2 (3 slices) one to each team.
    assert nominal(queues["alpha"])["v5p-32"]["google.com/tpu"] == 16 + 16
    assert nominal(queues["alpha"])["v6e-16-flex-start"]["google.com/tpu"] == 16
    assert nominal(queues["beta"])["gpu-l4"]["nvidia.com/gpu"] == 3
    # gamma names nothing: it gets an even split, in whole slices, of what others did not.
    assert nominal(queues["gamma"])["v5p-32"]["google.com/tpu"] == 16 + 16
    assert nominal(cohort)["v5p-32"]["google.com/tpu"] == 16
    # Two 8-chip tpu7x-16 slices do not divide three ways: the cohort holds both.
    assert nominal(queues["gamma"])["tpu7x-16"]["google.com/tpu"] == 0
    assert nominal(cohort)["tpu7x-16"]["google.com/tpu"] == 16


def test_count_zero_keeps_the_flavor_with_zero_quota(mixed):
    queues = objects_of(mixed, "ClusterQueue")
    assert all(nominal(q)["v5litepod-16"]["google.com/tpu"] == 0 for q in queues.values())


def test_cohort_holds_what_no_team_receives():
    graph = build_graph(
        with_config(
            tpuSlices=[{"name": "s", "accelerator": "v5p-16"}],
            teams=[{"name": "a", "quota": {"s": 4}}, {"name": "b", "quota": {"s": "25%"}}],
        )
    )
    cohort = objects_of(graph, "Cohort")["ai-infra"]
    assert nominal(cohort)["v5p-16"]["google.com/tpu"] == 8 - 4 - 2


def test_cluster_queues_share_a_cohort_borrow_and_preempt(mixed):
    for name, queue in objects_of(mixed, "ClusterQueue").items():
        spec = queue["spec"]
        assert spec["cohortName"] == "ai-infra"
        assert spec["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": name}}
        assert spec["preemption"]["reclaimWithinCohort"] == "Any"
        assert spec["preemption"]["withinClusterQueue"] == "LowerPriority"
        for group in spec["resourceGroups"]:
            for flavor in group["flavors"]:
                for res in flavor["resources"]:
                    assert "borrowingLimit" not in res and "lendingLimit" not in res
        assert spec["admissionChecksStrategy"] == {
            "admissionChecks": [{"name": "flex-start", "onFlavors": ["v6e-16-flex-start"]}]
        }


def test_flex_start_admission_check_and_provisioning_config(mixed):
    config = objects_of(mixed, "ProvisioningRequestConfig")["flex-start"]["spec"]
    assert config == {
        "provisioningClassName": "queued-provisioning.gke.io",
        "managedResources": ["google.com/tpu"],
        "podSetUpdates": {
            "nodeSelector": [
                {
                    "key": "autoscaling.gke.io/provisioning-request",
                    "valueFromProvisioningClassDetail": "ResizeRequestName",
                }
            ]
        },
    }
    check = objects_of(mixed, "AdmissionCheck")["flex-start"]["spec"]
    assert check["controllerName"] == "kueue.x-k8s.io/provisioning-request"
    assert check["parameters"]["name"] == "flex-start"


def test_no_admission_check_without_flex_start():
    graph = build_graph(
        with_config(tpuSlices=[{"name": "s", "accelerator": "v5p-8"}], teams=[{"name": "a"}])
    )
    assert not objects_of(graph, "AdmissionCheck")
    assert "admissionChecksStrategy" not in objects_of(graph, "ClusterQueue")["a"]["spec"]


def test_priority_classes(mixed):
    classes = objects_of(mixed, "WorkloadPriorityClass")
    assert {n: c["value"] for n, c in classes.items()} == {
        "low": 100,
        "normal": 1000,
        "high": 10000,
    }


def test_releases_are_pinned_and_configured(mixed):
    jobset = mixed.named("batch-jobset").inputs
    kueue = mixed.named("batch-kueue").inputs
    assert (jobset["chart"], jobset["version"], jobset["namespace"], jobset["name"]) == (
        "oci://registry.k8s.io/jobset/charts/jobset",
        CHARTS["jobset"].version,
        "jobset-system",
        "jobset",
    )
    assert (kueue["chart"], kueue["version"], kueue["namespace"], kueue["name"]) == (
        "oci://registry.k8s.io/kueue/charts/kueue",
        CHARTS["kueue"].version,
        "kueue-system",
        "kueue",
    )
    assert CHARTS["kueue"].version.startswith("0.19.")
    assert CHARTS["jobset"].version.startswith("0.12.")
    manager = yaml.safe_load(kueue["values"]["managerConfig"]["controllerManagerConfigYaml"])
    assert "jobset.x-k8s.io/jobset" in manager["integrations"]["frameworks"]
    assert manager["managedJobsNamespaceSelector"] == {
        "matchLabels": {MANAGED_NAMESPACE_LABEL: "true"}
    }
    assert manager["webhook"]["port"] == 9443
    # On the system pool, whose taint they tolerate (charts' controllerManager.tolerations and
    # controller.tolerations).
    toleration = {
        "key": "components.gke.io/gke-managed-components",
        "operator": "Equal",
        "value": "true",
        "effect": "NoSchedule",
    }
    for values in (kueue["values"]["controllerManager"], jobset["values"]["controller"]):
        assert values["nodeSelector"] == {"cloud.google.com/gke-nodepool": "system"}
        assert values["tolerations"] == [toleration]


def _reaches(graph: Graph, start: str, target: str) -> bool:
    seen, todo = set(), [start]
    while todo:
        urn = todo.pop()
        if urn == target:
            return True
        if urn in seen:
            continue
        seen.add(urn)
        r = graph.by_urn(urn)
        todo += list(r.dependencies)
        if r.parent in graph.urns:
            todo.append(r.parent)
    return False


def test_installs_wait_for_the_system_pool_and_webhook_firewall_but_never_for_slices(mixed):
    kueue = mixed.named("batch-kueue")
    jobset = mixed.named("batch-jobset")
    cpu = mixed.named("gke-system").urn
    assert cpu in kueue.dependencies and cpu in jobset.dependencies
    # Kueue sets up its JobSet integration once the CRD appears: the two install side by side.
    assert not _reaches(mixed, kueue.urn, jobset.urn)
    assert mixed.named("network-allow-webhooks").urn in kueue.dependencies
    slice_pools = [
        p.urn
        for p in mixed.of_type("gcp:container/nodePool:NodePool")
        if p.name not in ("gke-cpu", "gke-system")
    ]
    assert slice_pools
    queue_objects = [r for r in mixed if r.type.startswith(f"kubernetes:{KUEUE}:")]
    for r in [kueue, jobset, *queue_objects]:
        for pool in slice_pools:
            assert not _reaches(mixed, r.urn, pool), f"{r.urn} waits for {pool}"


def test_every_kueue_object_waits_for_the_kueue_release(mixed):
    release = mixed.named("batch-kueue").urn
    for r in mixed:
        if r.type.startswith(f"kubernetes:{KUEUE}:") or r.type.endswith("ConfigGroup"):
            assert release in r.dependencies, r.urn


def test_kubernetes_objects_use_the_cluster_provider(mixed):
    (provider,) = mixed.of_type("pulumi:providers:kubernetes")
    for r in mixed:
        if r.type.startswith("kubernetes:") and r.custom:
            assert r.provider.startswith(provider.urn), r.urn


def test_kueue_keeps_the_charts_client_and_concurrency_defaults(mixed):
    """The manager config replaces the chart's document; it repeats the chart's v0.19.2
    values instead of lowering them."""
    values = mixed.named("batch-kueue").inputs["values"]
    manager = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    assert manager["clientConnection"] == {"qps": 300, "burst": 500}
    assert manager["controller"]["groupKindConcurrency"]["Workload.kueue.x-k8s.io"] == 10
    assert manager["controller"]["groupKindConcurrency"]["ClusterQueue.kueue.x-k8s.io"] == 5


def _ancestors(graph: Graph, urn: str) -> set[str]:
    """Everything `urn` waits for, directly or through what it waits for."""
    seen: set[str] = set()
    todo = [urn]
    while todo:
        r = graph.by_urn(todo.pop())
        for dep in r.dependencies:
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return seen


def test_fresh_dev_stack_critical_path():
    """network -> cluster -> max(slice pools, CPU pool -> Kueue -> queues): slices start
    beside the CPU pool, Kueue beside JobSet, and queues never wait for slices."""
    graph = build_graph(load_stack_config("dev"), stack="dev")
    subnet, cluster = graph.named("network-subnet").urn, graph.named("gke-cluster").urn
    cpu, jobset = graph.named("gke-system").urn, graph.named("batch-jobset").urn
    kueue = graph.named("batch-kueue").urn
    slice_pool = graph.named("tpu-v5e-dev-pool").urn
    assert subnet in _ancestors(graph, cluster)
    assert cluster in _ancestors(graph, slice_pool)
    assert cpu not in _ancestors(graph, slice_pool)
    assert {cluster, cpu} <= _ancestors(graph, kueue)
    assert jobset not in _ancestors(graph, kueue)
    for queue in objects_of_type(graph, "ClusterQueue"):
        assert kueue in _ancestors(graph, queue)
        assert slice_pool not in _ancestors(graph, queue)


def objects_of_type(graph: Graph, kind: str) -> list[str]:
    return [r.urn for r in graph if r.type == f"kubernetes:{KUEUE}:{kind}"]


def test_wait_for_pods_ready_is_explicit_and_outlasts_a_provisioned_slice(mixed):
    """Kueue 0.19 turns waitForPodsReady on at 30 minutes when the config omits it; the
    program sets every field, with room for the provisioner's 30-minute node-pool wait."""
    values = mixed.named("batch-kueue").inputs["values"]
    manager = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    ready = manager["waitForPodsReady"]
    # The json names of Kueue's WaitForPodsReady and RequeuingStrategy (v0.19.2).
    assert set(ready) == {"timeout", "blockAdmission", "recoveryTimeout", "requeuingStrategy"}
    assert set(ready["requeuingStrategy"]) == {
        "timestamp",
        "backoffLimitCount",
        "backoffBaseSeconds",
        "backoffMaxSeconds",
    }
    minutes = int(ready["timeout"].removesuffix("m"))
    assert minutes > 30  # the provisioner's waitForGkeOp
    assert ready["recoveryTimeout"] == ready["timeout"]
    assert ready["blockAdmission"] is False
    strategy = ready["requeuingStrategy"]
    assert strategy["timestamp"] == "Eviction"
    assert 0 < strategy["backoffLimitCount"] < 10
    assert strategy["backoffBaseSeconds"] <= strategy["backoffMaxSeconds"]
