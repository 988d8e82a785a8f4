"""The job starts training: a multi-node GPU job's processes find each other, every pod has a
shared-memory `/dev/shm`, a program error fails the job instead of restarting it, and a
finished JobSet goes away on its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from graph.engine import REPO_ROOT
from tests.workload.conftest import Run
from tests.workload.test_submit import PRETRAIN, manifest
from workload import checks as offline
from workload.render import COMPLETION_INDEX, RESTARTABLE_EXIT_CODES

EXAMPLES = sorted((REPO_ROOT / "examples").glob("*.yaml"))
GPU = (
    "staging",
    "submit",
    "--team",
    "release-eval",
    "--slice",
    "l4-eval",
    "--nodes",
    "4",
    "--name",
    "l4",
    "--image",
    "nvcr.io/nvidia/pytorch:24.12-py3",
    "--as-group",
    "ml-release@example.com",
    "--",
    "torchrun",
    "--nproc-per-node=2",
    "eval.py",
)


def job_of(jobset: dict[str, Any]) -> dict[str, Any]:
    (job,) = jobset["spec"]["replicatedJobs"]
    return job


def env_of(jobset: dict[str, Any]) -> list[dict[str, Any]]:
    (main,) = job_of(jobset)["template"]["spec"]["template"]["spec"]["containers"]
    return main.get("env", [])


def expand(env: list[dict[str, Any]], index: int) -> dict[str, str]:
    """The variables as the kubelet gives them to the pod of completion index `index`:
    `$(NAME)` expands to a variable defined earlier in the list."""
    found: dict[str, str] = {}
    for entry in env:
        if "valueFrom" in entry:
            path = entry["valueFrom"]["fieldRef"]["fieldPath"]
            assert path == f"metadata.annotations['{COMPLETION_INDEX}']"
            found[entry["name"]] = str(index)
            continue
        value = entry["value"]
        for name, known in found.items():
            value = value.replace(f"$({name})", known)
        found[entry["name"]] = value
    return found


def test_a_multi_node_gpu_job_gives_each_pod_its_rank_and_the_leaders_address(run: Run):
    code, out, err = run(*GPU)
    assert code == 0, err
    jobset = manifest(out)
    job = job_of(jobset)
    assert job["template"]["spec"]["completionMode"] == "Indexed"
    pods = job["template"]["spec"]["completions"]
    # JobSet names pod 0 of Job 0 `<jobset>-<job>-0-0` under the headless service `<jobset>`
    # (enableDNSHostnames, on unless the JobSet turns it off).
    assert "network" not in jobset["spec"]
    leader = f"{jobset['metadata']['name']}-{job['name']}-0-0.{jobset['metadata']['name']}"
    ranks = set()
    for index in range(pods):
        env = expand(env_of(jobset), index)
        assert env["NNODES"] == env["PET_NNODES"] == str(pods) == "4"
        assert env["MASTER_ADDR"] == env["PET_MASTER_ADDR"] == leader
        assert env["JAX_COORDINATOR_ADDRESS"] == leader
        assert env["PET_MASTER_PORT"] == env["MASTER_PORT"]
        ranks.add(env["NODE_RANK"])
        assert env["PET_NODE_RANK"] == env["NODE_RANK"]
    assert ranks == {str(i) for i in range(pods)}


def test_tpu_pods_get_no_gpu_rendezvous(run: Run):
    code, out, _ = run(*PRETRAIN)
    assert code == 0
    names = {e["name"] for e in env_of(manifest(out))}
    assert not names & {"NNODES", "MASTER_ADDR", "PET_NODE_RANK"}


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_every_pod_has_a_shared_memory_dev_shm(path: Path):
    spec = job_of(yaml.safe_load(path.read_text()))["template"]["spec"]["template"]["spec"]
    (main,) = spec["containers"]
    (shm,) = [m for m in main["volumeMounts"] if m["mountPath"] == "/dev/shm"]
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes[shm["name"]]["emptyDir"]["medium"] == "Memory"


def fails_the_job(job: dict[str, Any], container: str, code: int) -> bool:
    """Whether the Job's podFailurePolicy fails it for a pod whose `container` exited with
    `code` (Kubernetes' onExitCodes semantics: In / NotIn over the values)."""
    for rule in job["podFailurePolicy"]["rules"]:
        codes = rule["onExitCodes"]
        if codes.get("containerName", container) != container or code == 0:
            continue
        matched = (code in codes["values"]) == (codes["operator"] == "In")
        if matched:
            return rule["action"] == "FailJob"
    return False


def test_a_program_error_fails_the_jobset_and_a_signal_or_42_restarts_it(run: Run):
    code, out, err = run(*PRETRAIN, "--max-restarts", "3")
    assert code == 0, err
    jobset = manifest(out)
    job = job_of(jobset)["template"]["spec"]
    assert fails_the_job(job, "main", 1) and fails_the_job(job, "main", 2)
    assert fails_the_job(job, "main", 127)
    # Preemption, maintenance and the OOM killer end the container by signal: restart.
    for restartable in (42, 137, 143):
        assert not fails_the_job(job, "main", restartable)
    (rule,) = jobset["spec"]["failurePolicy"]["rules"]
    assert (rule["action"], rule["onJobFailureReasons"]) == ("FailJobSet", ["PodFailurePolicy"])
    assert jobset["spec"]["failurePolicy"]["maxRestarts"] == 3
    # Kubernetes takes at most 255 values, ascending and unique (batch/v1 validation).
    values = job["podFailurePolicy"]["rules"][0]["onExitCodes"]["values"]
    assert values == sorted(set(values)) == list(RESTARTABLE_EXIT_CODES) and len(values) <= 255
    assert job["template"]["spec"]["restartPolicy"] == "Never"  # podFailurePolicy needs it
    for created in offline.created_objects(jobset)[1:]:
        for owner in created["metadata"].get("ownerReferences", []):
            owner["uid"] = "0"
        kubernetes_validate.validate(created, "1.33.0", strict=True)


def test_a_finished_jobset_is_deleted_after_12_hours_unless_told(run: Run):
    _, out, _ = run(*PRETRAIN)
    assert manifest(out)["spec"]["ttlSecondsAfterFinished"] == 12 * 3600
    _, out, _ = run(*PRETRAIN, "--ttl", "2d")
    assert manifest(out)["spec"]["ttlSecondsAfterFinished"] == 2 * 86400


def test_the_grace_period_gives_a_stopped_pod_time_to_checkpoint(run: Run):
    _, out, _ = run(*PRETRAIN)
    spec = job_of(manifest(out))["template"]["spec"]["template"]["spec"]
    assert "terminationGracePeriodSeconds" not in spec
    _, out, _ = run(*PRETRAIN, "--grace-period", "5m")
    spec = job_of(manifest(out))["template"]["spec"]["template"]["spec"]
    assert spec["terminationGracePeriodSeconds"] == 300
    code, out, err = run(*PRETRAIN, "--grace-period", "2h")
    assert code == 2 and out == ""
    assert err.startswith("error: --grace-period: '2h' is more than an hour"), err
