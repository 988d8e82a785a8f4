"""GPU clusters as managed instance groups: what one `ai-infra:gpuClusters` entry registers, and
every bad entry refused at its path before anything is registered."""

from __future__ import annotations

from typing import Any

import pytest

from components import gpu_catalog
from components.gpu_clusters.checks import warnings
from components.gpu_clusters.config import DEFAULT_IMAGE_FAMILY, RESERVED_METADATA
from plan.engine import record_program
from stacks import environment, loading
from stacks.loading import parse
from stacks.messages import ConfigError
from tests.conftest import build_graph, with_config

TEMPLATE = "gcp:compute/instanceTemplate:InstanceTemplate"
MIG = "gcp:compute/instanceGroupManager:InstanceGroupManager"


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
    assert i["shieldedInstanceConfig"]["enableVtpm"] is True
    assert i["shieldedInstanceConfig"]["enableIntegrityMonitoring"] is True
    (nic,) = i["networkInterfaces"]
    assert nic["nicType"] == "GVNIC"
    assert not nic.get("accessConfigs"), "GPU VMs must have no public IP"
    assert nic["network"].endswith("ai-test-vpc")
    metadata = i["metadata"]
    assert metadata["enable-oslogin"] == "TRUE"
    assert metadata["install-nvidia-driver"] == "True"
    assert metadata["proxy-mode"] == "project_editors"
    assert "install_ops_agent" in metadata["startup-script"]
    assert i["serviceAccount"]["email"] == "ai-test-demo-vm@test-project.iam.gserviceaccount.com"
    (mig,) = graph.of_type(MIG)
    assert (mig.inputs["targetSize"], mig.inputs["zone"]) == (1, "us-east5-a")
    assert mig.inputs["statefulDisks"] == [
        {"deviceName": "boot", "deleteRule": "ON_PERMANENT_INSTANCE_DELETION"}
    ]
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
    assert not any("Binding" in r.type or "IAMPolicy" in r.type for r in graph)


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
    roles = {r.inputs["role"] for r in children(graph) if r.type.endswith("IAMMember")}
    assert "roles/compute.viewer" in roles
    script = graph.of_type(TEMPLATE)[0].inputs["metadata"]["startup-script"]
    assert "start_ray 2.60.0 6379 2 demo us-east5-a" in script


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
    graph = cluster_graph(
        network="multi-nic",
        machineType=machine,
        gpuType=gpu.gpu_type,
        gpuCount=gpus,
        instanceCount=2,
    )
    mtus = [r.inputs.get("mtu") for r in children(graph) if r.type == "gcp:compute/network:Network"]
    assert mtus == [8896] + [8244] * gpu_nics
    assert len(graph.of_type(TEMPLATE)[0].inputs["networkInterfaces"]) == 1 + gpu_nics
    # Clustered A3 MIGs are placed by a workload policy on the group, not a compact policy.
    (policy,) = graph.of_type("gcp:compute/resourcePolicy:ResourcePolicy")
    assert policy.inputs["workloadPolicy"] == {"type": "HIGH_THROUGHPUT"}
    (mig,) = graph.of_type(MIG)
    assert mig.inputs["resourcePolicies"]["workloadPolicy"].endswith("ai-test-demo-placement")


def test_compact_placement_only_with_more_than_one_vm_of_a_family_that_supports_it():
    graph = cluster_graph(instanceCount=4)
    (policy,) = graph.of_type("gcp:compute/resourcePolicy:ResourcePolicy")
    assert policy.inputs["groupPlacementPolicy"] == {"collocation": "COLLOCATED"}
    template = graph.of_type(TEMPLATE)[0]
    assert template.inputs["resourcePolicies"].endswith("ai-test-demo-placement")
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
    assert shares[0]["fileShares"] == {"name": "share", "capacityGb": 1024}
    assert shares[0]["networks"][0]["network"] == "ai-test-demo-net0"
    script = graph.of_type(TEMPLATE)[0].inputs["metadata"]["startup-script"]
    assert "mount_nfs 192.0.2.2 share /nfs/home" in script


def test_spot_and_the_end_of_life_image():
    graph = cluster_graph(
        spot=True, imageFamily="pytorch-1-12-gpu-debian-10", imageProject="ml-images"
    )
    i = graph.of_type(TEMPLATE)[0].inputs
    assert i["scheduling"]["provisioningModel"] == "SPOT"
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


