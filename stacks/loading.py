"""Loading a stack's config: from the Pulumi engine at `pulumi up`, or from a stack file for
the offline plan. `parse()` checks shapes with pydantic, then collects the cross-checks
(`checks.py`), and raises one `ConfigError` listing every problem with its config path and fix.
Nothing may be registered before it returns.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pulumi
import yaml
from pydantic import ValidationError
from pydantic.alias_generators import to_camel

from components.base import Problem
from stacks.checks import problems
from stacks.config import StackConfig, stack_keys
from stacks.messages import GCP_KEYS, NAMESPACE, ConfigError, problem_of

OTHER_NAMESPACES = frozenset({"gcp", "pulumi", "kubernetes"})
"""Config namespaces that belong to Pulumi and its providers; any other is a typo."""


def parse(raw: Mapping[str, Any], stack: str) -> StackConfig:
    """Validate a stack's config map (`gcp:project`, `ai-infra:network`, ...).

    Values may be strings holding JSON, as the Pulumi engine passes them, or parsed values.
    """
    data: dict[str, Any] = {"prefix": f"ai-{stack}"}
    found: list[Problem] = []
    valid_keys = stack_keys()
    for field, key in GCP_KEYS.items():
        if raw.get(key) is not None:
            data[field] = raw[key]
    for key, value in raw.items():
        namespace, colon, name = key.partition(":")
        if namespace != NAMESPACE:
            if not colon or namespace not in OTHER_NAMESPACES:
                found.append(
                    Problem(
                        (key if colon else f"(no namespace) {key}",),
                        f"unknown config namespace '{namespace}'; this program's keys are "
                        f"written {NAMESPACE}:<key> (valid namespaces: {NAMESPACE}, "
                        f"{', '.join(sorted(OTHER_NAMESPACES))})",
                    )
                )
            continue
        if name not in valid_keys:
            camel = to_camel(name)
            hint = (
                f"keys are camelCase: write {NAMESPACE}:{camel}"
                if camel != name and camel in valid_keys
                else f"unknown config key; valid keys are {', '.join(sorted(valid_keys))}"
            )
            found.append(Problem((name,), hint))
            continue
        data[name] = _decode(value)
    try:
        config = StackConfig.model_validate(data)
    except ValidationError as error:
        shapes = [problem_of(StackConfig, detail) for detail in error.errors()]
        if f"{NAMESPACE}:prefix" not in raw:
            shapes = [
                Problem(
                    p.path,
                    f"the prefix ai-{stack} comes from the stack name '{stack}' and {p.message}; "
                    f"set {NAMESPACE}:prefix to a short DNS label, e.g. ai-dev",
                )
                if p.path[:1] == ("prefix",)
                else p
                for p in shapes
            ]
        raise ConfigError(found + shapes) from None
    found += problems(config)
    if found:
        raise ConfigError(found)
    return config


def _decode(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key repeated in one mapping, as the Pulumi CLI's YAML
    parser does; PyYAML would silently keep the last value."""


def _mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in seen:
            line = key_node.start_mark.line + 1
            raise ConfigError(
                [Problem((str(key),), f"is written twice (again on line {line}); keep one")]
            )
        seen.add(key)
    return dict(loader.construct_pairs(node, deep=True))


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def load_yaml(text: str) -> Any:
    """Parse a stack file, refusing repeated keys; a syntax error is a `ConfigError`."""
    try:
        return yaml.load(text, Loader=_StrictLoader)
    except yaml.YAMLError as error:
        where = getattr(error, "problem_mark", None)
        line = f" on line {where.line + 1}" if where is not None else ""
        reason = getattr(error, "problem", None) or "it cannot be parsed"
        raise ConfigError(
            [Problem(("(stack file)",), f"is not valid YAML{line}: {reason}; fix the file")]
        ) from None


def stack_config_map(document: Any) -> dict[str, Any]:
    """The `config:` map of a parsed stack file: a mapping of `namespace:key` strings."""
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise ConfigError(
            [Problem(("(stack file)",), "must be a mapping with a config: key, not a list")]
        )
    config = document.get("config") or {}
    if not isinstance(config, dict):
        raise ConfigError(
            [Problem(("(stack file)",), "config: must be a mapping of namespace:key to value")]
        )
    bad = [key for key in config if not isinstance(key, str)]
    if bad:
        raise ConfigError(
            [
                Problem(
                    ("(stack file)",),
                    f"config key {key!r} is not text; keys are written namespace:key, "
                    "e.g. ai-infra:tpuSlices",
                )
                for key in bad
            ]
        )
    return dict(config)


def read_pulumi_config() -> dict[str, Any]:
    """Every config value the engine handed this program, keyed `namespace:key`."""
    from pulumi.runtime import config as runtime_config

    values: dict[str, Any] = dict(runtime_config.get_config_env())
    values.update(runtime_config.CONFIG.get())
    return values


def load() -> StackConfig:
    """Validate the running stack's config; raises `ConfigError` before any resource exists."""
    return parse(read_pulumi_config(), pulumi.get_stack())
