"""How a stack config's problems read: `ConfigError` lists every problem as `path: message`,
with the path as the stack file writes it (`ai-infra:tpuSlices[2].zone`), and pydantic's
validation errors become `Problem`s that name the expected shape and the valid keys.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pulumi
from pydantic.alias_generators import to_camel
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from components.base import ConfigModel, PathPart, Problem
from components.text import one_line

NAMESPACE = "ai-infra"
GCP_KEYS = {"project": "gcp:project", "region": "gcp:region", "zone": "gcp:zone"}
"""Stack config fields that Pulumi's gcp provider's own keys set."""


class ConfigError(pulumi.RunError):
    """Every problem in a stack's config, each rendered as `path: message`."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        # Values are quoted into messages as written; a newline in one must not split a line.
        self.rendered = [(one_line(render_path(p.path)), one_line(p.message)) for p in problems]
        lines = "\n".join(f"  {path}: {message}" for path, message in self.rendered)
        super().__init__(f"invalid stack config ({len(problems)} problem(s)):\n{lines}")


_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]+")


def render_path(path: tuple[PathPart, ...]) -> str:
    """`("tpuSlices", 2, "zone")` -> `ai-infra:tpuSlices[2].zone`; `("zone",)` -> `gcp:zone`.
    A key that is not a plain word is quoted, so a key holding '.', '@' or '[' cannot pass
    for a path."""
    if not path:
        return NAMESPACE
    head, *rest = path
    head = str(head)
    verbatim = ":" in head or head.startswith("(")
    text = head if verbatim else GCP_KEYS.get(head, f"{NAMESPACE}:{head}")
    for part in rest:
        if isinstance(part, int):
            text += f"[{part}]"
        elif _PLAIN_KEY.fullmatch(part):
            text += f".{part}"
        else:
            text += f"[{json.dumps(part)}]"
    return text


def key_of(field: str, info: FieldInfo) -> str:
    """The key a stack file writes for a model field: its camelCase alias."""
    return info.alias or field


_PYDANTIC_TAG = re.compile(r"\[|^(function-(after|before|wrap|plain)|lax-or-strict|json-or-python)")
"""Location parts pydantic adds for validators and unions; they are not config keys."""


_EXPECTED = {
    "string_type": "expected text{example}; quote values YAML would read as numbers or booleans",
    "int_type": "expected a whole number{example}, written without quotes",
    "float_type": "expected a number{example}",
    "bool_type": "expected true or false, written without quotes",
    "list_type": "expected a list{example}: one '- ' item per line",
    "dict_type": "expected a mapping of keys to values{example}",
    "model_type": "expected a mapping of fields{example}",
    "model_attributes_type": "expected a mapping of fields{example}",
}
"""Pydantic's error types, as sentences that name the expected shape."""
_EXAMPLES = {
    "string_type": ", e.g. name: train",
    "int_type": ", e.g. count: 2",
    "float_type": ", e.g. 0.5",
    "list_type": ", e.g. tpuSlices: [{name: train, accelerator: v5p-32}]",
    "dict_type": ", e.g. quota: {train: 16}",
    "model_type": ", e.g. cpuPool: {machineType: e2-standard-8}",
    "model_attributes_type": ", e.g. cpuPool: {machineType: e2-standard-8}",
}


def _message(error: ErrorDetails) -> str:
    kind = error["type"]
    got = error.get("input")
    shown = f"; got {got!r}" if isinstance(got, str | int | float | bool) else ""
    if kind in _EXPECTED:
        return _EXPECTED[kind].format(example=_EXAMPLES.get(kind, "")) + shown
    if kind == "literal_error":
        expected = (error.get("ctx") or {}).get("expected", "")
        return f"must be one of {expected}{shown}"
    if kind in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
        ctx = error.get("ctx") or {}
        bound = {
            "greater_than_equal": f"at least {ctx.get('ge')}",
            "less_than_equal": f"at most {ctx.get('le')}",
            "greater_than": f"more than {ctx.get('gt')}",
            "less_than": f"less than {ctx.get('lt')}",
        }[kind]
        return f"must be {bound}{shown}"
    if kind == "too_long":
        # A list's bound (`Field(max_length=...)`), checked before its entries; maps are
        # bounded by `components.base.at_most`, which says why in its own words.
        ctx = error.get("ctx") or {}
        held, limit = ctx.get("actual_length"), ctx.get("max_length")
        return f"holds {held} entries; at most {limit}, remove some"
    if kind == "string_too_long":
        return f"must be at most {(error.get('ctx') or {}).get('max_length')} characters{shown}"
    return error["msg"].removeprefix("Value error, ")


def problem_of(root: type[ConfigModel], error: ErrorDetails) -> Problem:
    """A pydantic error of validating `root` as a `Problem` at the key it concerns."""
    loc = tuple(
        part for part in error["loc"] if isinstance(part, int) or not _PYDANTIC_TAG.search(part)
    )
    if error["type"] == "extra_forbidden":
        parent = _model_at(root, loc[:-1])
        valid = sorted(_aliases(parent)) if parent else []
        key = str(loc[-1])
        camel = to_camel(key)
        # A model names the keys it replaced, and what to write instead (REPLACED_KEYS).
        if replaced := getattr(parent, "REPLACED_KEYS", {}).get(key):
            return Problem(loc, replaced)
        if camel != key and camel in valid:
            return Problem(loc, f"keys are camelCase: write {camel}, not {key}")
        return Problem(loc, f"unknown field; valid fields here are {', '.join(valid)}")
    if error["type"] == "missing":
        return Problem(loc, "is required")
    message = _message(error)
    if "[key]" in error["loc"]:
        message = f"key: {message}"
    return Problem(loc, message)


def _aliases(model: type[ConfigModel]) -> list[str]:
    return [key_of(name, info) for name, info in model.model_fields.items()]


def _model_at(root: type[ConfigModel], loc: tuple[PathPart, ...]) -> type[ConfigModel] | None:
    """The config model class at a validation location, to list its valid keys."""
    model: Any = root
    for part in loc:
        if isinstance(part, int):
            continue
        fields = {key_of(n, i): i for n, i in model.model_fields.items()} | model.model_fields
        info = fields.get(part)
        if info is None:
            return None
        model = config_model_in(info.annotation)
        if model is None:
            return None
    return model if isinstance(model, type) and issubclass(model, ConfigModel) else None


def config_model_in(annotation: Any) -> type[ConfigModel] | None:
    """The config model a field holds, directly or in a list, dict or optional."""
    if isinstance(annotation, type) and issubclass(annotation, ConfigModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = config_model_in(arg)
        if found is not None:
            return found
    return None
