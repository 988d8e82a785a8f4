"""What the plan decides for one changed input of one resource, and the shape of a provider's
rules: `Verdict` (update, replace, kept, no-op, with a note), the `Context` a decision reads and
`Rules`, which each provider family's rules subclass (`plan/replacements.py` for pulumi-gcp and
dynamic providers, `plan/kubernetes_rules.py` for Kubernetes).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from graph.model import unwrap

PathPart = str | int
InputPath = tuple[PathPart, ...]


class Absent:
    """A side of a change where the input is not set."""

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Any = Absent()


class Effect(StrEnum):
    UPDATE = "update"
    REPLACE = "replace"
    NO_OP = "no-op"
    """Preview shows an update; the provider has no update path, so nothing changes."""
    FAILS = "fails"
    """Preview shows an update; the provider sends it and the API refuses it, so `pulumi up`
    stops there (a Filestore Basic share that shrinks, a rename the update path cannot make)."""
    KEPT = "kept"
    """No diff at all: the provider keeps the old value (a removed Optional+Computed input, or
    a dynamic provider's diff() that sees no change)."""


@dataclass(frozen=True)
class Verdict:
    effect: Effect
    note: str = ""


UPDATE = Verdict(Effect.UPDATE)


def field_of(path: InputPath) -> tuple[str, ...]:
    """An input path without its list indexes: the schema field it names."""
    return tuple(part for part in path if isinstance(part, str))


def empty(value: Any) -> bool:
    """Not set, or set to nothing."""
    return value is ABSENT or value is None or value in ("", [], {})


def values_at(value: Any, rel: Sequence[str]) -> Iterator[Any]:
    """Every value at a field path under `value`, through lists of blocks."""
    value = unwrap(value)
    if isinstance(value, list):
        for item in value:
            yield from values_at(item, rel)
        return
    if not rel:
        if not empty(value):
            yield value
        return
    if isinstance(value, dict) and rel[0] in value:
        yield from values_at(value[rel[0]], rel[1:])


def value_at(inputs: Any, path: InputPath) -> Any:
    """The value at an input path (keys and indexes), or ABSENT."""
    value = unwrap(inputs)
    for part in path:
        if isinstance(part, int):
            if not isinstance(value, list) or part >= len(value):
                return ABSENT
        elif not isinstance(value, dict) or part not in value:
            return ABSENT
        value = value[part]  # type: ignore[index]
    return value


@dataclass(frozen=True)
class Context:
    """What a decision may read besides the changed value: both sides' whole inputs, and the
    inputs of the provider the new resource uses (Kubernetes' mutable-ConfigMap flag)."""

    olds: dict[str, Any]
    news: dict[str, Any]
    provider: dict[str, Any] = field(default_factory=dict)


class Rules:
    """How one type's provider decides. Subclasses cover one provider family each."""

    source = ""
    """Where the rules were read."""

    def decide(self, path: InputPath, old: Any, new: Any, ctx: Context) -> Verdict:
        raise NotImplementedError

    def is_set(self, field_path: tuple[str, ...]) -> bool:
        """Whether the input is a set: its order carries no meaning, so a reorder is no diff."""
        return False

    def delete_before_replace(self, ctx: Context) -> bool:
        """Whether a replace deletes the old resource before creating the new one."""
        return False


def covers(prefixes: Sequence[str], field_path: tuple[str, ...]) -> str | None:
    """The first of `prefixes` the field path is, or lies under; None when it is under none."""
    dotted = ".".join(field_path)
    for prefix in prefixes:
        if dotted == prefix or dotted.startswith(f"{prefix}."):
            return prefix
    return None