# Every validation: config, path, a word of the fix; and nothing registered.
CASES = [
    ({"machineType": "a2-highgpu-2g", "gpuCount": 4}, "gpuClusters[0].machineType", "match"),
    (
        {"machineType": "n1-standard-8", "gpuType": "nvidia-tesla-a100", "gpuCount": 1},
        "gpuClusters[0].machineType",
        "a2",
    ),
    (
        {"machineType": "n1-standard-8", "gpuType": "nvidia-tesla-t4", "gpuCount": 3},
        "gpuClusters[0].machineType",
        "1, 2, 4",
    ),
    (
        {"machineType": "a3-ultragpu-8g", "gpuType": "nvidia-h200-141gb", "gpuCount": 8},
        "gpuClusters[0].diskType",
        "hyperdisk-balanced",
    ),
    (
        {"machineType": "a3-highgpu-2g", "gpuType": "nvidia-h100-80gb", "gpuCount": 2},
        "gpuClusters[0].machineType",
        "spot: true",
    ),
    (
        {
            "machineType": "a4x-highgpu-4g",
            "gpuType": "nvidia-gb200",
            "gpuCount": 4,
            "diskType": "hyperdisk-balanced",
            "spot": True,
        },
        "gpuClusters[0].machineType",
        "reservation",
    ),
    ({"image": "x", "imageFamily": "y"}, "gpuClusters[0].image", "not both"),
    ({"imageFamily": "Bad_Family"}, "gpuClusters[0].imageFamily", "Compute Engine resource name"),
    ({"zone": "us-central1-a"}, "gpuClusters[0].zone", "us-east5"),
    ({"zone": "us-east5-a\n"}, "gpuClusters[0].zone", "zone"),
    ({"orchestrator": "gke"}, "gpuClusters[0].orchestrator", "gpuPools"),
    (
        {"orchestrator": "ray", "jupyterProxy": False, "imageProject": "my-images-proj"},
        "gpuClusters[0].imageProject",
        "Deep Learning VM",
    ),
    ({"imageProject": "my-images-proj"}, "gpuClusters[0].imageProject", "jupyterProxy"),
    ({"instanceCount": 0}, "gpuClusters[0].instanceCount", "at least 1"),
    ({"instanceCount": 151}, "gpuClusters[0].instanceCount", "150"),
    ({"name": "a-very-long-cluster-name"}, "gpuClusters[0].name", "shorten"),
    ({"name": "Demo"}, "gpuClusters[0].name", "lowercase"),
    ({"metadata": {"enable-oslogin": "FALSE"}}, "gpuClusters[0].metadata.enable-oslogin", "remove"),
    ({"metadata": {"startup-script": "x"}}, "gpuClusters[0].metadata.startup-script", "remove"),
    ({"metadata": {"bad key": "x"}}, 'gpuClusters[0].metadata["bad key"]', "letters"),
    (
        {"labels": {"aiinfra-cluster": "x"}},
        "gpuClusters[0].labels.aiinfra-cluster",
        "choose another label key",
    ),
    ({"labels": {"Team": "x"}}, "gpuClusters[0].labels", "labels Team are not GCP labels"),
    (
        # Beside managed-by, ai-infra-stack, the provider's label and aiinfra-cluster.
        {"labels": {f"l{n}": "x" for n in range(61)}},
        "gpuClusters[0].labels",
        "keep at most 60",
    ),
    (
        {"gcsMounts": [{"bucket": "data", "mountPath": "gcs/data"}]},
        "gpuClusters[0].gcsMounts[0].mountPath",
        "absolute",
    ),
    (
        {"gcsMounts": [{"bucket": "data", "mountPath": "/gcs/../etc"}]},
        "gpuClusters[0].gcsMounts[0].mountPath",
        "normalised",
    ),
    (
        {"gcsMounts": [{"bucket": "data", "mountPath": "/etc/data"}]},
        "gpuClusters[0].gcsMounts[0].mountPath",
        "/mnt",
    ),
    (
        {
            "gcsMounts": [{"bucket": "data", "mountPath": "/data"}],
            "nfsShares": [{"mountPath": "/data/nfs"}],
        },
        "gpuClusters[0].nfsShares[0].mountPath",
        "unnested",
    ),
    (
        {
            "gcsMounts": [
                {"bucket": "data", "mountPath": "/d"},
                {"bucket": "data", "mountPath": "/d"},
            ]
        },
        "gpuClusters[0].gcsMounts[1].mountPath",
        "own",
    ),
    (
        {"gcsMounts": [{"bucket": "Not A Bucket", "mountPath": "/d"}]},
        "gpuClusters[0].gcsMounts[0].bucket",
        "ai-infra:buckets",
    ),
    (
        {"nfsShares": [{"mountPath": "/n", "tier": "BASIC_SSD", "sizeGb": 1024}]},
        "gpuClusters[0].nfsShares[0].sizeGb",
        "2560",
    ),
    (
        {"nfsShares": [{"mountPath": "/n", "tier": "HIGH_SCALE_SSD"}]},
        "gpuClusters[0].nfsShares[0].sizeGb",
        "10240",
    ),
    (
        {"nfsShares": [{"mountPath": "/n", "tier": "ZONAL"}]},
        "gpuClusters[0].nfsShares[0].tier",
        "BASIC_HDD",
    ),
    ({"nicCount": 3}, "gpuClusters[0].nicCount", "multi-nic"),
    ({"network": "multi-nic", "nicCount": 9}, "gpuClusters[0].nicCount", "8"),
    (
        {
            "network": "multi-nic",
            "machineType": "a3-highgpu-8g",
            "gpuType": "nvidia-h100-80gb",
            "gpuCount": 8,
            "nicCount": 3,
        },
        "gpuClusters[0].nicCount",
        "remove nicCount",
    ),
    (
        {
            "network": "multi-nic",
            "machineType": "a3-megagpu-8g",
            "gpuType": "nvidia-h100-mega-80gb",
            "gpuCount": 8,
            "imageFamily": "pytorch-1-12-gpu-debian-10",
        },
        "gpuClusters[0].imageFamily",
        "gVNIC",
    ),
    (
        {"network": "multi-nic", "subnetCidr": "255.255.240.0/20"},
        "gpuClusters[0].subnetCidr",
        "lower range",
    ),
    ({"startupCommand": "echo \x00"}, "gpuClusters[0].startupCommand", "control"),
    ({"spot": "sometimes"}, "gpuClusters[0].spot", "true or false"),
    ({"unknown": 1}, "gpuClusters[0].unknown", "valid fields"),
]


