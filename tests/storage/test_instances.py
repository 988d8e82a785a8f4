"""What the stack creates for its volumes: private services access in its VPC, Filestore and
Lustre instances provisioned through it, LNet admitted from its range alone, the APIs they
need, and protection in production; and nothing at all for a stack without storage."""

from __future__ import annotations

import pytest

from graph.engine import Graph, peered_address
from graph.reachability import matrix
from tests.conftest import build_graph, with_config
from tests.storage.stack import RANGE, VOLUMES, config, storage


@pytest.fixture(scope="module")
def graph() -> Graph:
    return build_graph(config())


def test_private_services_access_allocates_the_configured_range_in_the_stacks_vpc(graph):
    allocated = graph.named("storage-psa-range")
    assert allocated.inputs["purpose"] == "VPC_PEERING"
    assert allocated.inputs["addressType"] == "INTERNAL"
    assert f"{allocated.inputs['address']}/{int(allocated.inputs['prefixLength'])}" == RANGE
    vpc = graph.named("network-vpc")
    assert vpc.urn in allocated.property_dependencies["network"]
    connection = graph.named("storage-psa")
    assert connection.inputs["service"] == "servicenetworking.googleapis.com"
    assert connection.inputs["reservedPeeringRanges"] == ["ai-test-storage-psa"]


def test_instances_are_provisioned_through_the_peering(graph):
    connection = graph.named("storage-psa").urn
    filestore = graph.named("storage-shared")
    assert filestore.inputs["tier"] == "ZONAL"
    shares = filestore.inputs["fileShares"]
    assert (shares["name"], shares["capacityGb"]) == ("share", 1024)
    (network,) = filestore.inputs["networks"]
    assert network["connectMode"] == "PRIVATE_SERVICE_ACCESS"
    assert network["reservedIpRange"] == "ai-test-storage-psa"
    lustre = graph.named("storage-scratch")
    assert lustre.inputs["network"] == "projects/test-project/global/networks/ai-test-vpc"
    assert lustre.inputs["perUnitStorageThroughput"] == "500"
    assert lustre.inputs["capacityGib"] == "18000"
    assert lustre.inputs["location"] == "us-central1-a"
    assert "gkeSupportEnabled" not in lustre.inputs
    assert lustre.custom_timeouts["create"] == "60m"
    for instance in (filestore, lustre):
        assert connection in instance.dependencies, instance.urn
        assert instance.inputs["labels"]["ai-infra-stack"] == "ai-test"


def test_lnet_is_admitted_from_the_private_services_range_to_the_lustre_clients_only(graph):
    rule = graph.named("storage-allow-lustre")
    assert rule.inputs["sourceRanges"] == [RANGE]
    assert rule.inputs["allows"] == [{"protocol": "tcp", "ports": ["988"]}]
    assert rule.inputs["direction"] == "INGRESS"
    # Only pretrain mounts the Lustre volume, through GKE's nodes.
    assert rule.inputs["targetTags"] == ["ai-test-gke-node"]


def test_a_share_exports_to_the_stacks_subnet_and_its_clients_alone_reach_it(graph):
    share = graph.named("storage-shared")
    assert share.inputs["fileShares"]["nfsExportOptions"] == [
        {"ipRanges": ["10.129.0.0/20"], "accessMode": "READ_WRITE", "squashMode": "NO_ROOT_SQUASH"}
    ]
    deny = graph.named("storage-shared-deny")
    allow = graph.named("storage-shared-clients")
    address = share.outputs["networks"][0]["ipAddresses"][0]
    assert (
        deny.inputs["destinationRanges"] == allow.inputs["destinationRanges"] == [f"{address}/32"]
    )
    assert deny.inputs["denies"] == [{"protocol": "all"}] and "targetTags" not in deny.inputs
    assert allow.inputs["targetTags"] == ["ai-test-gke-node"]
    assert allow.inputs["priority"] < deny.inputs.get("priority", 1000)


