"""Slurm mounts the stack's volumes by name: Slurm-GCP `network_storage` entries generated as
Cluster Toolkit's file-system modules write them (a server address only where the kind has
one), object access for the accounts of the VMs that mount a bucket, and the shared /home (and
whatever the cluster mounts everywhere) never replaced by a login group or nodeset."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from graph.engine import Graph, Registration, peered_address, record_program
from plan.diff import diff
from stacks.messages import ConfigError
from tests.conftest import build_graph
from tests.storage.stack import config

SLURM: dict[str, Any] = {
    "clusterName": "hpc",
    "storage": [
        {"volume": "scratch", "mountPath": "/scratch"},
        {"volume": "data", "mountPath": "/data", "readOnly": True},
    ],
    "loginGroups": [{"name": "login", "storage": [{"volume": "old-nfs", "mountPath": "/old"}]}],
    "cpuNodesets": [
        {
            "name": "cpu",
            "machineType": "n2-standard-2",
            "storage": [{"volume": "ckpt", "mountPath": "/ckpt"}],
        },
        {
            "name": "own",
            "machineType": "n2-standard-2",
            "serviceAccountEmail": "trainer@test-project.iam.gserviceaccount.com",
            "storage": [{"volume": "ckpt", "mountPath": "/ckpt", "readOnly": True}],
        },
    ],
    "tpuNodesets": [
        {
            "name": "v2",
            "nodeType": "v2-8",
            "zone": "us-central1-b",
            "nodeCountDynamicMax": 1,
            "storage": [{"volume": "shared", "mountPath": "/shared"}],
        }
    ],
    "partitions": [
        {"name": "tpu", "nodesets": ["v2"]},
        {"name": "cpu", "nodesets": ["cpu", "own"], "default": True},
    ],
}


def slurm(**fields: Any) -> dict[str, Any]:
    return copy.deepcopy(SLURM) | fields


@pytest.fixture(scope="module")
def graph() -> Graph:
    return build_graph(config(slurm=slurm()))


def document(graph: Graph, path: str) -> Any:
    objects = {r.inputs["name"]: r for r in graph.of_type("gcp:storage/bucketObject:BucketObject")}
    value = objects[f"hpc-files/{path}"].inputs["content"]
    return yaml.safe_load(value["value"] if isinstance(value, dict) else value)


def by_mount(entries: list[dict[str, str]]) -> dict[str, dict[str, str]]:
    return {e["local_mount"]: e for e in entries}


def test_each_kind_is_written_as_toolkits_module_writes_it(graph):
    cluster = by_mount(document(graph, "config.yaml")["network_storage"])
    assert cluster["/scratch"] == {
        "server_ip": f"{peered_address('ai-test-scratch')}@tcp",
        "remote_mount": "/scratch",
        "local_mount": "/scratch",
        "fs_type": "lustre",
        "mount_options": "defaults,_netdev",
    }
    data = cluster["/data"]
    # A bucket has no server: Slurm-GCP takes an empty server_ip as unset, never resolves
    # one for gcsfuse's source, and Toolkit's cloud-storage-bucket module writes it so.
    assert (data["server_ip"], data["remote_mount"], data["fs_type"]) == (
        "",
        "test-project-ai-test-datasets",
        "gcsfuse",
    )
    options = data["mount_options"].split(",")
    assert options[:3] == ["defaults", "_netdev", "implicit_dirs"]
    assert {"metadata_cache_ttl_secs=-1", "allow_other", "file_mode=444", "ro"} <= set(options)
    # The /home share stays first, the cluster's own entries after it.
    assert list(cluster) == ["/home", "/scratch", "/data"]
    tpu = by_mount(document(graph, "nodeset_tpu_configs/v2.yaml")["network_storage"])
    assert tpu["/shared"]["server_ip"] == peered_address("ai-test-shared")
    assert tpu["/shared"]["remote_mount"] == "/share" and tpu["/shared"]["fs_type"] == "nfs"
    ckpt = by_mount(document(graph, "nodeset_configs/cpu.yaml")["network_storage"])["/ckpt"]
    assert "file_cache_cache_file_for_range_read=true" in ckpt["mount_options"]
    assert "rename_dir_limit=200000" in ckpt["mount_options"]
    assert ckpt["mount_options"].endswith("dir_mode=777")
    login = by_mount(document(graph, "login_group_configs/login.yaml")["network_storage"])
    assert login["/old"]["server_ip"] == peered_address("legacy-nfs")


def grants(graph: Graph) -> set[tuple[str, str, str]]:
    return {
        (r.inputs["member"].split(":")[1].split("@")[0], r.inputs["bucket"], r.inputs["role"])
        for r in graph.of_type("gcp:storage/bucketIAMMember:BucketIAMMember")
        if "slurm-hpc" not in r.inputs["bucket"]
        and not r.inputs["member"].startswith("serviceAccount:ai-test-pretrain")
        and not r.inputs["member"].startswith("serviceAccount:ai-test-research")
    }


def test_accounts_get_the_widest_access_their_vms_mount_and_no_more(graph):
    data, ckpt = "test-project-ai-test-datasets", "test-project-ai-test-checkpoints"
    viewer, user = "roles/storage.objectViewer", "roles/storage.objectUser"
    assert grants(graph) == {
        ("ai-test-slurm-lgn", data, viewer),
        ("ai-test-slurm-tpu", data, viewer),
        ("ai-test-slurm-cpu", data, viewer),
        ("ai-test-slurm-cpu", ckpt, user),
        ("trainer", data, viewer),
        ("trainer", ckpt, viewer),
    }


def test_lustre_turns_secure_boot_off_where_it_is_mounted(graph):
    def secure_boot(r: Registration) -> bool:
        return r.inputs["shieldedInstanceConfig"]["enableSecureBoot"]

    # The cluster mounts Lustre everywhere: the controller, login VMs and nodes.
    controller = graph.named("slurm-controller")
    assert not secure_boot(controller)
    alone = copy.deepcopy(SLURM)
    alone["storage"] = [{"volume": "data", "mountPath": "/data"}]
    alone["cpuNodesets"][1]["storage"] = [{"volume": "scratch", "mountPath": "/scratch"}]
    edited = build_graph(config(slurm=alone))
    templates = {
        r.name: secure_boot(r)
        for r in edited.of_type("gcp:compute/instanceTemplate:InstanceTemplate")
    }
    assert templates == {"slurm-template-cpu": True, "slurm-template-own": False}
    assert secure_boot(edited.named("slurm-controller"))


def refused(slurm_config: dict[str, Any]) -> dict[str, str]:
    graph, error = record_program(config(slurm=slurm_config))
    assert isinstance(error, ConfigError), "accepted"
    assert graph.resources == []
    return dict(error.rendered)


def nodeset_mounts(**mount: Any) -> dict[str, Any]:
    found = slurm()
    found["cpuNodesets"][0]["storage"] = [mount]
    return found


def nodeset_storage(**entry: Any) -> dict[str, Any]:
    found = slurm()
    found["cpuNodesets"][0]["networkStorage"] = [
        {"serverIp": "10.0.0.9", "remoteMount": "/export", "fsType": "nfs", **entry}
    ]
    return found


CASES = [
    (
        "a nodeset's network storage over the shared /home",
        nodeset_storage(localMount="/home"),
        "ai-infra:slurm.cpuNodesets[0].networkStorage[0].localMount",
        "/home is mounted on every VM",
    ),
    (
        "a nodeset's volume over the shared /home",
        nodeset_mounts(volume="shared", mountPath="/home"),
        "ai-infra:slurm.cpuNodesets[0].storage[0].mountPath",
        "the cluster's shared directories at '/home'",
    ),
    (
        "a login group's volume under /home",
        slurm(
            loginGroups=[
                {"name": "login", "storage": [{"volume": "shared", "mountPath": "/home/shared"}]}
            ]
        ),
        "ai-infra:slurm.loginGroups[0].storage[0].mountPath",
        "'/home'",
    ),
    (
        "a nodeset replacing what the cluster mounts everywhere",
        nodeset_storage(localMount="/scratch"),
        "ai-infra:slurm.cpuNodesets[0].networkStorage[0].localMount",
        "storage[0]",
    ),
    (
        "a TPU nodeset's volume over /opt/apps",
        slurm(
            tpuNodesets=[
                {
                    **SLURM["tpuNodesets"][0],
                    "storage": [{"volume": "shared", "mountPath": "/opt/apps"}],
                }
            ]
        ),
        "ai-infra:slurm.tpuNodesets[0].storage[0].mountPath",
        "/opt/apps",
    ),
    (
        "the cluster's volume at /home beside the Filestore share",
        slurm(storage=[{"volume": "shared", "mountPath": "/home"}]),
        "ai-infra:slurm.storage[0].mountPath",
        "home.filestore",
    ),
    (
        "a mount of an unknown volume",
        slurm(storage=[{"volume": "datasets", "mountPath": "/datasets"}]),
        "ai-infra:slurm.storage[0].volume",
        "no volume named 'datasets'",
    ),
    (
        "two mounts at one path",
        slurm(
            storage=[
                {"volume": "data", "mountPath": "/data"},
                {"volume": "ckpt", "mountPath": "/data"},
            ]
        ),
        "ai-infra:slurm.storage[1].mountPath",
        "overlaps storage[0]",
    ),
    (
        "a volume under another",
        slurm(
            storage=[
                {"volume": "data", "mountPath": "/data"},
                {"volume": "ckpt", "mountPath": "/data/ckpt"},
            ]
        ),
        "ai-infra:slurm.storage[1].mountPath",
        "unnested",
    ),
    (
        "a volume over a system directory",
        slurm(storage=[{"volume": "data", "mountPath": "/usr/share/data"}]),
        "ai-infra:slurm.storage[0].mountPath",
        "would hide /usr",
    ),
    (
        "a volume over Slurm's own files",
        slurm(storage=[{"volume": "data", "mountPath": "/slurm"}]),
        "ai-infra:slurm.storage[0].mountPath",
        "would hide /slurm",
    ),
    (
        "a volume where the cluster's network storage is",
        slurm(
            networkStorage=[
                {
                    "serverIp": "10.0.0.9",
                    "remoteMount": "/x",
                    "localMount": "/data",
                    "fsType": "nfs",
                }
            ]
        ),
        "ai-infra:slurm.storage[1].mountPath",
        "networkStorage[0]",
    ),
    (
        "a path that climbs",
        slurm(storage=[{"volume": "data", "mountPath": "/data/../etc"}]),
        "ai-infra:slurm.storage[0].mountPath",
        "normalised",
    ),
]


@pytest.mark.parametrize(("case", "slurm_config", "path", "fix"), CASES, ids=[c[0] for c in CASES])
def test_bad_mounts_are_refused_at_their_path(case, slurm_config, path, fix):
    found = refused(slurm_config)
    assert path in found, f"{case}: {found}"
    assert fix in found[path], f"{case}: {found[path]}"


def test_a_mount_added_to_one_nodeset_touches_its_yaml_and_its_account_alone(graph):
    edited = slurm()
    edited["tpuNodesets"][0]["storage"].append(
        {"volume": "data", "mountPath": "/data2", "readOnly": True}
    )
    after = build_graph(config(slurm=edited))
    changed = diff(graph, after)
    touched = {r.urn.rsplit("::", 1)[1] for r in changed}
    # The controller restarts from config.yaml, which waits for every object, so it is not
    # touched; only the nodeset's own file changes (the TPU account reads data already).
    assert touched == {"slurm-nodeset-v2"}, touched
