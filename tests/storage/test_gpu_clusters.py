"""GPU clusters mount `ai-infra:storage` volumes by name and make their bundled local SSD
scratch: the boot script's steps, the bucket grants, who reaches a share, the plan's lines, and
bad input refused at its path before anything registers."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.storage.boot import GCSFUSE_CACHE, SCRATCH_PATH
from graph.engine import Graph, record_program
from stacks import environment
from stacks.loading import parse
from stacks.messages import ConfigError
from tests.conftest import build_graph
from tests.storage.stack import config

TEMPLATE = "gcp:compute/instanceTemplate:InstanceTemplate"
FIREWALL = "gcp:compute/firewall:Firewall"
CLUSTER: dict[str, Any] = {
    "name": "h100",
    "machineType": "a3-highgpu-8g",
    "gpuType": "nvidia-h100-80gb",
    "gpuCount": 8,
    "zone": "us-central1-a",
    "provisioning": "spot",
    "storage": [
        {"volume": "data", "mountPath": "/data", "readOnly": True},
        {"volume": "ckpt", "mountPath": "/ckpt"},
        {"volume": "shared", "mountPath": "/shared"},
        {"volume": "scratch", "mountPath": "/lustre"},
    ],
}


def cluster(**fields: Any) -> dict[str, Any]:
    return copy.deepcopy(CLUSTER) | fields


@pytest.fixture(scope="module")
def graph() -> Graph:
    return build_graph(config(gpuClusters=[cluster()]))


def script(graph: Graph) -> str:
    return graph.of_type(TEMPLATE)[0].inputs["metadata"]["startup-script"]


def test_the_script_makes_scratch_then_mounts_each_kind_by_name(graph):
    text = script(graph)
    steps = [line for line in text.splitlines() if line.startswith("STEP=")]
    assert steps[1:7] == [
        "STEP='Ops Agent'",
        f"STEP='local SSD {SCRATCH_PATH}'",
        "STEP='gcs data /data'",
        "STEP='gcs ckpt /ckpt'",
        "STEP='filestore shared /shared'",
        "STEP='lustre scratch /lustre'",
    ]
    assert f"local_scratch 16 {SCRATCH_PATH} || fail" in text
    # Each bucket its profile, and its own file cache on the scratch.
    assert f"--cache-dir={GCSFUSE_CACHE}/data" in text
    assert f"--cache-dir={GCSFUSE_CACHE}/ckpt" in text
    assert "--rename-dir-limit=200000" in text  # the checkpoint profile
    assert "mount_nfs 198." in text and " share /shared || fail" in text
    assert "mount_lustre " in text and "@tcp:/" in text


def test_the_vms_account_gets_the_widest_object_role_its_mounts_need(graph):
    grants = {
        (r.inputs["bucket"], r.inputs["role"])
        for r in graph.of_type("gcp:storage/bucketIAMMember:BucketIAMMember")
        if "h100-vm@" in str(r.inputs["member"])
    }
    roles = {role for _, role in grants}
    assert roles == {"roles/storage.objectViewer", "roles/storage.objectUser"}, grants
    assert len(grants) == 2


def test_the_shares_it_mounts_let_the_cluster_in_and_others_do_not(graph):
    rules = {r.inputs["name"]: str(r.inputs) for r in graph.of_type(FIREWALL)}
    tag = "ai-test-h100"
    assert tag in rules["ai-test-shared-clients"]
    assert tag in rules["ai-test-allow-lustre"]
    without = build_graph(config())
    assert not any(tag in str(r.inputs) for r in without.of_type(FIREWALL))


def test_a_machine_without_local_ssd_gets_no_scratch_and_no_file_cache():
    graph = build_graph(
        config(
            gpuClusters=[
                cluster(
                    machineType="a2-highgpu-1g",
                    gpuType="nvidia-tesla-a100",
                    gpuCount=1,
                    provisioning="on-demand",
                )
            ]
        )
    )
    text = script(graph)
    assert "STEP='local SSD" not in text
    assert f"--cache-dir={GCSFUSE_CACHE}" not in text
    assert "--file-cache-max-size-mb" not in text


def test_scratch_can_be_left_off():
    text = script(build_graph(config(gpuClusters=[cluster(localSsdScratch=False)])))
    assert "STEP='local SSD" not in text and f"--cache-dir={GCSFUSE_CACHE}" not in text


def test_the_plan_shows_the_scratch_and_the_mounts():
    sections = environment.describe(parse(config(gpuClusters=[cluster()]), "test"))
    lines = "\n".join(line for _, found in sections for line in found)
    assert f"local SSD RAID0 16 x 375GiB -> {SCRATCH_PATH}" in lines
    assert "storage data -> /data (read-only)" in lines
    assert "GPU cluster h100: /lustre (rw)" in lines


def refused(entry: dict[str, Any]) -> dict[str, str]:
    graph, error = record_program(config(gpuClusters=[entry]))
    assert isinstance(error, ConfigError), "accepted"
    assert graph.resources == []
    return {path.removeprefix("ai-infra:"): message for path, message in error.rendered}


@pytest.mark.parametrize(
    ("mounts", "path", "fix"),
    [
        (
            [{"volume": "nope", "mountPath": "/x"}],
            "storage[0].volume",
            "known: ckpt, data, old-lustre",
        ),
        (
            [{"volume": "data", "mountPath": "/d"}, {"volume": "ckpt", "mountPath": "/d"}],
            "storage[1].mountPath",
            "overlaps storage[0]",
        ),
        ([{"volume": "data", "mountPath": "/usr/data"}], "storage[0].mountPath", "/usr"),
        ([{"volume": "ckpt", "mountPath": "/home"}], "storage[0].mountPath", "home directories"),
        ([{"volume": "data", "mountPath": "/opt/data"}], "storage[0].mountPath", "/opt"),
        (
            [{"volume": "data", "mountPath": f"{SCRATCH_PATH}/data"}],
            "storage[0].mountPath",
            "local SSD scratch",
        ),
    ],
)
def test_bad_mounts_are_refused_at_their_path(mounts, path, fix):
    problems = refused(cluster(storage=mounts))
    assert fix in problems[f"gpuClusters[0].{path}"], problems


def test_a_gcs_mount_and_a_storage_mount_at_one_path_are_refused():
    entry = cluster(
        gcsMounts=[{"bucket": "datasets", "mountPath": "/data"}],
        storage=[{"volume": "ckpt", "mountPath": "/data"}],
    )
    assert "gcsMounts[0].mountPath" in refused(entry)["gpuClusters[0].storage[0].mountPath"]


def test_a_share_from_a_cluster_outside_the_stack_vpc_is_refused():
    entry = cluster(network="new", storage=[{"volume": "shared", "mountPath": "/shared"}])
    assert "network: default" in refused(entry)["gpuClusters[0].storage[0].volume"]
