"""The generated config reference and stack-file schema: checked in as generated, complete, and
agreeing with the program on what a stack file may say."""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
from typing import Annotated, Any

import jsonschema
import pytest
import yaml
from pydantic import BeforeValidator

from components.base import ConfigModel
from graph.engine import REPO_ROOT
from stacks import reference
from stacks.config import StackConfig
from stacks.loading import parse
from stacks.messages import ConfigError, config_model_in

STACK_FILES = sorted(REPO_ROOT.glob("Pulumi.*.yaml"))
REGENERATE = "stale: run `uv run python -m stacks.reference` and commit the result"


def schema() -> dict[str, Any]:
    return json.loads(reference.SCHEMA.read_text())


def schema_errors(document: Any) -> list[tuple[list[Any], str]]:
    validator = jsonschema.Draft7Validator(schema())
    return [(list(e.absolute_path), e.message) for e in validator.iter_errors(document)]


@pytest.mark.parametrize("doc", sorted(reference.REFERENCES))
def test_each_docs_reference_is_the_generated_one(doc):
    text = (reference.DOCS / doc).read_text()
    assert text.count(reference.BEGIN) == 1 and text.count(reference.END) == 1, doc
    assert reference.with_reference(doc, text) == text, f"docs/{doc}: {REGENERATE}"


def test_schema_is_the_generated_one():
    assert reference.SCHEMA.read_text() == reference.schema_text(), REGENERATE
    jsonschema.Draft7Validator.check_schema(schema())


def _fields(model: type[ConfigModel], path: str) -> list[tuple[str, str | None]]:
    found = []
    for name, info in model.model_fields.items():
        key = f"{path}{info.alias or name}"
        found.append((key, info.description))
        nested = config_model_in(info.annotation)
        if nested is not None:
            found += _fields(nested, f"{key}.")
    return found


def test_every_config_field_has_a_docstring():
    # The docstring is what a reader of the docs, or an editor's hover, sees of a field.
    undocumented = [key for key, description in _fields(StackConfig, "") if not description]
    assert not undocumented, f"fields without a docstring: {undocumented}"


@pytest.mark.parametrize("path", STACK_FILES, ids=lambda p: p.name)
def test_shipped_stacks_point_editors_at_the_schema_and_validate(path):
    text = path.read_text()
    assert text.splitlines()[0] == reference.SCHEMA_LINE
    assert schema_errors(yaml.safe_load(text)) == []


def test_shipped_stacks_exist():
    assert {p.name for p in STACK_FILES} >= {
        "Pulumi.dev.yaml",
        "Pulumi.staging.yaml",
        "Pulumi.prod.yaml",
    }


BASE: dict[str, Any] = {
    "config": {
        "gcp:project": "ml-platform-test",
        "gcp:region": "us-east5",
        "gcp:zone": "us-east5-a",
        "ai-infra:protect": False,
        "ai-infra:tpuSlices": [{"name": "train", "accelerator": "v5p-32"}],
        "ai-infra:teams": [{"name": "research"}],
    }
}


