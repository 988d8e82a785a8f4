"""The GPU cluster startup script, run under bash against stubs: every command it would run on a
VM (gcsfuse, mount, curl, gcloud, ray, ...) is a stub on PATH that logs its arguments."""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
from pathlib import Path

import pytest

from components.gpu_clusters.boot import (
    GCSFUSE_VERSION,
    GOOGLE_APT_KEY,
    OPS_AGENT_REPO_SCRIPT,
    RAY_VERSION,
    Command,
    GcsMount,
    NfsMount,
    OpsAgent,
    Ray,
    render,
)

# Each stub logs "name arg arg ..." and exits with $STUB_<NAME>_EXIT (0 by default).
STUB = """#!/bin/bash
name=$(basename "$0")
echo "$name $*" >> "$STUB_LOG"
var="STUB_${name//[^a-zA-Z0-9]/_}_EXIT"
{extra}
exit "${!var:-0}"
"""
STUBS = {
    "gcsfuse": "",
    "mount": "",
    "mount.nfs": "",
    "apt-get": "",
    "curl": "",
    "sleep": "",
    "useradd": "",
    "id": "",
    "systemctl": "",
    # python3 -m venv DIR: a venv whose pip and ray are stubs too.
    "python3": 'if [[ $1 == -m && $2 == venv ]]; then /bin/mkdir -p "${@: -1}/bin"; '
    'for tool in pip ray; do cp "$0" "${@: -1}/bin/$tool"; done; fi',
    "hostname": 'echo "$STUB_HOSTNAME"',
    # The head: the VM listed first; the stub answers the list with $STUB_HEAD.
    "gcloud": 'echo "$STUB_HEAD"',
    # runuser -u USER -- CMD...: log, then let the command's own stub run.
    "runuser": 'shift 3; "$@"',
    "ray": "",
    "mkdir": "",
    "gpg": "",
}


def run(
    steps, tmp_path: Path, without: tuple[str, ...] = (), **env: str
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    root = tmp_path / "root"
    for directory in ("etc/apt/sources.list.d", "usr/share/keyrings"):
        (root / directory).mkdir(parents=True, exist_ok=True)
    (root / "etc/os-release").write_text("ID=ubuntu\nVERSION_CODENAME=noble\n")
    for name, extra in STUBS.items():
        if name in without:
            continue
        path = bin_dir / name
        path.write_text(STUB.replace("{extra}", extra))
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    script = tmp_path / "startup.sh"
    script.write_text(render(steps))
    log = tmp_path / "calls.log"
    log.touch()
    environment = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "STUB_LOG": str(log),
        "STUB_HOSTNAME": "demo-0001",
        "STUB_HEAD": "demo-0001",
        "HOME": str(tmp_path),
        "AI_INFRA_ROOT": str(root),
        **env,
    }
    # The prelude puts /opt/conda/bin first; stubs must win, so mask it.
    text = script.read_text().replace('export PATH="/opt/conda/bin:$PATH"', "")
    script.write_text(text)
    result = subprocess.run(
        ["bash", str(script)], env=environment, capture_output=True, text=True, timeout=60
    )
    return result, log.read_text().splitlines()


ALL_STEPS = [
    OpsAgent(),
    GcsMount("my-data", "/gcs/data"),
    GcsMount("ref-bucket", "/gcs/ref", read_only=True),
    NfsMount("10.0.0.2", "share", "/nfs/home"),
    Ray("demo", "us-east5-a", 2),
    Command("echo train --epochs 'it''s' >&2"),
]


def test_the_script_parses():
    result = subprocess.run(["bash", "-n"], input=render(ALL_STEPS), text=True, capture_output=True)
    assert result.returncode == 0, result.stderr


