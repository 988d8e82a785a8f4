"""`python -m hosts` on a new machine, with the installed gcloud against the local fake of the
APIs that allows exactly what the stack grants (`tests.components.gcloud_api`): no SSH key yet,
many sessions at once, a member without sudo. Every session logs in, as the member, on the
entry's hosts only."""

from __future__ import annotations

import contextlib
import io
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from hosts import cli
from tests.components.fake_iam import Iam
from tests.components.gcloud_api import FakeGcp
from tests.conftest import build_graph, with_config

pytestmark = pytest.mark.skipif(
    shutil.which("gcloud") is None,
    reason="needs the Google Cloud CLI (gcloud) on PATH; .ci/run installs it",
)
ALICE = "user:alice@example.com"
BOB = "user:bob@example.com"
TOKENS = {"tok-alice": ALICE, "tok-bob": BOB}


def hosts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: dict[str, Any], who: str, *argv: str
) -> tuple[FakeGcp, int, str]:
    graph = build_graph(config)
    fake = FakeGcp(graph, TOKENS, Iam(graph))
    stack = tmp_path / "Pulumi.test.yaml"
    stack.write_text(yaml.safe_dump({"config": config}))
    token = next(t for t, m in TOKENS.items() if m == who)
    home = tmp_path / who.split(":")[1].split("@")[0]
    with fake.running():
        for key, value in fake.environment(home, token, who.split(":", 1)[1]).items():
            monkeypatch.setenv(key, value)
        monkeypatch.chdir(tmp_path)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main([str(stack), *argv])
    return fake, code, out.getvalue() + err.getvalue()


def test_eight_sessions_on_a_machine_without_a_key_all_log_in(tmp_path, monkeypatch):
    config = with_config(
        gpuClusters=[{"name": "train", "instanceCount": 8, "logins": [{"member": BOB}]}]
    )
    fake, code, text = hosts(
        tmp_path, monkeypatch, config, BOB, "gpuClusters", "train", "--parallel", "8",
        "--", "hostname",
    )  # fmt: skip
    assert code == 0, (text, fake.denied())
    assert "8 of 8 host(s) succeeded" in text
    assert sorted(x.vm for x in fake.logins if x.exit == 0) == fake.world.groups["ai-test-train"]
    # One key, imported once, before the sessions.
    assert len(fake.profiles[BOB]) == 1
    assert (tmp_path / "bob" / ".ssh" / "google_compute_engine").exists()


TPU = with_config(
    tpuVms=[
        {
            "name": "maxtext",
            "accelerator": "v5p-16",
            "nodeCount": 2,
            "logins": [{"member": ALICE, "sudo": True}, {"member": BOB}],
        }
    ]
)


def test_every_tpu_worker_takes_a_member_without_sudo_and_root_only_with_it(tmp_path, monkeypatch):
    fake, code, text = hosts(tmp_path, monkeypatch, TPU, BOB, "tpuVms", "maxtext", "--", "id")
    assert code == 0, (text, fake.denied())
    assert "4 of 4 host(s) succeeded" in text
    workers = [w.name for n in fake.world.nodes.values() for w in n.workers]
    assert sorted(x.vm for x in fake.logins) == sorted(workers)
    assert {x.user for x in fake.logins} == {"bob_example_com"}
    # No session wrote its key into a node's metadata (which takes tpu.nodes.update).
    assert not [c for c in fake.calls if c.permission == "tpu.nodes.update"]
    _, code, text = hosts(
        tmp_path, monkeypatch, TPU, BOB, "tpuVms", "maxtext", "--worker", "0", "--", "sudo", "id"
    )
    assert code == 1 and "exit 1" in text
    fake, code, text = hosts(
        tmp_path, monkeypatch, TPU, ALICE, "tpuVms", "maxtext", "--", "sudo", "id"
    )
    assert code == 0, (text, fake.denied())
    assert [x.exit for x in fake.logins] == [0, 0, 0, 0]
