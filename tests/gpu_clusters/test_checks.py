"""Every bad `ai-infra:gpuClusters` entry refused at its path, with a word of the fix, before
anything is registered; near misses and warnings."""

from __future__ import annotations

from typing import Any

import pytest

from components.gpu_clusters.config import DEFAULT_IMAGE_FAMILY, RESERVED_METADATA
from graph.engine import record_program
from stacks import environment
from stacks.loading import parse
from stacks.messages import ConfigError
from tests.conftest import with_config
from tests.gpu_clusters.test_cluster import (
    A3_HIGH,
    A3_HIGH_4G,
    A3_ULTRA,
    A4X,
    TEMPLATE,
    V100,
    cluster_graph,
)

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
        "gpuClusters[0].provisioning",
        "spot or flex-start",
    ),
    ({**A4X, "provisioning": "spot"}, "gpuClusters[0].provisioning", "reservation"),
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
    (
        {"imageProject": "my-images-proj", "jupyterProxy": True},
        "gpuClusters[0].imageProject",
        "jupyterProxy",
    ),
    ({"instanceCount": 0}, "gpuClusters[0].instanceCount", "at least 1"),
    ({"instanceCount": 1001}, "gpuClusters[0].instanceCount", "1000"),
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
        "2,560",
    ),
    (
        {"nfsShares": [{"mountPath": "/n", "tier": "HIGH_SCALE_SSD"}]},
        "gpuClusters[0].nfsShares[0].sizeGb",
        "10,240",
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
    ({"opsAgent": "sometimes"}, "gpuClusters[0].opsAgent", "true or false"),
    ({"spot": True}, "gpuClusters[0].spot", "valid fields"),
    ({"unknown": 1}, "gpuClusters[0].unknown", "valid fields"),
    # N1 vCPUs are limited by the GPUs attached.
    ({**V100, "machineType": "n1-standard-96"}, "gpuClusters[0].machineType", "at most 12"),
    # NICs within what the machine's vCPUs allow.
    (
        {
            "machineType": "n1-standard-2",
            "gpuType": "nvidia-tesla-t4",
            "gpuCount": 1,
            "network": "multi-nic",
            "nicCount": 8,
        },
        "gpuClusters[0].nicCount",
        "at most 2",
    ),
    (
        {
            "machineType": "g2-standard-4",
            "gpuType": "nvidia-l4",
            "gpuCount": 1,
            "network": "multi-nic",
        },
        "gpuClusters[0].nicCount",
        "at most 4",
    ),
    # Capacity types a family is not sold under, and reservation fields that do not fit.
    ({**A3_ULTRA}, "gpuClusters[0].provisioning", "reservation"),
    ({**A4X, "provisioning": "reservation"}, "gpuClusters[0].reservation", "name it"),
    (
        {**A4X, "provisioning": "reservation", "reservation": "r", "reservationBound": False},
        "gpuClusters[0].reservationBound",
        "remove",
    ),
    (
        {"provisioning": "reservation", "reservationBound": True, "reservation": "r"},
        "gpuClusters[0].reservationBound",
        "capacity-block",
    ),
    ({"reservation": "r"}, "gpuClusters[0].reservation", "provisioning: reservation"),
    ({"reservation": "Bad Name"}, "gpuClusters[0].reservation", "reservation"),
    ({"maxRunHours": 24}, "gpuClusters[0].maxRunHours", "flex-start"),
    (
        {**A3_ULTRA, "provisioning": "flex-start", "maxRunHours": 200},
        "gpuClusters[0].maxRunHours",
        "168",
    ),
    (
        {**A3_ULTRA, "provisioning": "flex-start", "dataDisk": {}},
        "gpuClusters[0].dataDisk",
        "nfsShares",
    ),
    ({"provisioning": "flex-start"}, "gpuClusters[0].provisioning", "on-demand or spot"),
    # Compact placement: where it applies, and its VM limit per max distance.
    (
        {**V100, "instanceCount": 4, "placementMaxDistance": 2},
        "gpuClusters[0].placementMaxDistance",
        "only used",
    ),
    (
        {**A3_HIGH_4G, "instanceCount": 4, "placementMaxDistance": 1},
        "gpuClusters[0].placementMaxDistance",
        "A3",
    ),
    ({"instanceCount": 23, "placementMaxDistance": 1}, "gpuClusters[0].instanceCount", "22"),
    ({"instanceCount": 151, "placementMaxDistance": 2}, "gpuClusters[0].instanceCount", "150"),
    ({"placementMaxDistance": 4}, "gpuClusters[0].placementMaxDistance", "3"),
    # A workload policy takes a max distance, but not A4X's, which carries its topology.
    (
        {**A4X, "provisioning": "reservation", "reservation": "r", "instanceCount": 2}
        | {"placementMaxDistance": 2},
        "gpuClusters[0].placementMaxDistance",
        "1x72 accelerator topology",
    ),
    (
        {**A3_HIGH, "instanceCount": 2, "placementMaxDistance": 2},
        "gpuClusters[0].placementMaxDistance",
        "neither",
    ),
    # YAML 1.1 booleans (`on`, `yes`) are not numbers.
    ({"threadsPerCore": True}, "gpuClusters[0].threadsPerCore", "whole number"),
    ({"instanceCount": True}, "gpuClusters[0].instanceCount", "whole number"),
    ({"gpuCount": "2"}, "gpuClusters[0].gpuCount", "whole number"),
    ({"placementMaxDistance": True}, "gpuClusters[0].placementMaxDistance", "whole number"),
    ({"readyTimeoutMinutes": 2}, "gpuClusters[0].readyTimeoutMinutes", "5"),
    # Subnets no VM network can use.
    ({"network": "new", "subnetCidr": "10.0.0.0/30"}, "gpuClusters[0].subnetCidr", "/29"),
    ({"network": "new", "subnetCidr": "10.0.0.0/7"}, "gpuClusters[0].subnetCidr", "/8"),
    # Names another system derives names from.
    ({"name": "allow"}, "gpuClusters[0].name", "firewall"),
    ({"name": "allow-iap"}, "gpuClusters[0].name", "firewall"),
    ({"name": "slurm-tpu"}, "gpuClusters[0].name", "Slurm"),
    # Metadata in bytes, with the program's own keys and the rendered script.
    ({"metadata": {"notes": "é" * 140_000}}, "gpuClusters[0].metadata.notes", "262144"),
    (
        {"metadata": {f"k{n}": "x" * 200_000 for n in range(3)}},
        "gpuClusters[0].metadata",
        "524288",
    ),
    ({"startupCommand": "x" * 270_000}, "gpuClusters[0].startupCommand", "bucket"),
    # GPUDirect only where it can work.
    (
        {**A3_HIGH, "network": "multi-nic", "gpuDirect": True},
        "gpuClusters[0].imageProject",
        "prepared",
    ),
    ({**A3_HIGH, "gpuDirect": True}, "gpuClusters[0].gpuDirect", "multi-nic"),
    ({"gpuDirect": True}, "gpuClusters[0].gpuDirect", "no GPU NICs"),
    (
        {
            **A4X,
            "provisioning": "reservation",
            "reservation": "r",
            "network": "multi-nic",
            "gpuDirect": True,
        },
        "gpuClusters[0].gpuDirect",
        "arm64",
    ),
    # A4X runs Arm; A4X Max is bare metal with IPv6-only RDMA.
    (
        {
            **A4X,
            "imageFamily": None,
            "imageProject": "deeplearning-platform-release",
            "provisioning": "reservation",
            "reservation": "r",
        },
        "gpuClusters[0].imageFamily",
        "arm64",
    ),
    (
        {
            **A4X,
            "machineType": "a4x-maxgpu-4g-metal",
            "gpuType": "nvidia-gb300",
            "provisioning": "reservation",
            "reservation": "r",
        },
        "gpuClusters[0].machineType",
        "bare metal",
    ),
    # Data disks.
    (
        {**A3_ULTRA, "provisioning": "spot", "dataDisk": {"type": "pd-ssd"}},
        "gpuClusters[0].dataDisk.type",
        "hyperdisk-balanced",
    ),
    (
        {"dataDisk": {}, "gcsMounts": [{"bucket": "data", "mountPath": "/data/gcs"}]},
        "gpuClusters[0].gcsMounts[0].mountPath",
        "dataDisk",
    ),
    ({"dataDisk": {"mountPath": "/usr/data"}}, "gpuClusters[0].dataDisk.mountPath", "/mnt"),
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
                        "provisioning": "reservation",
                        "reservation": "gb200",
                        "imageFamily": "ubuntu-accelerator-2404-arm64-with-nvidia-580",
                        "imageProject": "ubuntu-os-accelerator-images",
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
    (warning,) = environment.warnings(config)
    assert warning.startswith("ai-infra:gpuClusters[0].imageFamily: ")
    assert "end of life" in warning and DEFAULT_IMAGE_FAMILY in warning
    assert environment.warnings(parse(with_config(gpuClusters=[{"name": "a"}]), "test")) == []


def _slurm(**gpu_entry: Any) -> dict[str, Any]:
    return with_config(
        **{"gcp:region": "us-central2", "gcp:zone": "us-central2-b"},
        slurm={
            "clusterName": "tpu",
            "tpuNodesets": [{"name": "v4", "nodeType": "v4-8", "nodeCountDynamicMax": 2}],
            "partitions": [{"name": "tpu", "nodesets": ["v4"], "default": True}],
        },
        gpuClusters=[{"name": "demo", **gpu_entry}],
    )


@pytest.mark.parametrize(
    "bucket", ["test-project-ai-test-slurm-tpu", "test-project-ai-prod-slurm-other"]
)
def test_a_slurm_bucket_is_mounted_read_only_or_not_at_all(bucket):
    mounts = [{"bucket": bucket, "mountPath": "/gcs/slurm"}]
    with pytest.raises(ConfigError) as error:
        parse(_slurm(gcsMounts=mounts), "test")
    rendered = dict(error.value.rendered)
    assert "readOnly: true" in rendered["ai-infra:gpuClusters[0].gcsMounts[0].readOnly"]
    graph, raised = record_program(_slurm(gcsMounts=mounts), stack="test")
    assert isinstance(raised, ConfigError) and len(graph) == 0
    parse(_slurm(gcsMounts=[{**mounts[0], "readOnly": True}]), "test")


def test_labels_count_the_stacks_own_beside_the_clusters():
    stack_labels = {f"s{n}": "x" for n in range(10)}
    config = with_config(
        labels=stack_labels,
        gpuClusters=[{"name": "demo", "labels": {f"l{n}": "x" for n in range(51)}}],
    )
    with pytest.raises(ConfigError) as error:
        parse(config, "test")
    assert "keep at most 50" in dict(error.value.rendered)["ai-infra:gpuClusters[0].labels"]


def test_metadata_just_under_the_limits_is_accepted():
    # 131,000 two-byte characters: 262,000 bytes, under 262,144.
    parse(with_config(gpuClusters=[{"name": "a", "metadata": {"notes": "é" * 131_000}}]), "test")
