"""A search for configs that validation accepts but that make the program register two
resources with one URN, or two cloud objects of one type with one name in one scope (which
GCP or the API server refuses at `pulumi up` though the URNs differ).

The search starts from a valid seed config and its recorded graph. For every name-bearing
field of the validated config (walked through the pydantic models) it splices: wherever the
field's value sits inside a cloud name the program derived (`<prefix>-<value>-nfs0`), it
takes every other cloud name of the same type that has the same surroundings and sets the
field to what they enclose, so that the derived name equals an existing one after prefixing
and suffixing. It also sets each name field to every other name field's value, which finds
names that join across systems. `benchmarks/name_collisions.py` sweeps every seed; the tests
run a bounded sample.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from graph.engine import engine_config, record_program
from graph.model import Graph, Registration, unwrap
from stacks.loading import parse
from stacks.messages import ConfigError

Path = tuple[str | int, ...]

_NAME_FIELDS = ("node_prefix", "namespace", "service_account", "prefix")
"""Fields besides `*name` whose value a cloud or Kubernetes name is derived from."""

_CLOUD_ID = ("name", "accountId", "instanceId", "roleId", "secretId", "queuedResourceId")
"""Inputs that carry a GCP resource's own name, by type (the first one present)."""

_GLOBAL = frozenset({"gcp:storage/bucket:Bucket"})
"""Types whose names are global whatever their location (GCS bucket names)."""

_SCOPES = ("cluster", "location", "zone", "region", "router", "bucket", "instance")
"""Inputs that narrow a name's scope: a node pool's cluster, a subnet's region, an object's
bucket. A firewall rule, a service account or a bucket has none: its name is the project's."""


def name_fields(model: BaseModel, path: Path = ()) -> Iterator[tuple[Path, str]]:
    """Every name-bearing string field of a validated config, at its camelCase config path."""
    for field, info in type(model).model_fields.items():
        alias = info.alias or field
        value = getattr(model, field)
        yield from _walk(field, value, (*path, alias))


def _walk(field: str, value: Any, path: Path) -> Iterator[tuple[Path, str]]:
    if isinstance(value, BaseModel):
        yield from name_fields(value, path)
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from _walk(field, item, (*path, i))
    elif isinstance(value, str) and (field.endswith("name") or field in _NAME_FIELDS):
        yield path, value


def cloud_key(r: Registration) -> tuple[str, tuple[str, ...], str] | None:
    """(type, scope, name) of what a registration creates where it has a name of its own."""
    inputs = unwrap(r.inputs)
    if r.type.startswith("kubernetes:"):
        meta = inputs.get("metadata") or {}
        if "name" not in meta:
            return None
        return (r.type, (str(meta.get("namespace", "")),), str(meta["name"]))
    name = next((inputs[k] for k in _CLOUD_ID if isinstance(inputs.get(k), str)), None)
    if name is None or not r.custom:
        return None
    if r.type in _GLOBAL:
        return (r.type, (), name)
    return (r.type, tuple(str(inputs.get(k, "")) for k in _SCOPES), name)


def collisions(graph: Graph) -> list[str]:
    """Every duplicate URN and every cloud name used twice in one scope, as lines naming both."""
    seen: dict[Any, str] = {}
    found = []
    for r in graph:
        for key in (("urn", r.urn), cloud_key(r)):
            if key is None:
                continue
            if key in seen:
                found.append(f"{key}: {seen[key]} and {r.urn}")
            seen.setdefault(key, r.urn)
    return found


@dataclass(frozen=True)
class Outcome:
    """How the stack met one config: refused (`problems`, by path) or built (`collisions`)."""

    problems: Mapping[str, str]
    collisions: tuple[str, ...] = ()
    error: str = ""
    """An exception the program raised after validation passed."""


def judge(config: Mapping[str, Any], stack: str = "test") -> Outcome:
    """Validate `config`; if accepted, run the program and list what collides."""
    try:
        parse(engine_config(config), stack)
    except ConfigError as refused:
        return Outcome(dict(refused.rendered))
    graph, error = record_program(config, stack)
    if isinstance(error, ConfigError):
        return Outcome(dict(error.rendered))
    return Outcome({}, tuple(collisions(graph)), repr(error) if error else "")


def set_path(config: dict[str, Any], path: Path, value: str) -> dict[str, Any]:
    """A copy of `config` (Python values by `ai-infra:` key) with `path` set to `value`."""
    changed = copy.deepcopy(config)
    key = f"ai-infra:{path[0]}"
    if isinstance(changed.get(key), str) and len(path) > 1:
        changed[key] = json.loads(changed[key])
    if len(path) == 1:
        changed[key] = value
        return changed
    parents = list(path[1:])
    last = parents.pop()
    node = changed.setdefault(key, {})
    for part in parents:
        node = node[part] if isinstance(part, int) else node.setdefault(part, {})
    node[last] = value
    return changed


def _settable(config: dict[str, Any], path: Path) -> bool:
    """A field the config can be edited at: not inside an entry only the defaults hold."""
    try:
        set_path(config, path, "x")
    except (KeyError, IndexError, TypeError):
        return False
    return True


def _occurrences(value: str, name: str) -> Iterator[tuple[str, str]]:
    """(before, after) around each occurrence of `value` in `name` between hyphens or ends."""
    for match in re.finditer(re.escape(value), name):
        before, after = name[: match.start()], name[match.end() :]
        if before[-1:] in ("", "-") and after[:1] in ("", "-"):
            yield before, after


_DNS_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")


def candidates(
    config: dict[str, Any], stack: str = "test", *, equal: bool = True
) -> list[tuple[Path, str]]:
    """Edits (path, new value) whose derived names may collide with names already derived:
    the spliced ones first, then (with `equal`) every name set to every other name."""
    validated = parse(engine_config(config), stack)
    graph = record_program(config, stack)[0]
    fields = [(path, value) for path, value in name_fields(validated) if _settable(config, path)]
    named: dict[str, list[str]] = {}
    for r in graph:
        key = cloud_key(r)
        if key is not None:
            named.setdefault(key[0], []).append(key[2])
    found: dict[tuple[Path, str], None] = {}
    for path, value in fields:
        for names in named.values() if value else ():
            for derived in names:
                for before, after in _occurrences(value, derived):
                    for target in names:
                        middle = target[len(before) : len(target) - len(after) or None]
                        if (
                            target != derived
                            and target.startswith(before)
                            and target.endswith(after)
                            and len(target) > len(before) + len(after)
                            and _DNS_LABEL.fullmatch(middle)
                        ):
                            found[(path, middle)] = None
    for path, value in fields if equal else ():
        for _, other in fields:
            if other != value:
                found.setdefault((path, other), None)
    return list(found)


Accepted = tuple[Path, str, dict[str, Any]]


def accepted(config: dict[str, Any], edits: list[tuple[Path, str]]) -> list[Accepted]:
    """The edits of `config` validation accepts, each with the edited config."""
    found = []
    for path, value in edits:
        edited = set_path(config, path, value)
        try:
            parse(engine_config(edited), "test")
        except ConfigError:
            continue
        found.append((path, value, edited))
    return found
