"""Every shipped Pulumi.<env>.yaml builds under the mock engine with unique URNs and holds the
security invariants the product promises."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import pytest

from components.services import IMAGE_STREAMING_SERVICE, REQUIRED_SERVICES
from components.storage import STORAGE_SERVICES
from components.types import BASIC_ROLES
from graph.engine import Graph, list_stacks, load_stack_config
from stacks.loading import parse
from tests.conftest import build_graph

STACKS = list_stacks()
NODE_POOL = "gcp:container/nodePool:NodePool"
CLUSTER = "gcp:container/cluster:Cluster"
BUCKET = "gcp:storage/bucket:Bucket"


@pytest.fixture(scope="module", params=STACKS)
def stack(request) -> tuple[str, Graph]:
    return request.param, build_graph(load_stack_config(request.param), stack=request.param)


def test_dev_and_prod_ship():
    assert {"dev", "prod"} <= set(STACKS)


def test_cluster_is_private_vpc_native_with_workload_identity(stack):
    name, graph = stack
    (cluster,) = graph.of_type(CLUSTER)
    inputs = cluster.inputs
    project = load_stack_config(name)["gcp:project"]
    assert inputs["privateClusterConfig"]["enablePrivateNodes"] is True, cluster.urn
    assert inputs["networkingMode"] == "VPC_NATIVE", cluster.urn
    assert inputs["ipAllocationPolicy"]["clusterSecondaryRangeName"] == "pods"
    assert inputs["workloadIdentityConfig"]["workloadPool"] == f"{project}.svc.id.goog"
    assert inputs["enableShieldedNodes"] is True
    assert inputs["removeDefaultNodePool"] is True
    assert not inputs.get("enableLegacyAbac")


def test_no_pool_runs_as_the_default_compute_service_account(stack):
    name, graph = stack
    (node_sa,) = [
        r for r in graph.of_type("gcp:serviceaccount/account:Account") if r.name == "gke-nodes-sa"
    ]
    prefix = parse(load_stack_config(name), name).prefix
    project = load_stack_config(name)["gcp:project"]
    email = f"{prefix}-nodes@{project}.iam.gserviceaccount.com"
    assert node_sa.inputs["accountId"] == f"{prefix}-nodes"
    (cluster,) = graph.of_type(CLUSTER)
    configs = [(cluster.urn, cluster.inputs["nodeConfig"])]
    configs += [(p.urn, p.inputs["nodeConfig"]) for p in graph.of_type(NODE_POOL)]
    # A team's own slices run as that team's node account (tpuSlices[].team).
    own = {
        p.urn: f"{prefix}-{p.inputs['nodeConfig']['labels']['ai-infra/dedicated']}-nodes@"
        f"{project}.iam.gserviceaccount.com"
        for p in graph.of_type(NODE_POOL)
        if "ai-infra/dedicated" in p.inputs["nodeConfig"].get("labels", {})
    }
    for urn, node_config in configs:
        assert node_config["serviceAccount"] == own.get(urn, email), urn
        assert node_config["workloadMetadataConfig"]["mode"] == "GKE_METADATA", urn
        assert node_config["shieldedInstanceConfig"]["enableSecureBoot"] is True, urn


def test_no_basic_roles_and_no_authoritative_iam(stack):
    _, graph = stack
    for r in graph:
        assert not r.type.endswith(("IAMBinding:IAMBinding", "IAMPolicy:IAMPolicy")), r.urn
        if "role" in r.inputs:
            assert r.inputs["role"] not in BASIC_ROLES, r.urn


def test_buckets_are_private_and_uniform(stack):
    name, graph = stack
    protect = parse(load_stack_config(name), name).protect
    for bucket in graph.of_type(BUCKET):
        assert bucket.inputs["uniformBucketLevelAccess"] is True, bucket.urn
        assert bucket.inputs["publicAccessPrevention"] == "enforced", bucket.urn
        assert bucket.protect is protect, bucket.urn
        if protect:
            assert bucket.inputs["forceDestroy"] is False, bucket.urn


def test_every_resource_waits_for_the_project_services(stack):
    name, graph = stack
    services = {r.urn for r in graph.of_type("gcp:projects/service:Service")}
    apis = {r.inputs["service"] for r in graph.of_type("gcp:projects/service:Service")}
    creates_storage = parse(load_stack_config(name), name).resolved_storage.needs_service_access
    storage = STORAGE_SERVICES if creates_storage else ()
    assert apis == {*REQUIRED_SERVICES, IMAGE_STREAMING_SERVICE, *storage}
    for r in graph:
        if r.custom and r.type != "gcp:projects/service:Service" and r.type.startswith("gcp:"):
            assert services & set(r.dependencies) or _depends_on_via(graph, r, services), r.urn


def _depends_on_via(graph: Graph, r, services: set[str]) -> bool:
    seen, todo = set(), list(r.dependencies)
    while todo:
        urn = todo.pop()
        if urn in services:
            return True
        if urn not in seen:
            seen.add(urn)
            todo.extend(graph.by_urn(urn).dependencies)
    return False


def test_prod_protects_the_cluster_and_buckets():
    graph = build_graph(load_stack_config("prod"), stack="prod")
    (cluster,) = graph.of_type(CLUSTER)
    assert cluster.protect and cluster.inputs["deletionProtection"] is True
    assert graph.of_type(BUCKET) and all(b.protect for b in graph.of_type(BUCKET))


def test_dev_is_cheap_and_disposable():
    config = parse(load_stack_config("dev"), "dev")
    assert config.protect is False and config.gke.tpu_chips <= 8
    graph = build_graph(load_stack_config("dev"), stack="dev")
    (cluster,) = graph.of_type(CLUSTER)
    assert cluster.inputs["deletionProtection"] is False and not cluster.protect
    (scratch,) = graph.of_type(BUCKET)
    assert scratch.inputs["forceDestroy"] is True
    binding = graph.named("wi-tpu-training-iam.workloadIdentityUser")
    assert binding.inputs["member"] == (
        "serviceAccount:ml-platform-dev.svc.id.goog[tpu-training/cloud-tpu-sa]"
    )


def test_gcp_labels_are_valid_gcp_labels(stack):
    """Kubernetes node labels may contain '/', GCP resource labels may not."""
    key = re.compile(r"^[a-z][-_a-z0-9]{0,62}$")
    _, graph = stack
    for r in graph:
        if not r.type.startswith("gcp:"):
            continue
        label_sets = [
            r.inputs.get("labels"),
            r.inputs.get("resourceLabels"),
            (r.inputs.get("nodeConfig") or {}).get("resourceLabels"),
        ]
        for labels in filter(None, label_sets):
            for k in labels:
                assert key.match(k), f"{r.urn}: label key {k!r}"


def test_type_tokens_name_the_system_or_module_and_class_they_come_from():
    """A component's type token is part of every child's URN: `ai-infra:<system>:<Class>` for
    a system's folder (`ai-infra:gke:TpuSlice`), `ai-infra:<module>:<Class>` for a shared
    module (`ai-infra:network:Network`)."""
    import components
    from components.base import Component

    found = {}
    for module in pkgutil.walk_packages(components.__path__, "components."):
        loaded = importlib.import_module(module.name)
        owner = module.name.split(".")[1]
        for cls in vars(loaded).values():
            defined_here = inspect.isclass(cls) and cls.__module__ == loaded.__name__
            if defined_here and issubclass(cls, Component) and cls is not Component:
                source = inspect.getsource(cls)
                (token,) = set(re.findall(r'__init__\(\s*"(ai-infra:[^"]+)"', source))
                found[token] = f"ai-infra:{owner}:{cls.__name__}"
    assert all(token == expected for token, expected in found.items()), found
    # Every system's folder is walked, not only the flat modules.
    assert {t.split(":")[1] for t in found} >= {
        "network",
        "buckets",
        "services",
        "gke",
        "tpu_vms",
        "gpu_clusters",
        "slurm",
    }, found
