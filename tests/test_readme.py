"""The README is the front door: its examples build, and its config reference names every key."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import get_origin

import jsonschema
import yaml

from components.base import ConfigModel
from plan.engine import REPO_ROOT
from stacks import reference
from stacks.config import StackConfig
from stacks.messages import config_model_in
from tests.conftest import build_graph

README = (REPO_ROOT / "README.md").read_text()


def examples() -> dict[str, str]:
    return dict(re.findall(r"<!-- example: (\S+) -->\n```yaml\n(.*?)```", README, re.S))


def test_readme_examples_build():
    found = examples()
    assert found, "no examples in README"
    for name, text in found.items():
        graph = build_graph(yaml.safe_load(text)["config"], stack=name)
        if name == "gpu-cluster":
            (mig,) = graph.of_type("gcp:compute/instanceGroupManager:InstanceGroupManager")
            (template,) = graph.of_type("gcp:compute/instanceTemplate:InstanceTemplate")
            assert mig.inputs["targetSize"] == 1
            assert template.inputs["machineType"] == "a2-highgpu-2g"
            assert template.inputs["guestAccelerators"] == [
                {"type": "nvidia-tesla-a100", "count": 2}
            ]
            continue
        pools = [
            p
            for p in graph.of_type("gcp:container/nodePool:NodePool")
            if p.inputs["name"] == "train-0"
        ]
        assert pools and pools[0].inputs["nodeCount"] == 4, name


def _fields(model: type[ConfigModel], path: str) -> list[str]:
    names = []
    for field, info in model.model_fields.items():
        key = f"{path}{info.alias or field}"
        names.append(key)
        nested = config_model_in(info.annotation)
        if nested is not None:
            sub = f"{key}[]." if get_origin(info.annotation) is list else f"{key}."
            names += _fields(nested, sub)
    return names


def _documented() -> dict[str, set[str]]:
    """First-column keys of each table in the config reference, by the heading above it."""
    block = README[README.index(reference.BEGIN) : README.index(reference.END)]
    tables: dict[str, set[str]] = {}
    heading = ""
    for line in block.splitlines():
        if line.startswith("### "):
            heading = line.removeprefix("### ").strip("`")
        elif match := re.match(r"\| `([^`]+)` \|", line):
            tables.setdefault(heading, set()).add(match[1])
    return tables


def test_config_reference_documents_every_field_by_its_exact_key():
    tables = _documented()
    expected: dict[str, set[str]] = {"Top-level keys": set()}
    for field, info in StackConfig.model_fields.items():
        key = reference.stack_key(field, info)
        nested = config_model_in(info.annotation)
        if nested is None:
            expected["Top-level keys"].add(key)
        else:
            expected[key] = set(_fields(nested, ""))
    assert tables == expected


def test_readme_examples_validate_against_the_stack_file_schema():
    validator = jsonschema.Draft7Validator(json.loads(reference.SCHEMA.read_text()))
    for name, text in examples().items():
        assert [e.message for e in validator.iter_errors(yaml.safe_load(text))] == [], name


def test_two_commands_set_up_a_fresh_clone():
    # All a fresh clone needs; `uv run` creates the venv and compiles bytecode (pyproject).
    block = re.search(r"## Two commands\n.*?```sh\n(.*?)```", README, re.S)
    assert block is not None
    commands = [line.split("#")[0].strip() for line in block[1].splitlines()]
    assert commands == ["uv run python -m plan dev", "uv run pytest"]


def test_ci_runs_the_readme_test_command():
    ci = Path(REPO_ROOT / ".ci" / "run").read_text()
    assert "uv run pytest" in README and "uv run pytest" in ci
    assert "uv run python -m plan dev" in README
