"""examples/ are outputs of the workload command: each file's first line is the command that
renders it, and rerunning it today gives the same bytes, checks included. Together they cover
every TPU family the shipped stacks run and a GPU pool, each on the fast path its capacity
was built with."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from catalog.tpu import ACCELERATOR_LABEL, FAMILIES
from graph.engine import REPO_ROOT, list_stacks, load_stack_config
from stacks.loading import parse
from tests.conftest import build_graph
from tests.test_docs import examples
from workload import cli
from workload.render import INTERFACES

EXAMPLES = sorted((REPO_ROOT / "examples").glob("*.yaml"))
PREFIX = "# uv run python -m workload "


def command_of(path: Path) -> list[str]:
    first = path.read_text().splitlines()[0]
    assert first.startswith(PREFIX), path
    return shlex.split(first.removeprefix(PREFIX))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_each_example_is_what_the_command_renders_today(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
):
    argv = command_of(path)
    if argv[0].endswith(".yaml"):
        # The stack of docs/tpu-provisioner.md's example, as a stack file of its own.
        stack = {"config": examples()[argv[0].split(".")[1]].config}
        (tmp_path / argv[0]).write_text(yaml.safe_dump(stack))
        monkeypatch.chdir(tmp_path)
    out = tmp_path / "rendered.yaml"
    assert cli.main([*argv[:2], "-o", str(out), *argv[2:]]) == 0, capsys.readouterr().err
    assert out.read_text() == path.read_text()
    assert "# FAIL" not in out.read_text()


def manifest(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text())


def pod(jobset: dict[str, Any]) -> dict[str, Any]:
    (job,) = jobset["spec"]["replicatedJobs"]
    return job["template"]["spec"]["template"]


def family_of(jobset: dict[str, Any]) -> str:
    accelerator = pod(jobset)["spec"]["nodeSelector"].get(ACCELERATOR_LABEL)
    if accelerator is None:
        return "gpu"
    return next(f.prefix for f in FAMILIES if f.gke_accelerator == accelerator)


def test_examples_cover_every_family_the_shipped_stacks_run():
    used = set()
    for stack in list_stacks():
        config = parse(load_stack_config(stack), stack)
        used |= {s.shape.family.prefix for s in config.tpu_slices}
        used |= {"gpu"} if config.gpu_pools else set()
    assert used <= {family_of(manifest(p)) for p in EXAMPLES}


def test_multislice_without_extra_nics_runs_on_the_host_network():
    spec = pod(manifest(REPO_ROOT / "examples" / "multislice-jobset.yaml"))["spec"]
    assert (spec["hostNetwork"], spec["dnsPolicy"]) == (True, "ClusterFirstWithHostNet")
    # The driver exchanges the pod's own token for the bucket mounts on the host network.
    buckets = [v for v in spec["volumes"] if "csi" in v]
    assert buckets
    for volume in buckets:
        assert volume["csi"]["volumeAttributes"]["hostNetworkPodKSA"] == "true"


@pytest.mark.parametrize(
    ("name", "stack", "slice_name"),
    [("v6e-multinic-jobset.yaml", "prod", "v6e-tune"), ("tpu7x-jobset.yaml", "staging", "iron")],
)
def test_slices_with_extra_nics_take_them_through_the_networks_the_stack_built(
    name: str, stack: str, slice_name: str
):
    graph = build_graph(load_stack_config(stack), stack=stack)
    template = pod(manifest(REPO_ROOT / "examples" / name))
    assert "hostNetwork" not in template["spec"]
    interfaces = json.loads(template["metadata"]["annotations"][INTERFACES])
    assert interfaces[0] == {"interfaceName": "eth0", "network": "default"}
    # The pools' NICs in order, each through the Network object of its VPC.
    params = {
        r.inputs["spec"]["vpc"]: r.inputs["metadata"]["name"]
        for r in graph.of_type("kubernetes:networking.gke.io/v1:GKENetworkParamSet")
    }
    networks = {
        r.inputs["metadata"]["name"]
        for r in graph.of_type("kubernetes:networking.gke.io/v1:Network")
    }
    for pool in graph.of_type("gcp:container/nodePool:NodePool"):
        if pool.inputs["nodeConfig"]["labels"].get("ai-infra/slice") != slice_name:
            continue
        nics = pool.inputs["networkConfig"]["additionalNodeNetworkConfigs"]
        assert [i["network"] for i in interfaces[1:]] == [params[n["network"]] for n in nics]
        assert {i["network"] for i in interfaces[1:]} <= networks


def test_an_a3_mega_job_takes_its_nics_sidecar_and_nccl_settings():
    template = pod(manifest(REPO_ROOT / "examples" / "a3mega-jobset.yaml"))
    interfaces = json.loads(template["metadata"]["annotations"][INTERFACES])
    assert [i["network"] for i in interfaces] == ["default", *(f"mega-gpu{k}" for k in range(8))]
    assert [i["interfaceName"] for i in interfaces] == [f"eth{k}" for k in range(9)]
    spec = template["spec"]
    (sidecar,) = spec["initContainers"]
    assert (sidecar["name"], sidecar["restartPolicy"]) == ("tcpxo-daemon", "Always")
    devices = template["metadata"]["annotations"]["devices.gke.io/container.tcpxo-daemon"]
    assert yaml.safe_load(devices)[-1] == {"path": "/dev/dmabuf_import_helper"}
    (main,) = spec["containers"]
    assert main["command"][:3] == [
        "/bin/bash",
        "-c",
        'source /usr/local/nvidia/lib64/nccl-env-profile.sh && exec "$@"',
    ]
    assert main["command"][4:] == ["torchrun", "--nnodes=16", "--nproc-per-node=8", "train.py"]


def test_tpu_extra_nics_are_reported_without_a_bandwidth_claim():
    for name in ("v6e-multinic-jobset.yaml", "tpu7x-jobset.yaml"):
        network = next(
            line
            for line in (REPO_ROOT / "examples" / name).read_text().splitlines()
            if line.startswith("# network:")
        )
        assert "no bandwidth is claimed" in network and "only known to use eth0" in network
