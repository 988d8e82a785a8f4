"""`python -m workload <stack> submit`: a team's JobSet rendered from the stack, checked offline,
and submitted through the official client, against an in-memory API server."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from tests.workload.conftest import Run
from tests.workload.fake_api import FakeApi

IMAGE = "us-docker.pkg.dev/cloud-tpu-images/jax-ai-image/tpu:latest"
PRETRAIN = (
    "prod",
    "submit",
    "--team",
    "pretrain",
    "--slice",
    "v5p-train",
    "--slices",
    "2",
    "--name",
    "llm",
    "--image",
    IMAGE,
)


def manifest(out: str) -> dict[str, Any]:
    return yaml.safe_load(out)


def pod(jobset: dict[str, Any]) -> dict[str, Any]:
    (job,) = jobset["spec"]["replicatedJobs"]
    return job["template"]["spec"]["template"]["spec"]


def checks(out: str) -> dict[str, str]:
    """`# ok   NAME: detail` lines of the report, by name."""
    found = {}
    for line in out.splitlines():
        if line.startswith(("# ok", "# FAIL")):
            status, rest = line[2:6].strip(), line[7:]
            name, detail = rest.split(": ", 1)
            found[name] = f"{status} {detail}"
    return found


def test_a_dry_run_prints_the_manifest_and_what_it_checked_and_sends_nothing(
    run: Run, api: FakeApi
):
    code, out, _ = run(*PRETRAIN)
    assert code == 0
    assert set(checks(out)) == {
        "capacity",
        "JobSet CRD",
        "RBAC",
        "admission policies",
        "Kueue admission",
    }
    assert all(c.startswith("ok") for c in checks(out).values())
    jobset = manifest(out)
    assert jobset["metadata"]["namespace"] == "pretrain"
    assert jobset["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "pretrain"
    assert api.calls == []


def test_apply_creates_the_jobset_after_asking_whether_it_may(run: Run, api: FakeApi):
    api.writable.add("pretrain")
    code, out, err = run(*PRETRAIN, "--apply")
    assert code == 0, err
    assert api.calls == [
        ("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"),
        ("POST", "/apis/jobset.x-k8s.io/v1alpha2/namespaces/pretrain/jobsets"),
    ]
    assert api.jobsets[("pretrain", "llm")] == manifest(out)
    assert "submitted JobSet pretrain/llm" in err


def test_a_name_that_exists_is_a_409_named_by_its_flag(run: Run, api: FakeApi):
    api.writable.add("pretrain")
    assert run(*PRETRAIN, "--apply")[0] == 0
    code, _, err = run(*PRETRAIN, "--apply")
    assert code == 2
    assert err.startswith("error: --name: a JobSet named llm already exists in pretrain")
    assert len(api.jobsets) == 1


def test_a_user_the_cluster_does_not_let_create_there_gets_a_clear_error(run: Run, api: FakeApi):
    code, _, err = run(*PRETRAIN, "--apply")
    assert code == 2
    assert err.startswith(
        "error: --team: your credentials may not create JobSets in namespace pretrain"
    )
    assert ("POST", "/apis/jobset.x-k8s.io/v1alpha2/namespaces/pretrain/jobsets") not in api.calls


def test_a_403_on_create_names_the_team(run: Run, api: FakeApi, monkeypatch):
    # The review said yes, the API server still refuses: say whose namespace it is.
    monkeypatch.setattr(
        "workload.cluster.Cluster.may_create_jobsets", lambda self, namespace: (True, "")
    )
    code, _, err = run(*PRETRAIN, "--apply")
    assert code == 2
    assert err.startswith("error: --team: creating JobSet pretrain/llm: 403 Forbidden")
    assert api.jobsets == {}


def test_a_member_of_another_team_is_refused_offline(run: Run, api: FakeApi):
    code, out, err = run(*PRETRAIN, "--as-group", "ml-finetune@example.com", "--apply")
    assert code == 2
    assert err.startswith(
        "error: --team: ml-finetune@example.com may not create JobSets in namespace pretrain"
    )
    assert out == "" and api.calls == []


BAD_INPUT = [
    (("--team", "nobody"), "--team: stack 'prod' has no team 'nobody' (teams: pretrain, finetune"),
    (("--slice", "v9-8"), "--slice: stack 'prod' has no TPU slice, provisioner shape or GPU pool"),
    (("--slices", "3"), "--slices: tpuSlices[0] v5p-train has 2 slice(s); the job asks for 3"),
    (("--slices", "0"), "--slices: 0 is not a number of slice(s)"),
    (("--nodes", "2"), "--nodes: tpuSlices[0] v5p-train is TPU capacity; give --slices"),
    (("--image", "Not An Image"), "--image: 'Not An Image' is not a container image reference"),
    (("--env", "1BAD=x"), "--env: '1BAD' is not a name Kubernetes accepts"),
    (("--env", "NOEQUALS"), "--env: 'NOEQUALS' is not KEY=VALUE"),
    (("--volume", "scratch"), "--volume: team pretrain is granted no volume or bucket 'scratch'"),
    (("--priority", "urgent"), "--priority: 'urgent' is not a priority class of the stack"),
    (("--name", "Big_Name"), "--name: 'Big_Name' is not a JobSet name"),
    (("--name", "x" * 50), "--name: '" + "x" * 50 + "' makes pod names like"),
    (("--ttl", "soon"), "--ttl: 'soon' is not a duration"),
    (("--cpu", "lots"), "--cpu: 'lots' is not a Kubernetes quantity"),
    (("--cpu", "300"), "--cpu: each pod asks 300, but a ct5p-hightpu-4t node offers pods 207.4"),
    (("--memory", "1Ti"), "--memory: each pod asks 1Ti, but a ct5p-hightpu-4t node offers pods"),
]


@pytest.mark.parametrize(
    ("flags", "message"), BAD_INPUT, ids=[f[0][0] + f[0][1] for f in BAD_INPUT]
)
def test_bad_input_is_refused_naming_the_flag_and_nothing_is_sent(
    run: Run, api: FakeApi, flags: tuple[str, ...], message: str
):
    api.writable.add("pretrain")
    argv: list[str] = list(PRETRAIN)
    for flag, value in zip(flags[::2], flags[1::2], strict=True):
        if flag in argv:
            argv[argv.index(flag) + 1] = value
        else:
            argv += [flag, value]
    code, out, err = run(*argv, "--apply")
    assert code == 2, err
    assert err.startswith(f"error: {message}"), err
    assert out == "" and api.calls == []


def test_a_bucket_the_team_is_not_granted_is_refused(run: Run):
    # research reads datasets and may not mount checkpoints.
    code, _, err = run(
        "prod",
        "submit",
        "--team",
        "research",
        "--slice",
        "v6e-flex",
        "--name",
        "x",
        "--image",
        IMAGE,
        "--volume",
        "checkpoints",
    )
    assert code == 2
    assert "team research is granted no volume or bucket 'checkpoints' (it has: datasets)" in err


def test_a_job_on_another_teams_own_slice_is_not_sent(run: Run, api: FakeApi):
    # v5p-train is pretrain's own (tpuSlices[].team): finetune's queue lists no flavor of it.
    # finetune has no tpuHostNetwork, so its multislice job takes the pod network, which the
    # namespace's policies admit, but the slice's toleration names pretrain, which they refuse;
    # Kueue would never admit it either.
    api.writable.add("finetune")
    argv = [*PRETRAIN, "--apply"]
    argv[argv.index("pretrain")] = "finetune"
    code, out, err = run(*argv)
    assert code == 1, err
    found = checks(out)
    assert found["admission policies"].startswith("FAIL ai-infra-team-scheduling"), found
    assert "# network: the pod network: team finetune has no tpuHostNetwork" in out
    assert "hostNetwork" not in pod(manifest(out))
    assert found["Kueue admission"].startswith("FAIL no flavor of ClusterQueue finetune")
    assert "not submitted: a check failed" in err
    assert api.calls == []


@pytest.mark.parametrize("gpu_direct_pods", [False, True])
def test_an_rdma_job_takes_the_mrdma_nics_from_eth2_and_leaves_the_second_gvnic(
    run: Run, tmp_path, monkeypatch, gpu_direct_pods: bool
):
    pool = {
        "name": "ultra",
        "machineType": "a3-ultragpu-8g",
        "acceleratorType": "nvidia-h200-141gb",
        "acceleratorCount": 8,
        "maxNodes": 2,
        "provisioning": "spot",
        "diskType": "hyperdisk-balanced",
        "gpuSubnetCidr": "10.140.0.0/28",
    }
    config = {
        "gcp:project": "p-rdma",
        "gcp:region": "us-east5",
        "gcp:zone": "us-east5-a",
        "ai-infra:protect": False,
        "ai-infra:gpuPools": [pool],
        "ai-infra:teams": [{"name": "t", "gpuDirectPods": gpu_direct_pods}],
    }
    # A stack file per case: the command's stacks are cached by their file name.
    stack_file = f"Pulumi.rdma{int(gpu_direct_pods)}.yaml"
    (tmp_path / stack_file).write_text(yaml.safe_dump({"config": config}))
    monkeypatch.chdir(tmp_path)
    code, out, err = run(
        stack_file,
        "submit",
        "--team",
        "t",
        "--slice",
        "ultra",
        "--nodes",
        "2",
        "--name",
        "nccl",
        "--image",
        "nvcr.io/nvidia/pytorch:24.12-py3",
        "--",
        "python",
        "t.py",
    )
    assert code == 1, err  # the team lists no groups: RBAC has no one to allow
    jobset = manifest(out)
    template = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    interfaces = json.loads(template["metadata"]["annotations"]["networking.gke.io/interfaces"])
    assert interfaces == [
        {"interfaceName": "eth0", "network": "default"},
        *({"interfaceName": f"eth{j + 2}", "network": f"ultra-rdma{j}"} for j in range(8)),
    ]
    spec = template["spec"]
    assert "initContainers" not in spec
    assert {v["name"]: v.get("hostPath", {}).get("path") for v in spec["volumes"]} == {
        "library-dir-host": "/home/kubernetes/bin/nvidia",
        "gib": "/home/kubernetes/bin/gib",
        "dshm": None,
    }
    assert spec["containers"][0]["command"][2].startswith(
        "source /usr/local/gib/scripts/set_nccl_env.sh"
    )
    assert checks(out)["RBAC"].startswith("FAIL no group may create JobSets in t")
    # GKE's RDMA pods mount the installer's host paths: only a gpuDirectPods team may.
    policies = checks(out)["admission policies"]
    if gpu_direct_pods:
        assert policies.startswith("ok"), policies
    else:
        assert policies.startswith("FAIL") and "hostPath only for GKE's GPUDirect paths" in policies
    assert "not submitted: a check failed" in err
