"""Every way the command fails says what went wrong and what to do, with a non-zero exit and no
traceback: kubeconfigs that are missing or lack the context, an API server that does not
answer (the real client against a closed local port), output that cannot be written, and
flags that would be read otherwise than meant."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.workload.conftest import Run
from tests.workload.test_submit import PRETRAIN
from workload import cli


def unreachable_kubeconfig(tmp_path: Path) -> Path:
    """A kubeconfig whose server is a local port nothing listens on."""
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "stack", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "stack",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(document))
    return path


def real(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """The command with the official client's own connection, not the fake API."""
    code = cli.main(argv)
    return code, capsys.readouterr().err


CLUSTER_COMMANDS = [
    ["prod", "list", "--team", "pretrain"],
    ["prod", "logs", "--team", "pretrain", "llm"],
    ["prod", "delete", "--team", "pretrain", "llm"],
    [*PRETRAIN, "--apply"],
]


@pytest.mark.parametrize("argv", CLUSTER_COMMANDS, ids=lambda a: a[1])
def test_a_missing_kubeconfig_is_named_with_how_to_get_one(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    code, err = real([*argv, "--kubeconfig", str(tmp_path / "nope")], capsys)
    assert code == 2
    assert err.startswith(f"error: --kubeconfig: {tmp_path / 'nope'} is not a file;"), err
    assert "pulumi stack output kubeconfig" in err and "Traceback" not in err


def test_a_context_the_kubeconfig_lacks_is_named(tmp_path: Path, capsys):
    path = unreachable_kubeconfig(tmp_path)
    argv = ["prod", "list", "--team", "pretrain", "--kubeconfig", str(path), "--context", "other"]
    code, err = real(argv, capsys)
    assert code == 2
    assert err.startswith(f"error: --kubeconfig: cannot use context 'other' of {path}"), err


@pytest.mark.parametrize("argv", CLUSTER_COMMANDS, ids=lambda a: a[1])
def test_an_api_server_that_does_not_answer_is_a_clear_error(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    code, err = real([*argv, "--kubeconfig", str(unreachable_kubeconfig(tmp_path))], capsys)
    assert code == 1
    assert "the API server at https://127.0.0.1:9 does not answer" in err, err
    assert "--context" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--",), "error: COMMAND: nothing to run after '--'"),
        (("--", ""), "error: COMMAND: nothing to run after '--'"),
        (("python3", "train.py"), "error: COMMAND: put the command after '--'"),
        (("--memory", "512"), "error: --memory: '512' has no byte unit"),
        (("--memory", "64m"), "error: --memory: '64m' has no byte unit"),
        (("-o", "/nonexistent-dir/out.yaml"), "error: -o: cannot write /nonexistent-dir"),
    ],
)
def test_flags_that_would_be_read_otherwise_than_meant_are_refused(
    run: Run, extra: tuple[str, ...], message: str
):
    code, out, err = run(*PRETRAIN, *extra)
    assert code == 2 and out == ""
    assert err.startswith(message), err


def test_a_memory_with_a_unit_is_taken(run: Run):
    code, _, err = run(*PRETRAIN, "--memory", "64Gi")
    assert code == 0, err
