"""One way to open a stack (`graph.stack.open_stack`): the plan, the workload command, preflight
and `hosts` read a stack file with the same warnings and refuse the same stacks, a program that
registers two resources with one URN among them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from graph import stack as stacks
from graph.engine import Graph, run_program
from graph.stack import StackError, open_stack
from hosts import cli as hosts_cli
from plan import cli as plan_cli
from tests.conftest import with_config
from tests.test_docs import examples
from workload import cli as workload_cli

TEAM = {"name": "research"}


def stack_file(tmp_path: Path, config: dict[str, Any], **extra: Any) -> Path:
    path = tmp_path / "Pulumi.open.yaml"
    path.write_text(yaml.safe_dump({"config": {**config, **extra}}))
    return path


def submit(path: Path) -> list[str]:
    return [str(path), "submit", "--team", "research", "--slice", "train", "--name", "job"]


def twice(config: dict[str, str], stack: str = "test") -> Graph:
    """The stack's program, and then one resource registered twice under one name."""

    def program() -> None:
        pulumi.CustomResource("test:index:Thing", "same", {})
        pulumi.CustomResource("test:index:Thing", "same", {})

    return run_program(config, stack=stack, program=program)


def test_two_resources_with_one_urn_are_refused_by_the_plan_and_the_workload_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    monkeypatch.setattr(stacks, "run_program", twice)
    path = stack_file(tmp_path, examples()["minimal"].config, **{"ai-infra:teams": [TEAM]})
    with pytest.raises(StackError, match="two resources with one URN") as refused:
        open_stack(str(path))
    assert "test:index:Thing::same" in str(refused.value)

    assert plan_cli.main([str(path)]) == plan_cli.EXIT_ERROR
    assert "two resources with one URN" in capsys.readouterr().err
    assert workload_cli.main([*submit(path), "--image", "gcr.io/p/i:1"]) == 2
    assert "two resources with one URN" in capsys.readouterr().err


def test_the_plan_and_the_workload_command_say_the_stack_files_warnings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    config = {**examples()["minimal"].config, "ai-infra:teams": [TEAM]}
    path = stack_file(tmp_path, config, **{"kubernetes:context": None})
    said = "warning: Pulumi.open.yaml: kubernetes:context has no value"

    assert plan_cli.main([str(path)]) == 0
    assert said in capsys.readouterr().err
    # Rendered and checked (the team's RBAC check fails: it lists no groups), not refused.
    assert workload_cli.main([*submit(path), "--image", "gcr.io/p/i:1"]) == 1
    out, err = capsys.readouterr()
    assert "kind: JobSet" in out and said in err


def test_without_build_a_stack_is_its_config_alone(tmp_path: Path):
    zone = {"gcp:region": "us-central2", "gcp:zone": "us-central2-b"}
    path = stack_file(
        tmp_path, with_config(**zone, tpuVms=[{"name": "exp", "accelerator": "v4-8"}])
    )
    opened = open_stack(str(path), build=False)
    assert (opened.name, opened.path, len(opened.graph)) == ("open", path, 0)
    assert [e.name for e in opened.config.tpu_vms] == ["exp"]


def test_hosts_refuses_what_the_plan_refuses(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    path = stack_file(tmp_path, with_config(tpuVms=[{"name": "exp", "accelerator": "v4-08"}]))
    assert hosts_cli.main([str(path), "tpuVms", "exp", "--list"]) == 2
    hosts_said = capsys.readouterr().err
    assert plan_cli.main([str(path)]) == plan_cli.EXIT_ERROR
    assert capsys.readouterr().err.strip() == hosts_said.strip()
