"""TPU VMs mount `ai-infra:storage` buckets by name: the boot script's steps (and under bash
against stubs), the dedicated account's grants, and bad input refused at its path. Shares and
Lustre are refused on TPU VMs for now."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.startup import DONE
from components.storage.boot import VolumeMount
from components.tpu_vms import boot
from graph.engine import Graph, record_program
from stacks import environment
from stacks.loading import parse
from stacks.messages import ConfigError
from tests.components.startup_vm import Vm
from tests.conftest import build_graph
from tests.storage.stack import config

QR = "pulumi-python:dynamic/tpu:QueuedResource"
ENTRY: dict[str, Any] = {
    "name": "maxtext",
    "accelerator": "v2-8",
    "zone": "us-central1-b",
    "startupScript": "ls /data >&2\n",
    "storage": [
        {"volume": "data", "mountPath": "/data", "readOnly": True},
        {"volume": "ckpt", "mountPath": "/ckpt"},
    ],
}


def entry(**fields: Any) -> dict[str, Any]:
    return copy.deepcopy(ENTRY) | fields


@pytest.fixture(scope="module")
def graph() -> Graph:
    return build_graph(config(tpuVms=[entry()]))


def script(graph: Graph) -> str:
    return graph.of_type(QR)[0].inputs["metadata"]["startup-script"]


def test_buckets_mount_with_their_profile_before_the_users_script(graph):
    steps = [line for line in script(graph).splitlines() if line.startswith("STEP=")]
    assert steps[1:4] == ["STEP='gcs data /data'", "STEP='gcs ckpt /ckpt'", "STEP=startupScript"]
    text = script(graph)
    assert "mount_gcs test-project-ai-test-datasets /data ro " in text
    assert "--rename-dir-limit=200000" in text  # ckpt's checkpoint profile
    assert "--cache-dir=/" not in text  # no scratch on TPU VMs, so no file cache


def test_the_dedicated_account_gets_the_object_roles_its_mounts_need(graph):
    grants = {
        (r.inputs["bucket"], r.inputs["role"])
        for r in graph.of_type("gcp:storage/bucketIAMMember:BucketIAMMember")
        if "ai-test-maxtext@" in str(r.inputs["member"])
    }
    assert {role for _, role in grants} == {
        "roles/storage.objectViewer",
        "roles/storage.objectUser",
    }, grants


def test_the_plan_lists_the_tpu_vms_among_a_volumes_mounts():
    sections = dict(environment.describe(parse(config(tpuVms=[entry()]), "test")))
    assert "    TPU VMs maxtext: /data (ro)" in sections["Storage"]
    mounts = "    mounts: storage data -> /data (read-only), storage ckpt -> /ckpt"
    assert mounts in sections["TPU VMs (queued resources)"]


def test_the_script_mounts_then_runs_the_users_script_under_bash(tmp_path):
    vm = Vm(tmp_path, boot.render)
    mount = VolumeMount("data", "gcs", "datasets", "/data", read_only=True)
    result, calls = vm.run(boot.steps("echo ran >&2\n", [mount]))
    assert result.returncode == 0, result.stderr
    assert vm.mounted() == [f"{vm.root}/data"]
    assert "ran" in result.stderr and vm.signal() == DONE
    again, calls = vm.run(boot.steps("echo ran >&2\n", [mount]))
    assert again.returncode == 0 and not [c for c in calls if c.startswith("gcsfuse")]


def refused(tpu: dict[str, Any]) -> dict[str, str]:
    graph, error = record_program(config(tpuVms=[tpu]))
    assert isinstance(error, ConfigError), "accepted"
    assert graph.resources == []
    return {path.removeprefix("ai-infra:"): message for path, message in error.rendered}


@pytest.mark.parametrize(
    ("mounts", "path", "fix"),
    [
        ([{"volume": "nope", "mountPath": "/x"}], "storage[0].volume", "known: ckpt, data"),
        (
            [{"volume": "data", "mountPath": "/d"}, {"volume": "ckpt", "mountPath": "/d/x"}],
            "storage[1].mountPath",
            "overlaps storage[0]",
        ),
        ([{"volume": "data", "mountPath": "/etc/data"}], "storage[0].mountPath", "/etc"),
        ([{"volume": "data", "mountPath": "/home"}], "storage[0].mountPath", "home directories"),
        ([{"volume": "shared", "mountPath": "/shared"}], "storage[0].volume", "startupScript"),
    ],
)
def test_bad_mounts_are_refused_at_their_path(mounts, path, fix):
    problems = refused(entry(storage=mounts))
    assert fix in problems[f"tpuVms[0].{path}"], problems


def test_mounts_need_the_dedicated_account_that_gets_their_grants():
    own = entry(serviceAccount="runner@test-project.iam.gserviceaccount.com")
    assert "unset serviceAccount" in refused(own)["tpuVms[0].storage"]
