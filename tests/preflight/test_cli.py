"""`python -m preflight`: `--list`, text and `--json` output with the exit code, an invalid
config, and the path without credentials, which must end in a message, never a traceback,
and never reach the network."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from google.api_core import exceptions

from graph.engine import REPO_ROOT
from preflight import CHECKS
from preflight.cli import main
from preflight.live import Clients
from tests.preflight.conftest import STACK, passing_world
from tests.preflight.fakes import World


@pytest.fixture(scope="module")
def stack_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("stacks") / "Pulumi.preflight.yaml"
    path.write_text(yaml.safe_dump({"config": STACK}))
    return path


def _no_credentials(project: str) -> Clients:
    raise AssertionError(f"--list must not read credentials (asked for {project})")


def test_list_prints_every_check_with_its_meaning(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--list"], connect=_no_credentials) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == [c.NAME for c in CHECKS]
    for line, check in zip(lines, CHECKS, strict=True):
        assert line.endswith(check.MEANING)
    assert main(["--list", "--json"], connect=_no_credentials) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed == [{"check": c.NAME, "meaning": c.MEANING} for c in CHECKS]


def _run(
    stack_file: Path, world: World, capsys: pytest.CaptureFixture[str], *flags: str
) -> tuple[int, str]:
    code = main([str(stack_file), *flags], connect=lambda project: world.clients())
    return code, capsys.readouterr().out


def test_a_passing_project_prints_like_the_plan_and_exits_0(
    stack_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _run(stack_file, passing_world(), capsys)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == (
        "Preflight for stack 'preflight' (project ml-preflight, us-central1), read-only:"
    )
    assert "  ok    project       project ml-preflight: ACTIVE, number 123456789012" in lines
    assert lines[-1].endswith("0 fail")


def test_json_holds_every_finding_and_the_exit_code(
    stack_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    world = passing_world()
    world.billing_enabled = False
    code, out = _run(stack_file, world, capsys, "--json")
    document = json.loads(out)
    assert code == 1 == document["exitCode"]
    assert (document["stack"], document["project"]) == ("preflight", "ml-preflight")
    (failed,) = [f for f in document["findings"] if f["status"] == "fail"]
    assert failed["check"] == "billing" and failed["detail"] == "not enabled"
    assert document["summary"]["fail"] == 1
    assert sum(document["summary"].values()) == len(document["findings"])


def test_refused_credentials_mid_run_exit_2(
    stack_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    world = passing_world()
    world.fail("get_project", exceptions.Unauthenticated("Request had invalid credentials"))
    code = main([str(stack_file)], connect=lambda project: world.clients())
    assert code == 2
    assert "gcloud auth application-default login" in capsys.readouterr().err


def test_an_invalid_config_exits_2_before_any_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "Pulumi.bad.yaml"
    bad.write_text(yaml.safe_dump({"config": {**STACK, "gcp:zone": "us-east5-a"}}))
    world = passing_world()
    assert main([str(bad)], connect=lambda project: world.clients()) == 2
    assert "invalid stack config" in capsys.readouterr().err
    assert world.calls == []


def test_credentials_that_fail_stop_it_before_the_plan_is_built(
    stack_file: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With a metadata host named (a self-hosted runner on GCE), `missing()` cannot rule the
    credentials out: their refresh decides, and it comes before the minute the plan takes."""
    import graph.stack
    from preflight.cli import STALE_CREDENTIALS, CredentialsMissing

    def no_plan(target: str) -> None:
        raise AssertionError("the plan was built before the credentials were tried")

    def refused(project: str) -> Clients:
        assert project == "ml-preflight"
        raise CredentialsMissing(STALE_CREDENTIALS.format(reason="metadata: no account"))

    monkeypatch.setattr(graph.stack, "open_stack", no_plan)
    assert main([str(stack_file)], connect=refused) == 2
    assert "metadata: no account" in capsys.readouterr().err


def test_without_credentials_it_says_how_to_log_in(
    stack_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A credential file that does not exist: google.auth.default stops there, before it would
    # probe the GCE metadata server.
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    assert main([str(stack_file)]) == 2
    err = capsys.readouterr().err
    assert "preflight needs Google Application Default Credentials and found none" in err
    assert "gcloud auth application-default login" in err
    assert "set-quota-project ml-preflight" in err
    assert "missing.json" in err and "Traceback" not in err


def _command(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """`python <args>` from the repository, with `env`."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_the_command_without_credentials_prints_no_traceback(
    stack_file: Path, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "GOOGLE_APPLICATION_CREDENTIALS": str(tmp_path / "missing.json"),
        "NO_GCE_CHECK": "true",
    }
    done = _command(env, "-m", "preflight", str(stack_file))
    assert done.returncode == 2, done.stderr
    assert "gcloud auth application-default login" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_without_credentials_it_answers_before_importing_the_plan_or_a_client(
    stack_file: Path, tmp_path: Path
) -> None:
    """No credentials anywhere google.auth would look: the answer comes from the standard
    library and YAML alone (benchmarks/preflight_speed.py times it), and `--json` says it as a
    JSON error document."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("GOOGLE_APPLICATION_CREDENTIALS", "GCE_METADATA_HOST", "GCE_METADATA_IP")
    }
    env |= {"CLOUDSDK_CONFIG": str(tmp_path / "gcloud"), "NO_GCE_CHECK": "true"}
    done = _command(env, "-X", "importtime", "-m", "preflight", str(stack_file), "--json")
    assert done.returncode == 2, done.stderr[-2000:]
    document = json.loads(done.stdout)
    assert document["exitCode"] == 2 and document["error"]["kind"] == "credentials"
    assert "set-quota-project ml-preflight" in document["error"]["message"]
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    heavy = {m for m in imported if m.startswith(("pulumi", "google.cloud", "components"))}
    assert not heavy, sorted(heavy)[:10]


def test_an_invalid_config_with_json_is_a_json_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "Pulumi.bad.yaml"
    bad.write_text(yaml.safe_dump({"config": {**STACK, "gcp:zone": "us-east5-a"}}))
    world = passing_world()
    assert main([str(bad), "--json"], connect=lambda project: world.clients()) == 2
    assert world.calls == []
    document = json.loads(capsys.readouterr().out)
    assert document["error"]["kind"] == "config"
    assert document["error"]["problems"][0]["path"] == "gcp:zone"
