"""What `pulumi preview` would do to turn one recorded graph into another.

Resources are matched by URN: a URN only in the new graph is created, one only in the old graph
is deleted, and one in both is updated in place, or replaced when a changed input is one the
provider replaces on (plan/replacements.py). The tests of config edits and
`python -m plan --base` share this, so what the tests hold is what a reviewer reads.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum, StrEnum
from typing import Any

from plan.engine import Graph, Registration
from plan.replacements import replaces

PathPart = str | int
InputPath = tuple[PathPart, ...]

_SECRET_SIG = "4dabf18193072939515e22adb298388d"
"""The key Pulumi's wire format marks a secret value with."""
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class Marker(Enum):
    """A side of a change that has no value to show."""

    ABSENT = "(none)"
    """The input is not there: it was added or removed."""
    SECRET = "[secret]"


ABSENT = Marker.ABSENT
SECRET = Marker.SECRET


class Op(StrEnum):
    CREATE = "create"
    UPDATE = "update"
    REPLACE = "replace"
    DELETE = "delete"

    @property
    def symbol(self) -> str:
        return {"create": "+", "update": "~", "replace": "+-", "delete": "-"}[self.value]


@dataclass(frozen=True)
class Change:
    """One input that differs, at `path` (keys and list indexes)."""

    path: InputPath
    old: Any
    new: Any
    replaces: bool

    @property
    def rendered_path(self) -> str:
        return render_path(self.path)


@dataclass(frozen=True)
class ResourceChange:
    op: Op
    before: Registration | None
    after: Registration | None
    changes: tuple[Change, ...] = ()
    protect: tuple[bool, bool] | None = None
    """(old, new) when the `protect` option differs between the two."""

    @property
    def resource(self) -> Registration:
        registration = self.after or self.before
        assert registration is not None
        return registration

    @property
    def urn(self) -> str:
        return self.resource.urn

    @property
    def is_component(self) -> bool:
        return not (self.resource.custom or self.resource.remote)


@dataclass(frozen=True)
class GraphDiff:
    """Every resource that differs between two graphs: the new graph's in the order the program
    constructs them, then deletions in the old graph's order (Pulumi deletes last)."""

    resources: tuple[ResourceChange, ...]

    def __iter__(self) -> Iterator[ResourceChange]:
        return iter(self.resources)

    def urns(self, *ops: Op) -> set[str]:
        return {r.urn for r in self.resources if r.op in ops}

    @property
    def created(self) -> set[str]:
        return self.urns(Op.CREATE)

    @property
    def deleted(self) -> set[str]:
        return self.urns(Op.DELETE)

    @property
    def changed(self) -> set[str]:
        """Updated or replaced in place of the same URN."""
        return self.urns(Op.UPDATE, Op.REPLACE)

    def counts(self) -> dict[Op, int]:
        """Resources per operation, components apart (as the plan's summary counts them)."""
        counts = dict.fromkeys(Op, 0)
        for r in self.resources:
            if not r.is_component:
                counts[r.op] += 1
        return counts

    def summary(self) -> str:
        counts = self.counts()
        return (
            f"{counts[Op.CREATE]} to create, {counts[Op.UPDATE]} to change, "
            f"{counts[Op.REPLACE]} to replace, {counts[Op.DELETE]} to delete"
        )


def _unwrap(value: Any) -> tuple[Any, bool]:
    """A value and whether it is secret."""
    if isinstance(value, dict) and _SECRET_SIG in value:
        return value.get("value"), True
    return value, False


def input_changes(
    type_: str, old: Any, new: Any, path: InputPath = (), also: tuple[str, ...] = ()
) -> list[Change]:
    """The leaves of `new` that differ from `old`; an added or removed key or list element is
    one change at its own path. `also`: the resource's own replace_on_changes paths."""
    old, old_secret = _unwrap(old)
    new, new_secret = _unwrap(new)
    if old == new:
        return []
    if old_secret or new_secret:
        return [Change(path, SECRET, SECRET, replaces(type_, path, also))]
    if isinstance(old, dict) and isinstance(new, dict):
        changes: list[Change] = []
        for key in sorted(old.keys() | new.keys()):  # as preview orders them
            before, after = old.get(key, ABSENT), new.get(key, ABSENT)
            changes += input_changes(type_, before, after, (*path, key), also)
        return changes
    if isinstance(old, list) and isinstance(new, list):
        changes = []
        for i in range(max(len(old), len(new))):
            before = old[i] if i < len(old) else ABSENT
            after = new[i] if i < len(new) else ABSENT
            changes += input_changes(type_, before, after, (*path, i), also)
        return changes
    return [Change(path, old, new, replaces(type_, path, also))]


def diff(before: Graph, after: Graph) -> GraphDiff:
    """What turns `before` into `after`, component resources included."""
    old = {r.urn: r for r in before}
    new = {r.urn: r for r in after}
    resources: list[ResourceChange] = []
    for r in after:
        if r.urn not in old:
            resources.append(ResourceChange(Op.CREATE, None, r))
            continue
        was = old[r.urn]
        changes = tuple(input_changes(r.type, was.inputs, r.inputs, also=r.replace_on_changes))
        protect = (was.protect, r.protect) if was.protect != r.protect else None
        if changes or protect:
            op = Op.REPLACE if any(c.replaces for c in changes) else Op.UPDATE
            resources.append(ResourceChange(op, was, r, changes, protect))
    resources += [ResourceChange(Op.DELETE, r, None) for r in before if r.urn not in new]
    return GraphDiff(tuple(resources))


def render_path(path: InputPath) -> str:
    """`("spec", "nodeLabels", "cloud.google.com/gke-nodepool")` ->
    `spec.nodeLabels["cloud.google.com/gke-nodepool"]`: a key that is not a plain word is
    quoted, so it cannot pass for two keys."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif _PLAIN_KEY.fullmatch(part):
            text += f".{part}" if text else part
        else:
            text += f"[{json.dumps(part)}]"
    return text


def integral(value: Any) -> Any:
    """The mock engine hands numbers back as floats; show whole numbers as integers."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [integral(v) for v in value]
    return value


def jsonable(value: Any) -> Any:
    """A value for JSON: whole numbers as integers, secrets as "[secret]", an absent side of a
    change as null."""
    if value is ABSENT:
        return None
    if value is SECRET or _unwrap(value)[1]:
        return SECRET.value
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [jsonable(v) for v in value]
    return integral(value)


def render_value(value: Any, limit: int = 80) -> str:
    if isinstance(value, Marker):
        return value.value
    text = json.dumps(integral(value), ensure_ascii=False, separators=(", ", ": "), sort_keys=True)
    return text if len(text) <= limit else f"{text[: limit - 1]}…"
