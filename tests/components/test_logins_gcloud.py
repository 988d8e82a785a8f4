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


TPU_LOGINS = [{"member": ALICE, "sudo": True}, {"member": BOB}]
TPU_STACK = with_config(
    tpuVms=[{"name": "maxtext", "accelerator": "v5p-16", "nodeCount": 2, "logins": TPU_LOGINS}],
    gpuClusters=[{"name": "train"}],
)
TPU_WHERE = (f"--zone={ZONE}", f"--project={PROJECT}", "--tunnel-through-iap", "--quiet")


def tpu_ssh(fake: FakeGcp, home: Path, who: str, node: str, *argv: str):
    return gcloud(
        fake, home, who, "alpha", "compute", "tpus", "tpu-vm", "ssh", node, *TPU_WHERE, *argv
    )


def test_a_sudo_tpu_login_uses_gclouds_tpu_vm_ssh_as_it_is(tmp_path):
    fake = started(TPU_STACK)
    with fake.running():
        alice = tpu_ssh(fake, tmp_path, ALICE, "maxtext-1", "--worker=1", "--command=sudo id")
    assert alice.returncode == 0, (alice.stderr, fake.denied())
    host = fake.world.nodes["maxtext-1"].workers[1].name
    assert [(x.vm, x.exit) for x in fake.logins] == [(host, 0)]
    # gcloud wrote her key into the node's metadata, as it does with OS Login on too.
    assert "ssh-keys" in fake.world.nodes["maxtext-1"].metadata


def test_a_tpu_login_without_sudo_gets_in_with_plain_ssh_and_is_not_root(tmp_path):
    """gcloud's `tpu-vm ssh` writes the user's key into the node's metadata, which needs
    tpu.nodes.update: root on every TPU VM of the project, never given without sudo. With its
    key in the OS Login profile (a dry run puts it there) `--plain` SSH gets in."""
    fake = started(TPU_STACK)
    with fake.running():
        refused = tpu_ssh(fake, tmp_path, BOB, "maxtext-0", "--worker=0", "--command=id")
        dry = tpu_ssh(fake, tmp_path, BOB, "maxtext-0", "--worker=0", "--dry-run")
        key = tmp_path / "bob" / ".ssh" / "google_compute_engine"
        plain = (
            "--plain", f"--ssh-flag=-oIdentityFile={key}",
            "--ssh-flag=-oStrictHostKeyChecking=no",
        )  # fmt: skip
        bob = tpu_ssh(fake, tmp_path, BOB, "bob_example_com@maxtext-0", "--worker=1", *plain,
                      "--command=id")  # fmt: skip
        bob_sudo = tpu_ssh(fake, tmp_path, BOB, "bob_example_com@maxtext-0", "--worker=0",
                           *plain, "--command=sudo id")  # fmt: skip
    assert refused.returncode == 1 and "tpu.nodes.update" in refused.stderr
    assert dry.returncode == 0, (dry.stderr, fake.denied())
    assert bob.returncode == 0, (bob.stderr, fake.denied())
    assert bob_sudo.returncode != 0
    workers = fake.world.nodes["maxtext-0"].workers
    assert [(x.vm, x.exit) for x in fake.logins] == [(workers[1].name, 0), (workers[0].name, 1)]
    assert "ssh-keys" not in fake.world.nodes["maxtext-0"].metadata


def test_tpu_logins_reach_no_compute_engine_vm_but_tpu_hosts():
    """OS Login for TPU logins holds on TPU VM hosts, never on another system's VMs: the
    condition is evaluated as IAM would on each instance the VM end asks about."""
    fake = started(TPU_STACK)
    gpu = fake.world.vms[fake.world.groups["ai-test-train"][0]]
    host = fake.world.nodes["maxtext-0"].workers[0]
    for member, permission in (
        (ALICE, "compute.instances.osAdminLogin"),
        (BOB, "compute.instances.osLogin"),
    ):
        assert fake.iam.allows(member, permission, host.resource), member
        assert not fake.iam.allows(member, permission, gpu.resource), member
    assert not fake.iam.allows(BOB, "compute.instances.osAdminLogin", host.resource)


def test_queued_resources_ssh_reaches_a_slice_but_hides_a_node_it_could_not_prepare(tmp_path):
    """gcloud 528's GA `queued-resources ssh` does what alpha `tpu-vm ssh` does per node, but
    a node it fails to prepare is skipped and the command still exits 0: `python -m hosts`
    keeps `tpu-vm ssh`, whose status is the session's."""
    fake = started(TPU_STACK)
    qr = ("compute", "tpus", "queued-resources", "ssh", "maxtext", *TPU_WHERE)
    with fake.running():
        alice = gcloud(fake, tmp_path, ALICE, *qr, "--node=1", "--worker=0",
                       "--command=sudo id")  # fmt: skip
        bob = gcloud(fake, tmp_path, BOB, *qr, "--node=0", "--worker=0", "--command=id")
    assert alice.returncode == 0, (alice.stderr, fake.denied())
    host = fake.world.nodes["maxtext-1"].workers[0].name
    assert [(x.member, x.vm, x.exit) for x in fake.logins] == [(ALICE, host, 0)]
    assert bob.returncode == 0 and "Could not prepare all 1 nodes" in bob.stderr
