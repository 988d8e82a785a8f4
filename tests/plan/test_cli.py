"""The offline plan: what a reviewer reads, and a clean failure on bad config."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from graph.engine import REPO_ROOT
from plan import summary
from plan.cli import main
from tests.conftest import build_graph
from tests.test_docs import examples


def test_dev_plan_shows_what_a_reviewer_checks(capsys):
    assert main(["dev"]) == 0
    out = capsys.readouterr().out
    assert (
        "NodePool tpu-v5e-dev-pool  machine=ct5lp-hightpu-4t disk=pd-balanced:100GB nodes=1 spot"
        in out
    )
    assert "cidr=10.129.0.0/20 pods=192.168.64.0/20, services=192.168.80.0/20" in out
    assert "roles/iam.workloadIdentityUser -> serviceAccount:ml-platform-dev.svc.id.goog" in out
    assert "v5e-dev: 1 x v5litepod-4 topology 2x2" in out
    assert "total: 4 TPU chips" in out
    # One 4-chip slice does not divide between two teams: the cohort holds it.
    assert re.search(r"research/research: v5litepod-4=0 google.com/tpu", out)
    assert "cohort ai-infra holds: v5litepod-4=4 google.com/tpu" in out
    assert "runs as applied/training -> ai-dev-applied@ml-platform-dev.iam" in out
    assert re.search(r"^\s+2\s+kubernetes:helm.sh/v3:Release$", out, re.M)


def test_plan_header_counts_as_the_summary_does(capsys):
    assert main(["dev"]) == 0
    out = capsys.readouterr().out
    header = re.match(r"Plan for stack 'dev' .*: (\d+) resources, (\d+) components$", out, re.M)
    assert header, out.splitlines()[0]
    by_type = re.findall(r"^\s+(\d+)\s+\S+:\S+$", out.split("Resources by type:")[1], re.M)
    assert int(header[1]) == sum(int(n) for n in by_type)
    components = re.findall(r"^\s*# ", out.split("Resources by type:")[0], re.M)
    assert int(header[2]) == len(components)


def test_children_in_registration_order_and_components_with_their_config_key(capsys):
    assert main(["staging"]) == 0
    lines = capsys.readouterr().out.splitlines()
    start = lines.index("# Network network  (network)")
    # The order components/network/ constructs them in (not by type, not by name).
    assert [line.split()[2] for line in lines[start + 1 : start + 10]] == [
        "network-vpc",
        "network-subnet",
        "network-router",
        "network-nat",
        "network-allow-internal",
        "network-allow-webhooks",
        "network-allow-iap-ssh",
        "network-dcn-1-vpc",
        "network-dcn-1-subnet",
    ]
    # The network and buckets every system shares come first; the systems follow.
    assert lines[start + 10].startswith("# Bucket bucket-checkpoints  (buckets[0])")
    assert lines[start + 12].startswith("# GkeCluster gke  (cluster)")
    assert "# TpuSlice tpu-v6e-eval  (tpuSlices[2])" in lines
    assert "# GpuPool gpu-l4-eval  (gpuPools[0])" in lines
    assert any(re.fullmatch(r"# \w+ services  \(gcp:project\)", line) for line in lines)
    assert "  # WorkloadIdentity team-research-identity" in lines  # nested: no key of its own
    pools = {line.split()[2]: line for line in lines if " NodePool " in line}
    assert " disk=hyperdisk-balanced:100GB " in pools["tpu-iron-0"]
    assert " disk=pd-balanced:200GB " in pools["gpu-l4-eval-pool"]


def test_prod_plan_counts_chips_and_marks_protection(capsys):
    assert main(["prod"]) == 0
    out = capsys.readouterr().out
    assert "placement=COMPACT topology=4x8x8" in out
    assert "total: 1664 TPU chips" in out
    assert re.search(r"Cluster gke-cluster .*\[protected\]", out)


def test_bad_config_prints_only_the_errors_and_exits_1(tmp_path, capsys):
    stack = tmp_path / "Pulumi.broken.yaml"
    stack.write_text(
        yaml.safe_dump(
            {
                "config": {
                    "gcp:project": "test-project",
                    "gcp:region": "us-east5",
                    "gcp:zone": "us-east5-a",
                    "ai-infra:tpuSlices": [{"name": "a", "accelerator": "v5p-33"}],
                    "ai-infra:teamz": [],
                }
            }
        )
    )
    assert main([str(stack)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "ai-infra:tpuSlices[0].accelerator: 'v5p-33' is not a Cloud TPU accelerator" in (
        captured.err
    )
    assert "ai-infra:teamz: unknown config key" in captured.err
    assert "Traceback" not in captured.err


def test_a_key_written_twice_is_refused_like_the_pulumi_cli_does(tmp_path, capsys):
    stack = tmp_path / "Pulumi.twice.yaml"
    stack.write_text(
        "config:\n"
        "  gcp:project: test-project\n"
        "  gcp:region: us-east5\n"
        "  gcp:zone: us-east5-a\n"
        "  ai-infra:protect: false\n"
        "  ai-infra:protect: true\n"
    )
    assert main([str(stack)]) == 1
    err = capsys.readouterr().err
    assert "ai-infra:protect: is written twice in one mapping (lines 5 and 6)" in err


def test_the_plan_says_release_channel_slices_hold_their_upgrades(capsys):
    assert main(["prod"]) == 0
    out = capsys.readouterr().out.split("Resources by type:")[0]  # the tree, not the cost
    pools = [line for line in out.splitlines() if "NodePool tpu-v5p-train-" in line]
    assert pools and all("upgrades=held-until-end-of-support" in line for line in pools)
    assert "upgrades=held" not in next(
        line for line in out.splitlines() if "NodePool gke-cpu" in line
    )


def test_plan_lists_each_gpu_cluster(tmp_path, capsys):
    stack = tmp_path / "Pulumi.gpu.yaml"
    stack.write_text(
        yaml.safe_dump(
            {
                "config": {
                    "gcp:project": "test-project",
                    "gcp:region": "us-east5",
                    "gcp:zone": "us-east5-a",
                    "ai-infra:protect": False,
                    "ai-infra:buckets": [{"name": "data"}],
                    "ai-infra:gpuClusters": [
                        {
                            "name": "demo",
                            "instanceCount": 2,
                            "network": "multi-nic",
                            "orchestrator": "ray",
                            "gcsMounts": [{"bucket": "data", "mountPath": "/gcs/data"}],
                            "nfsShares": [{"mountPath": "/nfs/home"}],
                        }
                    ],
                }
            }
        )
    )
    assert main([str(stack)]) == 0
    out = capsys.readouterr().out
    assert (
        "demo: 2 x a2-highgpu-2g with 2 x nvidia-tesla-a100 = 4 GPUs in us-east5-a, on-demand, "
        "placement compact, network multi-nic (5 NIC(s)), mounts: gs://test-project-ai-gpu-data "
        "-> /gcs/data, BASIC_SSD 2560GiB -> /nfs/home, orchestrator ray"
    ) in out
    assert "InstanceTemplate gpucluster-demo-template  machine=a2-highgpu-2g" in out
    assert "gpu=2xnvidia-tesla-a100 nics=5" in out
    assert (
        "InstanceGroupManager gpucluster-demo-mig  name=ai-gpu-demo vms=2 zone=us-east5-a "
        "waits=STABLE:30m"
    ) in out
    assert "placement=COLLOCATED" in out
    assert (
        "IAMCustomRole gpucluster-demo-ray-discovery  id=ai_gpu_demo_ray "
        "permissions=compute.instanceGroupManagers.get,compute.instanceGroupManagers.list"
    ) in out
    assert "Dashboard gpucluster-demo-dashboard  'GPU cluster ai-gpu-demo' charts=10" in out
    assert "BASIC_SSD 2560GiB in us-east5-a" in out
    # GCP assigns the Filestore address at create time: the plan does not pass off the mock's.
    outputs = out.split("Outputs (`pulumi stack output`):")[1]
    assert '"filestoreIps": ["(known after pulumi up)"]' in outputs
    assert (
        "    GPU clusters: ai-gpu-demo 2 x a2-highgpu-2g with 2 x nvidia-tesla-a100 = 4 GPUs" in out
    )


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("config: [1, 2]\n", "config: must be a mapping"),
        ("- a\n", "must be a mapping with a config: key"),
        ("config:\n  gcp:project: [\n", "is not valid YAML on line 3"),
        ("config:\n  1: 2\n", "has the key 1, which YAML reads as int"),
        # yaml.v3 keeps an unknown tag's data: the program then refuses a list; nothing runs.
        (
            "config:\n  ai-infra:protect: !!python/object/apply:os.system [id]\n",
            "ai-infra:protect: expected true or false",
        ),
    ],
)
def test_a_malformed_stack_file_is_a_clean_error(tmp_path, capsys, text, says):
    stack = tmp_path / "Pulumi.bad.yaml"
    stack.write_text(text)
    assert main([str(stack)]) == 1
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err


def test_the_capacity_totals_count_every_system(tmp_path, capsys):
    """GKE slices, TPU VMs, the provisioner's quota and Slurm nodesets, each at its maximum."""
    stack = tmp_path / "Pulumi.mixed.yaml"
    stack.write_text(
        yaml.safe_dump(
            {
                "config": {
                    "gcp:project": "test-project",
                    "gcp:region": "us-central1",
                    "gcp:zone": "us-central1-a",
                    "ai-infra:protect": False,
                    "ai-infra:cluster": {"releaseChannel": "NONE", "maxPodsPerNode": 32},
                    "ai-infra:tpuSlices": [{"name": "train", "accelerator": "v5p-16"}],
                    "ai-infra:tpuVms": [
                        {"name": "vm", "accelerator": "v5litepod-8", "nodeCount": 2}
                    ],
                    "ai-infra:tpuProvisioner": {
                        "enabled": True,
                        "image": "us-docker.pkg.dev/p/i/tpu-provisioner@sha256:" + "a" * 64,
                        "quota": {"v5p-32": 2},
                    },
                }
            }
        )
    )
    assert main([str(stack)]) == 0
    out = capsys.readouterr().out
    # v5p-16: 2 hosts of 4 chips; two v5litepod-8 slices of 8 chips on one host each; the
    # provisioner at most two v5p-32 slices of 4 hosts.
    assert "  TPU chips: 56 (v5litepod 16, v5p 40)" in out
    assert "    TPU VMs: vm 2 x v5litepod-8 host = 16 v5litepod chips, on-demand" in out
    assert "    TPU provisioner: v5p-32 up to 8 x ct5p-hightpu-4t = 32 v5p chips" in out