@pytest.mark.parametrize(("entry", "path", "fix"), CASES)
def test_bad_entries_are_refused_at_their_path_before_anything_registers(entry, path, fix):
    config = with_config(gpuClusters=[{"name": "demo", **entry}], buckets=[{"name": "data"}])
    with pytest.raises(ConfigError) as error:
        parse(config, "test")
    rendered = dict(error.value.rendered)
    key = f"ai-infra:{path}"
    assert key in rendered, rendered
    assert fix.lower() in rendered[key].lower(), rendered[key]
    graph, raised = record_program(config, stack="test")
    assert isinstance(raised, ConfigError)
    assert len(graph) == 0, [r.urn for r in graph]


def test_labels_fill_what_gcp_allows_and_no_more():
    labels = {f"l{n}": "x" for n in range(60)}
    graph = cluster_graph(labels=labels)
    template = graph.of_type(TEMPLATE)[0]
    # With the provider's goog-pulumi-provisioned, 64: GCP's limit per resource.
    assert len(template.inputs["labels"]) == 63, template.urn


def test_cluster_names_are_unique():
    with pytest.raises(ConfigError) as error:
        parse(with_config(gpuClusters=[{"name": "a"}, {"name": "a"}]), "test")
    assert "unique" in dict(error.value.rendered)["ai-infra:gpuClusters[1].name"]


def test_every_reserved_metadata_key_is_refused():
    for key in RESERVED_METADATA:
        with pytest.raises(ConfigError):
            parse(with_config(gpuClusters=[{"name": "a", "metadata": {key: "x"}}]), "test")


def test_threads_per_core_turns_smt_off_and_a4x_refuses_two():
    graph = cluster_graph(threadsPerCore=1)
    assert graph.of_type(TEMPLATE)[0].inputs["advancedMachineFeatures"] == {"threadsPerCore": 1}
    assert "advancedMachineFeatures" not in cluster_graph().of_type(TEMPLATE)[0].inputs
    with pytest.raises(ConfigError) as error:
        parse(
            with_config(
                gpuClusters=[
                    {
                        "name": "a",
                        "machineType": "a4x-highgpu-4g",
                        "gpuType": "nvidia-gb200",
                        "gpuCount": 4,
                        "diskType": "hyperdisk-balanced",
                        "threadsPerCore": 2,
                        "spot": True,
                    }
                ]
            ),
            "test",
        )
    assert "one thread" in dict(error.value.rendered)["ai-infra:gpuClusters[0].threadsPerCore"]


def test_the_end_of_life_image_is_accepted_with_a_warning():
    config = parse(
        with_config(
            gpuClusters=[
                {
                    "name": "a",
                    "imageFamily": "pytorch-1-12-gpu-debian-10",
                    "imageProject": "ml-images",
                }
            ]
        ),
        "test",
    )
    (warning,) = warnings(config.gpu_clusters[0])
    assert "end of life" in warning and DEFAULT_IMAGE_FAMILY in warning
    assert warnings(parse(with_config(gpuClusters=[{"name": "a"}]), "test").gpu_clusters[0]) == []


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

    config = with_config(gpuClusters=[{"name": "demo", "nfsShares": [{"mountPath": "/nfs/home"}]}])
    graph, raised = record_program(config, program=program)
    assert raised is None, raised
    assert len(graph) > 0
    assert seen["ips"] == ["192.0.2.2"]
    assert seen["command"] == (
        "gcloud compute instances list --project=test-project --zones=us-east5-a "
        "--filter=labels.aiinfra-cluster=demo --format='value(name,metadata.items.proxy-url)'"
    )


def test_adding_a_cluster_leaves_everything_else_untouched():
    before = build_graph(with_config(buckets=[{"name": "data"}]))
    after = cluster_graph(network="new")
    old = {r.urn: r.inputs for r in before}
    new = {r.urn: r.inputs for r in after}
    assert set(old) <= set(new)
    assert all(new[urn] == inputs for urn, inputs in old.items())
    assert all("gpucluster-demo" in urn for urn in set(new) - set(old))


def test_resizing_a_cluster_changes_only_its_group_size():
    before = cluster_graph(instanceCount=2)
    after = cluster_graph(instanceCount=3)
    changed = [r.name for r in after if before.by_urn(r.urn).inputs != r.inputs]
    assert changed == ["gpucluster-demo-mig"]