def edited(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    """BASE with the value at `path` (under `config`) set, or removed when value is ...."""
    document = copy.deepcopy(BASE)
    node: Any = document["config"]
    for part in path[:-1]:
        node = node[part]
    if value is ...:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return document


def program_accepts(document: dict[str, Any]) -> bool:
    try:
        parse(document["config"], "test")
    except ConfigError:
        return False
    return True


REJECTED = {
    "misspelt ai-infra key": (("ai-infra:tpuSlice",), [], ["config", "ai-infra:tpuSlice"]),
    "misspelt field in a slice": (
        ("ai-infra:tpuSlices", 0, "accelerater"),
        "v5p-32",
        ["config", "ai-infra:tpuSlices", 0],
    ),
    "misspelt nested field": (
        ("ai-infra:cluster",),
        {"cpuPool": {"machinetype": "e2-standard-4"}},
        ["config", "ai-infra:cluster", "cpuPool"],
    ),
    "unknown accelerator": (
        ("ai-infra:tpuSlices", 0, "accelerator"),
        "v5p-33",
        ["config", "ai-infra:tpuSlices", 0, "accelerator"],
    ),
    "unknown provisioning": (
        ("ai-infra:tpuSlices", 0, "provisioning"),
        "spotty",
        ["config", "ai-infra:tpuSlices", 0, "provisioning"],
    ),
    "name that is not a DNS label": (
        ("ai-infra:teams", 0, "name"),
        "Research",
        ["config", "ai-infra:teams", 0, "name"],
    ),
    "basic role": (
        ("ai-infra:teams", 0, "roles"),
        ["roles/editor"],
        ["config", "ai-infra:teams", 0, "roles", 0],
    ),
    "share above 100%": (
        ("ai-infra:teams", 0, "quota"),
        {"train": "150%"},
        ["config", "ai-infra:teams", 0, "quota", "train"],
    ),
    "soft delete below GCS's minimum": (
        ("ai-infra:buckets",),
        [{"name": "data", "softDeleteDays": 3}],
        ["config", "ai-infra:buckets", 0, "softDeleteDays"],
    ),
    "label with capitals": (
        ("ai-infra:labels",),
        {"Team": "ml"},
        ["config", "ai-infra:labels"],
    ),
    "a secret where the program reads plain values": (
        ("ai-infra:prefix",),
        {"secure": "v1:abc"},
        ["config", "ai-infra:prefix"],
    ),
    "missing project": (("gcp:project",), ..., ["config"]),
    "zone that is not a zone": (("gcp:zone",), "us-east5", ["config", "gcp:zone"]),
}


@pytest.mark.parametrize("case", REJECTED, ids=str)
def test_schema_rejects_what_the_program_rejects(case):
    path, value, where = REJECTED[case]
    document = edited(path, value)
    assert not program_accepts(document)
    errors = schema_errors(document)
    assert errors, case
    assert where in [p for p, _ in errors], errors


ACCEPTED = {
    "cpu as a YAML int": (("ai-infra:teams", 0, "cpu"), 1000),
    "share in chips": (("ai-infra:teams", 0, "quota"), {"train": 8}),
    "share as a fraction": (("ai-infra:teams", 0, "quota"), {"train": 0.5}),
    "share as a percentage": (("ai-infra:teams", 0, "quota"), {"train": "25%"}),
    "gcp provider setting": (
        ("gcp:impersonateServiceAccount",),
        "deployer@p.iam.gserviceaccount.com",
    ),
    "another namespace's secret": (("gcp:credentials",), {"secure": "v1:abc"}),
    "pulumi tags": (("pulumi:tags",), {"team": "platform"}),
    "maintenance exclusion": (
        ("ai-infra:cluster",),
        {"maintenanceExclusions": [{"name": "campaign", "start": "2026-12-01T00:00:00Z"}]},
    ),
}


@pytest.mark.parametrize("case", ACCEPTED, ids=str)
def test_schema_accepts_what_the_program_accepts(case):
    document = edited(*ACCEPTED[case])
    assert program_accepts(document)
    assert schema_errors(document) == []


def test_pulumi_keys_of_a_stack_file_are_allowed_and_others_are_not():
    document = copy.deepcopy(BASE) | {
        "secretsprovider": "gcpkms://projects/p/locations/global/keyRings/r/cryptoKeys/k",
        "encryptedkey": "CiQA...",
        "environment": ["ml-platform/dev"],
    }
    assert schema_errors(document) == []
    assert schema_errors(document | {"configs": {}}) != []


def test_an_unmapped_before_validator_fails_generation():
    # A before-validator accepts input its type does not describe; the schema must say what.
    class Odd(ConfigModel):
        value: Annotated[int, BeforeValidator(int)]
        """A field."""

    with pytest.raises(
        TypeError, match=r"declare what it accepts with components\.base\.described"
    ):
        Odd.model_json_schema(schema_generator=reference._Generator)


def test_schema_patterns_are_ecmascript_regexes():
    """Editors evaluate the schema's patterns as JavaScript regexes, which have no `(?P<`."""
    text = (REPO_ROOT / "schema" / "stack-config.schema.json").read_text()
    assert "(?P<" not in text and "(?<" not in text
    if shutil.which("node"):
        patterns = re.findall(r'"pattern": (".*?[^\\\\]")', text)
        script = "for (const p of JSON.parse(process.argv[1])) new RegExp(JSON.parse(p), 'u');"
        subprocess.run(["node", "-e", script, json.dumps(patterns)], check=True)