def test_the_plan_lists_the_stack_outputs_with_what_is_known(capsys):
    assert main(["dev"]) == 0
    out = capsys.readouterr().out.split("Outputs (`pulumi stack output`):")[1]
    assert "  clusterName: ai-dev-gke" in out
    assert "  kubeconfig: [secret]" in out
    assert '  buckets: {"scratch": "gs://ml-platform-dev-ai-dev-scratch"}' in out


def test_the_plan_json_carries_the_numbers(capsys):
    assert main(["prod", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["schemaVersion"] == 4
    numbers = document["summary"]
    assert numbers["tpuChips"] == {"total": 1664, "byKind": {"v5p": 512, "v6e": 1152}}
    assert document["tpuChips"] == 1664
    assert numbers["quotas"]["pretrain"]["v5p-512-team-pretrain google.com/tpu"] == 512
    assert numbers["outputs"]["kubeconfig"] == "[secret]"


def test_the_plan_caches_bytecode_even_where_python_is_told_not_to(tmp_path):
    """`uv run` prints nothing of its own when pyproject leaves bytecode alone (uv#12202);
    the plan writes the SDKs' bytecode itself, so it stays fast where PYTHONDONTWRITEBYTECODE
    is set."""
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    assert "compile-bytecode" not in pyproject["tool"]["uv"]

    def cached(*command: str) -> list[Path]:
        prefix = tmp_path / command[-1].replace(" ", "-")
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": str(prefix)}
        subprocess.run([sys.executable, *command], cwd=REPO_ROOT, env=env, capture_output=True)
        return list(prefix.rglob("*.pyc"))

    assert cached("-c", "import pulumi") == []  # what Python does on its own
    # A stack that does not exist: the plan's code and the SDKs load, then it stops.
    written = cached("-m", "plan", "no-such-stack")
    assert any("pulumi_gcp" in str(p) for p in written)


def test_slurm_nodesets_count_their_chips_gpus_and_vms_at_their_maximum():
    """A multi-host TPU nodeset counts a Slurm node per TPU VM; a CPU nodeset counts the VMs
    and GPUs of the instance template its file names."""

    def lines(example: str) -> list[str]:
        graph = build_graph(examples()[example].config, stack=example)
        return summary.render(summary.summarize(graph))

    multihost = lines("slurm-multihost")
    # Four v4-16 workers (two slices of two hosts) of four chips each.
    assert "  TPU chips: 16 (v4 16)" in multihost
    assert "    Slurm nodesets: debug up to 4 x n2-standard-2, on-demand" in multihost
    cpu = lines("slurm-cpu")
    assert "  GPUs: 4 (nvidia-tesla-t4 4)" in cpu
    assert (
        "    Slurm nodesets: t4 up to 4 x n1-standard-8 with 1 x nvidia-tesla-t4 = 4 GPUs, spot"
        in cpu
    )
    assert "    Slurm nodesets: c2 up to 20 x c2-standard-60, on-demand" in cpu


@pytest.mark.parametrize("command", ["plan", "workload"])
def test_help_answers_before_any_sdk_is_imported(command: str):
    """The front door reads its flags first (benchmarks/README.md): `--help` loads neither
    Pulumi, its providers, pydantic nor the Kubernetes client."""
    probe = (
        "import runpy, sys\n"
        f"sys.argv = ['{command}', '--help']\n"
        "try:\n"
        f"    runpy.run_module('{command}', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = ('pulumi', 'pulumi_gcp', 'pulumi_kubernetes', 'pydantic', 'kubernetes')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.splitlines()[-1] == "[]", done.stdout[-2000:]