def test_a_slurm_cluster_that_mounts_a_volume_is_among_its_clients():
    slurm = {
        "clusterName": "hpc",
        "storage": [{"volume": "shared", "mountPath": "/shared"}],
        "tpuNodesets": [
            {"name": "v2", "nodeType": "v2-8", "zone": "us-central1-b", "nodeCountDynamicMax": 1}
        ],
        "partitions": [{"name": "tpu", "nodesets": ["v2"]}],
    }
    graph = build_graph(config(slurm=slurm))
    allow = graph.named("storage-shared-clients")
    assert allow.inputs["targetTags"] == ["ai-test-gke-node", "hpc"]


def test_the_apis_the_instances_need_are_enabled(graph):
    services = {r.inputs["service"] for r in graph.of_type("gcp:projects/service:Service")}
    assert {"servicenetworking.googleapis.com", "lustre.googleapis.com"} <= services


def test_a_protected_stack_protects_its_instances():
    graph = build_graph(config(protect=True))
    for name in ("storage-shared", "storage-scratch"):
        assert graph.named(name).protect, name


def test_a_stack_without_storage_registers_no_storage_and_enables_no_more_apis():
    graph = build_graph(with_config())
    assert not [r.urn for r in graph if ":storage:" in r.type or "servicenetworking" in r.type]
    services = {r.inputs["service"] for r in graph.of_type("gcp:projects/service:Service")}
    assert "lustre.googleapis.com" not in services


def test_attached_buckets_and_instances_create_no_peering():
    graph = build_graph(
        config(
            storage={
                "volumes": [
                    {"name": "data", "bucket": "datasets"},
                    {"name": "old", "existingLustre": {"instance": "legacy"}},
                ]
            }
        )
    )
    assert not graph.of_type("gcp:servicenetworking/connection:Connection")
    assert not graph.of_type("gcp:lustre/instance:Instance")


def test_the_stack_outputs_say_where_each_volume_is_served(graph):
    outputs = graph.outputs or {}
    scratch = f"{peered_address('ai-test-scratch')}@tcp:/scratch"
    assert outputs["storage"]["scratch"] == {"kind": "lustre", "source": scratch}
    assert outputs["storage"]["data"] == {"kind": "gcs", "source": "test-project-ai-test-datasets"}
    assert outputs["storage"]["old-nfs"]["source"] == f"{peered_address('legacy-nfs')}:/share"


def test_a_share_nobody_mounts_is_denied_to_every_vm_and_opened_to_none():
    volumes = [v for v in VOLUMES if v["name"] != "shared"]
    volumes.append({"name": "shared", "filestore": {"capacityGib": 1024}})
    graph = build_graph(config(storage=storage(volumes=volumes)))
    graph.named("storage-shared-deny")
    assert not [r.urn for r in graph if r.name == "storage-shared-clients"]


def test_who_reaches_a_share_is_who_mounts_it():
    """The reachability the plan computes from the registered rules: GKE's nodes (a team's
    volume) and the Slurm cluster that mounts the share reach it; nothing else does, and the
    share's users reach no other system's share."""
    slurm = {
        "clusterName": "hpc",
        "storage": [{"volume": "shared", "mountPath": "/shared"}],
        "tpuNodesets": [
            {"name": "v2", "nodeType": "v2-8", "zone": "us-central1-b", "nodeCountDynamicMax": 1}
        ],
        "partitions": [{"name": "tpu", "nodesets": ["v2"]}],
    }
    pairs = matrix(build_graph(config(slurm=slurm)))
    reaching = {a for (a, b) in pairs if b == "Filestore ai-test-shared"}
    assert reaching == {
        "GKE nodes",
        "Slurm hpc controller",
        "Slurm hpc login",
        "Slurm hpc TPU nodes",
    }
    assert {a for (a, b) in pairs if b == "Filestore ai-test-slurm-hpc-home"} == {
        "Slurm hpc controller",
        "Slurm hpc login",
        "Slurm hpc TPU nodes",
    }
