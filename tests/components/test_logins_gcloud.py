"""A `logins` member runs the installed gcloud as a user would, against a local fake of the APIs
that allows exactly what the stack grants (`tests.components.gcloud_api`): `gcloud compute ssh`
to a GPU cluster's VMs, `gcloud alpha compute tpus tpu-vm ssh` and `gcloud compute tpus
queued-resources ssh` to TPU VMs. Each test fails when gcloud needs a permission the stack does
not grant, and shows where the member gets in, and with sudo or not."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.components.gcloud_api import FakeGcp, Iam
from tests.conftest import build_graph, with_config

GCLOUD = shutil.which("gcloud")
pytestmark = pytest.mark.skipif(
    GCLOUD is None, reason="needs the Google Cloud CLI (gcloud) on PATH; .ci/run installs it"
)
PROJECT = "test-project"
ZONE = "us-east5-a"
ALICE = "user:alice@example.com"
BOB = "user:bob@example.com"
TOKENS = {"tok-alice": ALICE, "tok-bob": BOB}


def gcloud(fake: FakeGcp, home: Path, who: str, *argv: str) -> subprocess.CompletedProcess[str]:
    token = next(t for t, m in TOKENS.items() if m == who)
    env = fake.environment(home / who.split(":")[1].split("@")[0], token, who.split(":", 1)[1])
    assert GCLOUD is not None
    return subprocess.run(
        [GCLOUD, *argv], env=env, capture_output=True, text=True, timeout=120, check=False
    )


def started(config: dict[str, Any], groups: dict[str, list[str]] | None = None) -> FakeGcp:
    graph = build_graph(config)
    return FakeGcp(graph, TOKENS, Iam(graph, groups))


GPU_LOGINS = [{"member": ALICE, "sudo": True}, {"member": "group:ml@example.com"}]


def test_a_gpu_login_reaches_its_clusters_vms_with_gcloud_compute_ssh(tmp_path):
    fake = started(
        with_config(gpuClusters=[{"name": "train", "logins": GPU_LOGINS}, {"name": "other"}]),
        groups={"group:ml@example.com": [BOB]},
    )
    mine, theirs = fake.world.groups["ai-test-train"][0], fake.world.groups["ai-test-other"][0]
    where = (f"--zone={ZONE}", f"--project={PROJECT}", "--tunnel-through-iap", "--quiet")
    with fake.running():
        alice = gcloud(fake, tmp_path, ALICE, "compute", "ssh", mine, *where, "--command=sudo id")
        assert alice.returncode == 0, (alice.stderr, fake.denied())
        bob = gcloud(fake, tmp_path, BOB, "compute", "ssh", mine, *where, "--command=id")
        assert bob.returncode == 0, (bob.stderr, fake.denied())
        bob_sudo = gcloud(fake, tmp_path, BOB, "compute", "ssh", mine, *where, "--command=sudo id")
        stranger = gcloud(fake, tmp_path, ALICE, "compute", "ssh", theirs, *where, "--command=id")
    assert not [c for c in fake.denied() if c.path.endswith(mine) or mine in c.path], fake.denied()
    assert bob_sudo.returncode == 1 and "not in the sudoers file" in bob_sudo.stderr
    # Another cluster's VM: gcloud cannot even read it, and nobody logged in there.
    assert stranger.returncode != 0
    assert "compute.instances.get" in stranger.stderr
    assert [(x.member, x.vm, x.exit) for x in fake.logins] == [
        (ALICE, mine, 0),
        (BOB, mine, 0),
        (BOB, mine, 1),
    ]