def test_mounts_ray_head_and_command_run_in_order(tmp_path):
    result, calls = run(ALL_STEPS, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "gcsfuse --implicit-dirs -o allow_other my-data /gcs/data" in calls
    assert not any(c.startswith("apt-get") for c in calls), "gcsfuse was there already"
    assert "gcsfuse --implicit-dirs -o allow_other,ro ref-bucket /gcs/ref" in calls
    assert "mount -t nfs -o hard,timeo=600,retrans=3 10.0.0.2:/share /nfs/home" in calls
    venv = tmp_path / f"root/opt/ai-infra/ray-{RAY_VERSION}"
    assert f"python3 -m venv --system-site-packages {venv}" in calls
    assert f"pip install --quiet ray[default]=={RAY_VERSION}" in calls
    assert "ray start --head --port=6379 --num-gpus=2" in calls
    listing = next(c for c in calls if c.startswith("gcloud compute instances list"))
    assert "--filter=labels.aiinfra-cluster=demo" in listing and "--zones=us-east5-a" in listing
    order = [c.split()[0] for c in calls if c.split()[0] in ("gcsfuse", "mount", "ray")]
    assert order == ["gcsfuse", "gcsfuse", "mount", "ray"]
    # startupCommand ran, with its own quoting intact, after everything above.
    assert "train --epochs its" in result.stderr
    assert result.stderr.index("running startupCommand") > result.stderr.index("Ray head")


def test_startup_command_runs_last_and_sees_its_arguments(tmp_path):
    marker = tmp_path / "ran"
    steps = [NfsMount("10.0.0.2", "share", "/nfs/a"), Command(f"touch {shlex.quote(str(marker))}")]
    result, calls = run(steps, tmp_path)
    assert result.returncode == 0, result.stderr
    assert marker.exists()
    assert calls[-1].startswith("mount -t nfs")


def test_a_worker_joins_the_head(tmp_path):
    result, calls = run(
        [Ray("demo", "us-east5-a", 8)], tmp_path, STUB_HOSTNAME="demo-0002", STUB_HEAD="demo-0001"
    )
    assert result.returncode == 0, result.stderr
    assert "ray start --address=demo-0001:6379 --num-gpus=8" in calls
    assert not any("--head" in c for c in calls)


def test_ops_agent_retries_with_random_backoff_and_never_blocks(tmp_path):
    result, calls = run(
        [OpsAgent(attempts=4, max_backoff_seconds=8), Command("echo finished >&2")],
        tmp_path,
        STUB_curl_EXIT="1",
        STUB_systemctl_EXIT="3",
    )
    # The command ran and the script succeeded although every install attempt failed.
    assert "finished" in result.stderr
    assert result.returncode == 0, result.stderr
    assert "Ops Agent not installed" in result.stderr
    attempts = [c for c in calls if c.startswith("curl")]
    assert len(attempts) == 4
    assert all(OPS_AGENT_REPO_SCRIPT in c for c in attempts)
    sleeps = [int(c.split()[1]) for c in calls if c.startswith("sleep")]
    assert len(sleeps) == 3 and all(1 <= s <= 8 for s in sleeps)
    # The caps double (2, 4, 8): a random draw beneath each.
    assert [s <= cap for s, cap in zip(sleeps, (2, 4, 8), strict=True)] == [True] * 3


def test_a_running_ops_agent_is_left_alone(tmp_path):
    result, calls = run([OpsAgent()], tmp_path)
    assert result.returncode == 0
    assert not any(c.startswith("curl") for c in calls)


def test_gcsfuse_is_installed_pinned_from_googles_repository_when_missing(tmp_path):
    result, calls = run([GcsMount("b", "/gcs/b")], tmp_path, without=("gcsfuse",))
    assert f"apt-get install -y gcsfuse={GCSFUSE_VERSION}" in calls
    assert f"curl -fsSL {GOOGLE_APT_KEY}" in calls
    sources = (tmp_path / "root/etc/apt/sources.list.d/gcsfuse.list").read_text()
    assert sources.split() == [
        "deb",
        "[signed-by=/usr/share/keyrings/cloud.google.gpg]",
        "https://packages.cloud.google.com/apt",
        "gcsfuse-noble",
        "main",
    ]
    # The stub installed nothing, so the mount itself fails, and says so.
    assert result.returncode == 1 and "FAILED" in result.stderr


def test_a_failed_mount_is_reported_and_the_rest_still_runs(tmp_path):
    result, calls = run(
        [GcsMount("b", "/gcs/b"), Command("echo after >&2")], tmp_path, STUB_gcsfuse_EXIT="1"
    )
    assert result.returncode == 1
    assert any(c.startswith("gcsfuse") for c in calls)
    assert "FAILED: 'gcsfuse b'" in result.stderr or "FAILED: gcsfuse b" in result.stderr
    assert "after" in result.stderr


@pytest.mark.parametrize(
    "hostile", ["x; touch /tmp/pwned", "$(touch /tmp/pwned)", "`id`", "a\nb", "it's"]
)
def test_values_reach_bash_quoted(tmp_path, hostile):
    result, calls = run([GcsMount(hostile, "/gcs/x")], tmp_path)
    assert result.returncode == 0, result.stderr
    mounts = [c for c in calls if c.startswith("gcsfuse")]
    assert mounts and hostile.split("\n")[0] in mounts[0]
    assert not os.path.exists("/tmp/pwned")
