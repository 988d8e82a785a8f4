"""GPU clusters as managed instance groups: what one `ai-infra:gpuClusters` entry registers, and
how an edit changes it (the refusals are `test_checks.py`)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from catalog import gpu as gpu_catalog
from catalog.gpu import TOPOLOGY_DISTANCES
from components.gpu_clusters.config import DEFAULT_IMAGE_FAMILY
from graph.engine import record_program
from plan.details import details
from plan.diff import Op
from plan.diff import diff as graph_diff
from stacks import environment, loading
from stacks.loading import parse
from tests.conftest import build_graph, with_config

TEMPLATE = "gcp:compute/instanceTemplate:InstanceTemplate"
MIG = "gcp:compute/instanceGroupManager:InstanceGroupManager"


FLEX = "pulumi-python:dynamic/compute:FlexCapacity"
POLICY = "gcp:compute/resourcePolicy:ResourcePolicy"
STARTUP = "pulumi-python:dynamic/compute:StartupWait"


def cluster_graph(**entry: Any):
    return build_graph(
        with_config(
            gpuClusters=[{"name": "demo", **entry}],
            buckets=[{"name": "data"}],
        )
    )


def children(graph, prefix: str = "gpucluster-demo"):
    """The cluster's resources by name: the mock engine records concurrent registrations in
    whatever order they arrive."""
    return sorted((r for r in graph if r.name.startswith(prefix)), key=lambda r: r.name)


def test_the_default_entry_is_the_tools_default_cluster():
    graph = cluster_graph()
    (template,) = graph.of_type(TEMPLATE)
    i = template.inputs
    assert i["machineType"] == "a2-highgpu-2g"
    assert i["guestAccelerators"] == [{"type": "nvidia-tesla-a100", "count": 2}]
    (disk,) = i["disks"]
    assert disk["sourceImage"] == (
        f"projects/deeplearning-platform-release/global/images/family/{DEFAULT_IMAGE_FAMILY}"
    )
    assert (disk["diskSizeGb"], disk["diskType"], disk["boot"]) == (2000, "pd-ssd", True)
    assert i["scheduling"]["onHostMaintenance"] == "TERMINATE"
    assert i["scheduling"]["automaticRestart"] is True
    assert i["scheduling"]["provisioningModel"] == "STANDARD"
    assert "reservationAffinity" not in i
    assert i["shieldedInstanceConfig"]["enableVtpm"] is True
    assert i["shieldedInstanceConfig"]["enableIntegrityMonitoring"] is True
    (nic,) = i["networkInterfaces"]
    assert nic["nicType"] == "GVNIC"
    assert not nic.get("accessConfigs"), "GPU VMs must have no public IP"
    assert nic["network"].endswith("ai-test-vpc")
    metadata = i["metadata"]
    assert metadata["enable-oslogin"] == "TRUE"
    assert metadata["install-nvidia-driver"] == "True"
    # The Jupyter proxy would let every project Editor in outside OS Login: off unless asked.
    assert "proxy-mode" not in metadata
    assert "install_ops_agent" in metadata["startup-script"]
    assert i["serviceAccount"]["email"] == "ai-test-demo-vm@test-project.iam.gserviceaccount.com"
    (mig,) = graph.of_type(MIG)
    assert (mig.inputs["targetSize"], mig.inputs["zone"]) == (1, "us-east5-a")
    # The boot disk is not stateful, so a recreated VM boots the template's (new) image.
    assert not mig.inputs.get("statefulDisks"), mig.urn
    # `pulumi up` waits for the VMs, create and update alike, and fails when they do not come.
    assert (mig.inputs["waitForInstances"], mig.inputs["waitForInstancesStatus"]) == (
        True,
        "STABLE",
    )
    assert mig.custom_timeouts == {"create": "30m", "update": "30m"}, mig.urn
    assert template.urn in mig.dependencies or any(template.name in d for d in mig.dependencies), (
        mig.urn
    )
    # One VM: no placement policy to create.
    assert not graph.of_type("gcp:compute/resourcePolicy:ResourcePolicy")


def test_the_service_account_is_least_privilege_and_per_member():
    graph = cluster_graph(gcsMounts=[{"bucket": "data", "mountPath": "/gcs/data"}])
    account = graph.named("gpucluster-demo-sa")
    assert account.inputs["accountId"] == "ai-test-demo-vm"
    roles = sorted(
        r.inputs["role"] for r in children(graph) if r.type == "gcp:projects/iAMMember:IAMMember"
    )
    assert roles == ["roles/logging.logWriter", "roles/monitoring.metricWriter"]
    (grant,) = [r for r in children(graph) if r.type.endswith("BucketIAMMember")]
    assert grant.name == "gpucluster-demo-bucket-data-storage.objectUser", grant.urn
    assert grant.inputs["bucket"] == "test-project-ai-test-data"
    assert grant.inputs["role"] == "roles/storage.objectUser"
    assert (
        grant.inputs["member"]
        == "serviceAccount:ai-test-demo-vm@test-project.iam.gserviceaccount.com"
    )
    # No authoritative IAM (Kubernetes' admission policy bindings are not IAM).
    assert not any(
        r.type.startswith("gcp:") and ("Binding" in r.type or "IAMPolicy" in r.type) for r in graph
    )


@pytest.mark.parametrize("read_only_first", [True, False])
def test_a_bucket_is_granted_once_with_the_widest_access_its_mounts_need(read_only_first):
    mounts = [
        {"bucket": "data", "mountPath": "/gcs/ro", "readOnly": True},
        {"bucket": "data", "mountPath": "/gcs/rw"},
    ]
    graph = cluster_graph(
        gcsMounts=[
            *(mounts if read_only_first else mounts[::-1]),
            {"bucket": "shared-corpus", "mountPath": "/gcs/corpus", "readOnly": True},
        ]
    )
    grants = {
        r.name: (r.inputs["bucket"], r.inputs["role"])
        for r in children(graph)
        if r.type.endswith("BucketIAMMember")
    }
    assert grants == {
        "gpucluster-demo-bucket-data-storage.objectUser": (
            "test-project-ai-test-data",
            "roles/storage.objectUser",
        ),
        # A bucket outside the stack, named in full.
        "gpucluster-demo-bucket-shared-corpus-storage.objectViewer": (
            "shared-corpus",
            "roles/storage.objectViewer",
        ),
    }


def test_ray_adds_only_the_read_access_its_head_election_needs():
    graph = cluster_graph(orchestrator="ray", instanceCount=2)
    (role,) = graph.of_type("gcp:projects/iAMCustomRole:IAMCustomRole")
    assert role.inputs["roleId"] == "ai_test_demo_ray"
    assert sorted(role.inputs["permissions"]) == [
        "compute.instanceGroupManagers.get",
        "compute.instanceGroupManagers.list",
    ]
    grants = {
        r.inputs["role"]: r for r in children(graph) if r.type == "gcp:projects/iAMMember:IAMMember"
    }
    assert set(grants) == {
        "roles/logging.logWriter",
        "roles/monitoring.metricWriter",
        "projects/test-project/roles/ai_test_demo_ray",
    }
    grant = grants["projects/test-project/roles/ai_test_demo_ray"]
    assert role.urn in grant.dependencies, grant.urn
    assert grant.urn in graph.of_type(TEMPLATE)[0].dependencies
    assert not any(r.inputs.get("role") == "roles/compute.viewer" for r in graph)
    script = graph.of_type(TEMPLATE)[0].inputs["metadata"]["startup-script"]
    # The election lists this stack's group, by the name that carries the stack's prefix.
    assert "group=ai-test-demo" in script and "list-instances" in script


def test_every_labelled_resource_carries_the_cluster_label():
    graph = cluster_graph(
        network="new",
        labels={"team": "vision"},
        nfsShares=[{"mountPath": "/nfs/home"}],
    )
    labelled = [r for r in children(graph) if "labels" in r.inputs]
    assert {r.type for r in labelled} >= {TEMPLATE, "gcp:filestore/instance:Instance"}
    for r in labelled:
        assert r.inputs["labels"]["aiinfra-cluster"] == "demo", r.urn
        assert r.inputs["labels"]["team"] == "vision", r.urn
        assert r.inputs["labels"]["managed-by"] == "pulumi", r.urn
    disk = graph.of_type(TEMPLATE)[0].inputs["disks"][0]
    assert disk["labels"]["aiinfra-cluster"] == "demo"


def test_new_network_has_its_own_vpc_nat_internal_rules_and_iap_ssh():
    graph = cluster_graph(network="new")
    vpcs = [r for r in children(graph) if r.type == "gcp:compute/network:Network"]
    assert [v.inputs["name"] for v in vpcs] == ["ai-test-demo-net0"]
    (subnet,) = [r for r in children(graph) if r.type.endswith("Subnetwork")]
    assert subnet.inputs["ipCidrRange"] == "10.130.0.0/20"
    assert [r.inputs["name"] for r in children(graph) if r.type.endswith("RouterNat")] == [
        "ai-test-demo-nat"
    ]
    rules = {r.inputs["name"]: r.inputs for r in children(graph) if r.type.endswith("Firewall")}
    assert rules["ai-test-demo-iap-ssh"]["sourceRanges"] == ["35.235.240.0/20"]
    assert rules["ai-test-demo-internal0"]["sourceRanges"] == ["10.130.0.0/20"]
    nic = graph.of_type(TEMPLATE)[0].inputs["networkInterfaces"][0]
    assert nic["network"].endswith("ai-test-demo-net0")


def test_multi_nic_makes_five_vpcs_by_default():
    graph = cluster_graph(network="multi-nic")
    vpcs = [r.inputs for r in children(graph) if r.type == "gcp:compute/network:Network"]
    assert len(vpcs) == 5 and all("mtu" not in v for v in vpcs)
    subnets = [r.inputs["ipCidrRange"] for r in children(graph) if r.type.endswith("Subnetwork")]
    assert subnets == [f"10.130.{16 * k}.0/20" for k in range(5)]
    nics = graph.of_type(TEMPLATE)[0].inputs["networkInterfaces"]
    assert len(nics) == 5 and all(n["nicType"] == "GVNIC" for n in nics)
    assert len([r for r in children(graph) if r.type.endswith("RouterNat")]) == 1


@pytest.mark.parametrize(
    ("machine", "gpus", "gpu_nics"), [("a3-highgpu-8g", 8, 4), ("a3-megagpu-8g", 8, 8)]
)
def test_a3_gets_its_gpudirect_nic_layout(machine, gpus, gpu_nics):
    gpu = gpu_catalog.fixed_gpus(machine)
    assert gpu is not None
    entry = {
        "network": "multi-nic",
        "machineType": machine,
        "gpuType": gpu.gpu_type,
        "gpuCount": gpus,
        "instanceCount": 2,
    }
    graph = cluster_graph(**entry)
    mtus = [r.inputs.get("mtu") for r in children(graph) if r.type == "gcp:compute/network:Network"]
    assert mtus == [8896] + [8244] * gpu_nics
    nics = graph.of_type(TEMPLATE)[0].inputs["networkInterfaces"]
    assert len(nics) == 1 + gpu_nics and all(n["nicType"] == "GVNIC" for n in nics)
    # On demand, neither a workload nor a compact policy is documented for A3 8-GPU groups.
    assert not graph.of_type("gcp:compute/resourcePolicy:ResourcePolicy")
    assert "resourcePolicies" not in graph.of_type(MIG)[0].inputs
    # Spot (or a reservation) groups are placed by a workload policy on the group.
    graph = cluster_graph(**entry, provisioning="spot")
    (policy,) = graph.of_type("gcp:compute/resourcePolicy:ResourcePolicy")
    assert policy.inputs["workloadPolicy"] == {"type": "HIGH_THROUGHPUT"}
    (mig,) = graph.of_type(MIG)
    assert mig.inputs["resourcePolicies"]["workloadPolicy"].endswith("ai-test-demo-placement")
    assert "resourcePolicies" not in graph.of_type(TEMPLATE)[0].inputs


@pytest.mark.parametrize(("distance", "topology"), [(1, "SUBBLOCK"), (2, "BLOCK"), (3, "CLUSTER")])
def test_a_workload_policy_takes_its_max_topology_distance(distance, topology):
    entry = {**A3_ULTRA, "provisioning": "spot", "instanceCount": 2}
    (policy,) = cluster_graph(**entry, placementMaxDistance=distance).of_type(POLICY)
    assert policy.inputs["workloadPolicy"] == {
        "type": "HIGH_THROUGHPUT",
        "maxTopologyDistance": topology,
    }
    assert policy.inputs["name"] == f"ai-test-demo-placement-{topology.lower()}"
    assert details(policy) == f"workload=HIGH_THROUGHPUT maxTopologyDistance={topology}"
    # Unset, Compute Engine places the VMs as close as capacity allows: no strict boundary.
    (loose,) = cluster_graph(**entry).of_type(POLICY)
    assert loose.inputs["workloadPolicy"] == {"type": "HIGH_THROUGHPUT"}


def test_a_new_max_topology_distance_moves_the_group_to_a_new_policy():
    """Every field of a workload policy replaces it, and a named one would be deleted first,
    while the group still uses it: each distance is a resource of its own, made before the
    group moves to it in place, the old one deleted last."""
    entry = {**A3_ULTRA, "provisioning": "spot", "instanceCount": 2}
    for was, now in ((None, 2), (3, 2), (2, None)):
        before = cluster_graph(**entry, placementMaxDistance=was)
        after = cluster_graph(**entry, placementMaxDistance=now)
        changes = [(c.op, c.resource.name) for c in graph_diff(before, after) if not c.is_component]
        new = "gpucluster-demo-placement" + (f"-{TOPOLOGY_DISTANCES[now].lower()}" if now else "")
        old = "gpucluster-demo-placement" + (f"-{TOPOLOGY_DISTANCES[was].lower()}" if was else "")
        assert changes == [
            (Op.CREATE, new),
            (Op.UPDATE, "gpucluster-demo-mig"),
            (Op.DELETE, old),
        ], changes


def test_compact_placement_only_with_more_than_one_vm_of_a_family_that_supports_it():
    graph = cluster_graph(instanceCount=4)
    (policy,) = graph.of_type("gcp:compute/resourcePolicy:ResourcePolicy")
    assert policy.inputs["groupPlacementPolicy"] == {"collocation": "COLLOCATED"}
    template = graph.of_type(TEMPLATE)[0]
    assert template.inputs["resourcePolicies"].endswith("ai-test-demo-placement")
    # Both Google tools turn automatic restart off with compact placement.
    assert template.inputs["scheduling"]["automaticRestart"] is False
    near = cluster_graph(instanceCount=20, placementMaxDistance=1)
    (policy,) = near.of_type("gcp:compute/resourcePolicy:ResourcePolicy")
    assert policy.inputs["groupPlacementPolicy"] == {"collocation": "COLLOCATED", "maxDistance": 1}
    assert graph.of_type(MIG)[0].inputs["targetSize"] == 4
    n1 = cluster_graph(
        machineType="n1-standard-16", gpuType="nvidia-tesla-t4", gpuCount=4, instanceCount=4
    )
    assert not n1.of_type("gcp:compute/resourcePolicy:ResourcePolicy")


def test_filestore_shares_are_in_the_zone_on_the_clusters_network_and_mounted():
    graph = cluster_graph(
        network="new",
        nfsShares=[
            {"mountPath": "/nfs/home", "tier": "BASIC_HDD", "sizeGb": 1024},
            {"mountPath": "/nfs/ent", "tier": "ENTERPRISE", "sizeGb": 1024},
        ],
    )
    shares = [r.inputs for r in children(graph) if r.type == "gcp:filestore/instance:Instance"]
    assert [(s["name"], s["tier"], s["location"]) for s in shares] == [
        ("ai-test-demo-nfs0", "BASIC_HDD", "us-east5-a"),
        ("ai-test-demo-nfs1", "ENTERPRISE", "us-east5"),
    ]
    # Its own VPC holds its VMs alone: the host subnet is who mounts it.
    assert shares[0]["fileShares"] == {
        "name": "share",
        "capacityGb": 1024,
        "nfsExportOptions": [
            {
                "ipRanges": ["10.130.0.0/20"],
                "accessMode": "READ_WRITE",
                "squashMode": "NO_ROOT_SQUASH",
            }
        ],
    }
    assert shares[0]["networks"][0]["network"] == "ai-test-demo-net0"
    script = graph.of_type(TEMPLATE)[0].inputs["metadata"]["startup-script"]
    assert "mount_nfs 192.0.2.2 share /nfs/home" in script


def test_spot_and_the_end_of_life_image():
    graph = cluster_graph(
        provisioning="spot", imageFamily="pytorch-1-12-gpu-debian-10", imageProject="ml-images"
    )
    i = graph.of_type(TEMPLATE)[0].inputs
    assert i["scheduling"]["provisioningModel"] == "SPOT"
    assert i["scheduling"]["instanceTerminationAction"] == "STOP"
    assert i["scheduling"]["automaticRestart"] is False
    # Debian 10 has no gVNIC driver.
    assert i["networkInterfaces"][0]["nicType"] == "VIRTIO_NET"
    assert i["disks"][0]["sourceImage"].endswith("family/pytorch-1-12-gpu-debian-10")


def test_two_clusters_have_distinct_names_everywhere():
    graph = build_graph(
        with_config(gpuClusters=[{"name": "a", "network": "new"}, {"name": "b", "network": "new"}])
    )
    names = [
        r.inputs["name"] for r in graph if r.name.startswith("gpucluster-") and "name" in r.inputs
    ]
    assert len(names) == len(set(names))


A4X = {
    "machineType": "a4x-highgpu-4g",
    "gpuType": "nvidia-gb200",
    "gpuCount": 4,
    "diskType": "hyperdisk-balanced",
    "imageFamily": "ubuntu-accelerator-2404-arm64-with-nvidia-580",
    "imageProject": "ubuntu-os-accelerator-images",
}
A3_ULTRA = {
    "machineType": "a3-ultragpu-8g",
    "gpuType": "nvidia-h200-141gb",
    "gpuCount": 8,
    "diskType": "hyperdisk-balanced",
}
A3_HIGH = {"machineType": "a3-highgpu-8g", "gpuType": "nvidia-h100-80gb", "gpuCount": 8}
A3_HIGH_4G = {
    "machineType": "a3-highgpu-4g",
    "gpuType": "nvidia-h100-80gb",
    "gpuCount": 4,
    "provisioning": "spot",
}
V100 = {"machineType": "n1-standard-8", "gpuType": "nvidia-tesla-v100", "gpuCount": 1}


def test_vms_start_only_after_their_account_grants_and_shares_exist():
    graph = cluster_graph(
        nfsShares=[{"mountPath": "/nfs/home"}],
        gcsMounts=[{"bucket": "data", "mountPath": "/gcs/data"}],
    )
    template = graph.of_type(TEMPLATE)[0]
    needed = [
        r.urn
        for r in children(graph)
        if r.type.endswith(("IAMMember", "account:Account", "instance:Instance"))
    ]
    assert len(needed) == 5
    assert set(needed) <= set(template.dependencies), template.urn
    grant = next(r for r in children(graph) if r.type.endswith("BucketIAMMember"))
    assert graph.named("bucket-data-bucket").urn in grant.dependencies


def test_outputs_name_the_group_shares_and_the_jupyter_url_command():
    seen: dict[str, Any] = {}

    def program() -> None:
        cluster = environment.build(loading.load()).gpu_clusters["demo"]
        cluster.filestore_ips.apply(lambda ips: seen.setdefault("ips", ips))
        seen["command"] = cluster.jupyter_urls_command
        seen["errors"] = cluster.errors_command

    config = with_config(gpuClusters=[{"name": "demo", "nfsShares": [{"mountPath": "/nfs/home"}]}])
    graph, raised = record_program(config, program=program)
    assert raised is None, raised
    assert len(graph) > 0
    assert seen["ips"] == ["192.0.2.2"]
    assert seen["command"] == (
        "gcloud compute instances list --project=test-project --zones=us-east5-a "
        "--filter=labels.aiinfra-cluster=demo --format='value(name,metadata.items.proxy-url)'"
    )
    assert seen["errors"] == (
        "gcloud compute instance-groups managed list-errors ai-test-demo "
        "--project=test-project --zone=us-east5-a"
    )


def test_adding_a_cluster_leaves_everything_else_untouched():
    before = build_graph(with_config(buckets=[{"name": "data"}]))
    after = cluster_graph(network="new")
    old = {r.urn: r.inputs for r in before}
    new = {r.urn: r.inputs for r in after}
    assert set(old) <= set(new)
    assert all(new[urn] == inputs for urn, inputs in old.items())
    assert all("gpucluster-demo" in urn for urn in set(new) - set(old))


def test_resizing_a_cluster_changes_only_its_group_size_and_waits_for_the_new_vm():
    before = cluster_graph(instanceCount=2)
    after = cluster_graph(instanceCount=3)
    changed = [r.name for r in after if before.by_urn(r.urn).inputs != r.inputs]
    assert changed == ["gpucluster-demo-mig", "gpucluster-demo-startup"]


def test_pulumi_up_waits_for_the_startup_scripts_readiness_signal():
    graph = cluster_graph(instanceCount=2, startupTimeoutMinutes=45)
    (wait,) = graph.of_type(STARTUP)
    (mig,) = graph.of_type(MIG)
    (template,) = graph.of_type(TEMPLATE)
    assert wait.inputs["group"] == "ai-test-demo" and wait.inputs["size"] == 2
    assert wait.inputs["timeoutSeconds"] == 45 * 60
    assert mig.urn in wait.dependencies and template.urn in wait.dependencies
    # The VMs set the signal as a guest attribute, which Compute Engine takes only when on.
    assert template.inputs["metadata"]["enable-guest-attributes"] == "TRUE"
    assert not cluster_graph(startupTimeoutMinutes=0).of_type(STARTUP)


def test_a3_ultra_gets_rdma_nics_on_a_roce_vpc():
    graph = cluster_graph(
        **A3_ULTRA,
        provisioning="reservation",
        reservation="h200-block",
        network="multi-nic",
        instanceCount=2,
    )
    vpcs = {
        r.inputs["name"]: r.inputs
        for r in children(graph)
        if r.type == "gcp:compute/network:Network"
    }
    assert set(vpcs) == {"ai-test-demo-net0", "ai-test-demo-net1", "ai-test-demo-rdma"}
    assert vpcs["ai-test-demo-net0"]["mtu"] == vpcs["ai-test-demo-net1"]["mtu"] == 8896
    rdma = vpcs["ai-test-demo-rdma"]
    assert (
        rdma["networkProfile"] == "projects/test-project/global/networkProfiles/us-east5-a-vpc-roce"
    )
    assert rdma["mtu"] == 8896
    subnets = [r.inputs for r in children(graph) if r.type.endswith("Subnetwork")]
    rdma_subnets = [s for s in subnets if s["name"].startswith("ai-test-demo-rdma-subnet")]
    assert len(rdma_subnets) == 8
    assert len({s["ipCidrRange"] for s in subnets}) == 10, "every subnet has its own range"
    nics = graph.of_type(TEMPLATE)[0].inputs["networkInterfaces"]
    assert [n["nicType"] for n in nics] == ["GVNIC"] * 2 + ["MRDMA"] * 8
    assert all(n["network"].endswith("ai-test-demo-rdma") for n in nics[2:])
    # No firewall rules on the RoCE VPC; NAT and IAP SSH only on the first host VPC.
    rules = [r.inputs["network"] for r in children(graph) if r.type.endswith("Firewall")]
    assert "ai-test-demo-rdma" not in rules
    assert len([r for r in children(graph) if r.type.endswith("RouterNat")]) == 1


def test_flex_start_keeps_the_group_at_its_size_through_resize_requests():
    graph = cluster_graph(**A3_ULTRA, provisioning="flex-start", instanceCount=2, maxRunHours=24)
    scheduling = graph.of_type(TEMPLATE)[0].inputs["scheduling"]
    assert scheduling["provisioningModel"] == "FLEX_START"
    assert scheduling["instanceTerminationAction"] == "DELETE"
    assert scheduling["maxRunDuration"] == {"seconds": 86400}
    assert scheduling["automaticRestart"] is False
    template = graph.of_type(TEMPLATE)[0].inputs
    assert template["reservationAffinity"] == {"type": "NO_RESERVATION"}
    (mig,) = graph.of_type(MIG)
    # The group waits for its request, not for VMs, and keeps the size the request gave it.
    assert "targetSize" not in mig.inputs and "targetSize" in mig.ignore_changes
    assert mig.inputs["waitForInstances"] is False
    assert mig.inputs["instanceLifecyclePolicy"] == {"defaultActionOnFailure": "DO_NOTHING"}
    assert not graph.of_type("gcp:compute/resizeRequest:ResizeRequest")
    (capacity,) = graph.of_type(FLEX)
    assert {k: capacity.inputs[k] for k in ("group", "size", "runSeconds", "requestPrefix")} == {
        "group": "ai-test-demo",
        "size": 2,
        "runSeconds": 86400,
        "requestPrefix": "ai-test-demo-request",
    }
    assert mig.urn in capacity.dependencies
    # Its VMs come when capacity does, so `pulumi up` does not wait for their scripts.
    assert not graph.of_type(STARTUP)
    # A3 Ultra takes a workload policy under flex-start.
    (policy,) = graph.of_type("gcp:compute/resourcePolicy:ResourcePolicy")
    assert policy.inputs["workloadPolicy"] == {"type": "HIGH_THROUGHPUT"}


def test_a_flex_start_group_resized_updates_its_capacity_in_place():
    before = cluster_graph(**A3_ULTRA, provisioning="flex-start", instanceCount=2)
    after = cluster_graph(**A3_ULTRA, provisioning="flex-start", instanceCount=3)
    changed = [r.name for r in after if before.by_urn(r.urn).inputs != r.inputs]
    assert changed == ["gpucluster-demo-capacity"]
    # The offline diff runs the provider's own diff(): an update, asking for one more VM,
    # never a replacement that would count the running VMs twice.
    (change,) = [c for c in graph_diff(before, after) if not c.is_component]
    assert change.op is Op.UPDATE, change
    assert [c.path for c in change.changes] == [("size",)]


@pytest.mark.parametrize(
    ("entry", "affinity", "model"),
    [
        (
            {"provisioning": "reservation", "reservation": "a100-pool"},
            {
                "type": "SPECIFIC_RESERVATION",
                "specificReservation": {
                    "key": "compute.googleapis.com/reservation-name",
                    "values": ["a100-pool"],
                },
            },
            "STANDARD",
        ),
        ({"provisioning": "reservation"}, {"type": "ANY_RESERVATION"}, "STANDARD"),
        (
            {
                **A3_ULTRA,
                "provisioning": "reservation",
                "reservation": "projects/shared-capacity/reservations/h200-block",
                "reservationBound": True,
            },
            {
                "type": "SPECIFIC_RESERVATION",
                "specificReservation": {
                    "key": "compute.googleapis.com/reservation-name",
                    "values": ["projects/shared-capacity/reservations/h200-block"],
                },
            },
            "RESERVATION_BOUND",
        ),
    ],
)
def test_reservations_are_consumed_as_named(entry, affinity, model):
    template = cluster_graph(**entry).of_type(TEMPLATE)[0].inputs
    assert template["reservationAffinity"] == affinity
    assert template["scheduling"]["provisioningModel"] == model
    if model == "RESERVATION_BOUND":
        assert template["scheduling"]["instanceTerminationAction"] == "DELETE"


def test_a4x_is_reservation_bound_with_its_nvlink_topology():
    graph = cluster_graph(**A4X, provisioning="reservation", reservation="gb200", instanceCount=18)
    template = graph.of_type(TEMPLATE)[0].inputs
    assert template["scheduling"]["provisioningModel"] == "RESERVATION_BOUND"
    (policy,) = graph.of_type("gcp:compute/resourcePolicy:ResourcePolicy")
    assert policy.inputs["workloadPolicy"] == {
        "type": "HIGH_THROUGHPUT",
        "acceleratorTopology": "1x72",
    }
    assert graph.of_type(MIG)[0].inputs["resourcePolicies"]["workloadPolicy"]


def test_data_lives_on_a_stateful_data_disk_and_the_boot_disk_moves_with_the_image():
    graph = cluster_graph(dataDisk={"sizeGb": 500})
    disks = graph.of_type(TEMPLATE)[0].inputs["disks"]
    assert [(d["deviceName"], d.get("boot", False)) for d in disks] == [
        ("boot", True),
        ("data", False),
    ]
    assert (disks[1]["diskSizeGb"], disks[1]["diskType"]) == (500, "pd-ssd")
    (mig,) = graph.of_type(MIG)
    assert mig.inputs["statefulDisks"] == [
        {"deviceName": "data", "deleteRule": "ON_PERMANENT_INSTANCE_DELETION"}
    ]
    script = graph.of_type(TEMPLATE)[0].inputs["metadata"]["startup-script"]
    assert "mount_data_disk data /data" in script
    # The boot disk names an image family: a recreated VM boots the family's newest image.
    assert "/family/" in disks[0]["sourceImage"]


def test_each_cluster_gets_a_gpu_dashboard_of_its_own_vms():
    from components.gpu_clusters import monitoring

    graph = cluster_graph()
    (dashboard,) = graph.of_type("gcp:monitoring/dashboard:Dashboard")
    layout = json.loads(dashboard.inputs["dashboardJson"])
    assert layout["displayName"] == "GPU cluster ai-test-demo"
    tiles = layout["mosaicLayout"]["tiles"]
    assert [t["widget"]["title"] for t in tiles] == [c.title for c in monitoring.CHARTS]
    for tile, chart in zip(tiles, monitoring.CHARTS, strict=True):
        query = tile["widget"]["xyChart"]["dataSets"][0]["timeSeriesQuery"]["timeSeriesFilter"]
        assert f'metric.type="{chart.metric}"' in query["filter"]
        # This stack's VMs of this cluster: two stacks with a cluster "demo" stay apart.
        assert 'metadata.user_labels."aiinfra-cluster"="demo"' in query["filter"]
        assert 'metadata.user_labels."ai-infra-stack"="ai-test"' in query["filter"]
        kind = monitoring.METRICS[chart.metric].kind
        aligner = query["aggregation"]["perSeriesAligner"]
        assert aligner == ("ALIGN_RATE" if kind == "CUMULATIVE" else "ALIGN_MEAN")
    # Tiles do not overlap.
    corners = {(t["xPos"], t["yPos"]) for t in tiles}
    assert len(corners) == len(tiles)
    # Every DCGM chart reads a metric the agent's receiver exports.
    assert any(c.metric in monitoring.DCGM_METRICS for c in monitoring.CHARTS)
    assert not cluster_graph(opsAgent=False).of_type("gcp:monitoring/dashboard:Dashboard")


def test_rdma_clusters_install_the_gib_plugin_and_a3_high_its_gpudirect_stack():
    a4 = cluster_graph(
        machineType="a4-highgpu-8g",
        gpuType="nvidia-b200",
        gpuCount=8,
        diskType="hyperdisk-balanced",
        provisioning="spot",
        network="multi-nic",
        gpuDirect=True,
    )
    script = a4.of_type(TEMPLATE)[0].inputs["metadata"]["startup-script"]
    assert "install_gib 1.1.0" in script and "if install_gpudirect" not in script
    prepared = cluster_graph(
        **A3_HIGH,
        network="multi-nic",
        gpuDirect=True,
        image="a3-high-tcpx-2026-08",
        imageProject="my-images-proj",
    )
    script = prepared.of_type(TEMPLATE)[0].inputs["metadata"]["startup-script"]
    from components.gpu_clusters.gpudirect import STACKS

    tcpx = STACKS["tcpx"]
    assert f"if install_gpudirect {tcpx.host_file} {tcpx.plugin_image}" in script
    assert STACKS["tcpx"].rxdm_image in script
    # The prepared image is used as it is: no driver from metadata.
    assert "install-nvidia-driver" not in prepared.of_type(TEMPLATE)[0].inputs["metadata"]


def test_a3_without_its_gpu_nics_or_gpudirect_is_accepted_with_a_warning():
    config = parse(with_config(gpuClusters=[{"name": "a", **A3_HIGH, "instanceCount": 2}]), "test")
    (warning,) = environment.warnings(config)
    assert warning.startswith("ai-infra:gpuClusters[0].network: ") and "multi-nic" in warning
    config = parse(
        with_config(
            gpuClusters=[{"name": "a", **A3_HIGH, "instanceCount": 2, "network": "multi-nic"}]
        ),
        "test",
    )
    (warning,) = environment.warnings(config)
    assert warning.startswith("ai-infra:gpuClusters[0].gpuDirect: ") and "plain sockets" in warning


TOOL_VARIABLES = (
    "ACTION PROJECT_ID REGION NAME_PREFIX ZONE INSTANCE_COUNT GPU_COUNT VM_TYPE ACCELERATOR_TYPE "
    "IMAGE_FAMILY_NAME IMAGE_NAME IMAGE_PROJECT DISK_SIZE_GB DISK_TYPE TERRAFORM_GCS_PATH "
    "VM_LOCALFILE_DEST_PATH METADATA LABELS STARTUP_COMMAND ORCHESTRATOR_TYPE "
    "SLURM_NODE_COUNT_STATIC SLURM_NODE_COUNT_DYNAMIC_MAX GKE_NODE_POOL_COUNT "
    "GKE_NODE_COUNT_PER_NODE_POOL GKE_ENABLE_COMPACT_PLACEMENT GKE_VERSION CUSTOM_NODE_POOL "
    "KUBERNETES_SETUP_CONFIG GCS_MOUNT_LIST NFS_FILESTORE_LIST SHOW_PROXY_URL "
    "MINIMIZE_TERRAFORM_LOGGING NETWORK_CONFIG ENABLE_OPS_AGENT ENABLE_NOTEBOOK"
).split()
"""The tool's variables (GoogleCloudPlatform/ai-infra-cluster-provisioning v0.6.0 README and
scripts/_env_var_util.sh)."""


def test_the_tools_variables_table_maps_every_variable_to_keys_that_exist():
    from pathlib import Path

    from components.gpu_clusters.config import GpuClusterConfig

    text = (Path(__file__).parents[2] / "docs/gpu-clusters.md").read_text()
    table = text[text.index("| Tool environment variable |") : text.index("What differs")]
    rows = [line.split(" | ") for line in table.splitlines()[2:] if line.startswith("|")]
    mapped = " ".join(row[0] for row in rows)
    assert [v for v in TOOL_VARIABLES if f"`{v}" not in mapped] == []

    def keys(model: type[Any]) -> set[str]:
        found = set()
        for name, info in model.model_fields.items():
            found.add(info.alias or name)
            nested = getattr(info.annotation, "__args__", (info.annotation,))
            for inner in nested:
                if isinstance(inner, type) and hasattr(inner, "model_fields"):
                    found |= keys(inner)
        return found

    fields = keys(GpuClusterConfig)
    for row in rows:
        if "ai-infra:" in row[1] or "gcp:" in row[1] or "pulumi" in row[1]:
            continue
        for key in re.findall(r"`([a-z][A-Za-z]*)`", row[1]):
            assert key in fields, f"{row[0]}: {key} is no gpuClusters field"
