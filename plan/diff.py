"""What `pulumi preview` would do to turn one recorded graph into another, and what `pulumi up`
would then refuse.

Resources are matched by URN: a URN only in the new graph is created, one only in the old graph
is deleted, and one in both is updated in place, or replaced when a changed input is one its
provider replaces on (plan/replacements.py), with `ignore_changes` applied first as the engine
does. A replace spreads as it does in the engine: a dependent whose ForceNew input is built from
a replaced resource's outputs sees them unknown and is replaced too, and so is every resource of
a replaced provider (the blast radius). A replace or delete of a protected resource is marked
with the refusal `pulumi up` would print and what the operator can do. The tests of config
edits and `python -m plan --base` share this, so what the tests hold is what a reviewer reads.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from enum import Enum, StrEnum
from functools import cached_property
from typing import Any

from graph import capacity, types
from graph.model import SECRET_SIG, Graph, Registration, integral, unwrap
from plan.hazards import STATEFUL, Hazard, Kind, blocked, collides, hazards, rollout
from plan.replacements import (
    ABSENT,
    Context,
    DynamicRules,
    Effect,
    InputPath,
    KubernetesProviderRules,
    Rules,
    Verdict,
    dynamic_decision,
    missing_provider_modules,
    property_path,
    replace_on_changes,
    rules_for,
    value_at,
)

__all__ = ["ABSENT", "SECRET", "Change", "GraphDiff", "Op", "ResourceChange", "diff"]

_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

SHOWN_SECRETS: dict[str, tuple[str, ...]] = {
    types.BUCKET_OBJECT: ("content",),
}
"""Inputs the provider SDK marks secret whatever their value (pulumi-gcp wraps BucketObject
`content` in Output.secret because the schema says Sensitive). The program renders them from
plain config (Slurm files, boot scripts), so the plan shows them; a value the program itself
makes secret (the kubeconfig) stays hidden."""


class Marker(Enum):
    """A side of a change that has no value to show."""

    SECRET = "[secret]"


SECRET = Marker.SECRET
UNKNOWN = "(known after the replacement)"


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
    """One input that differs, at `path` (keys and list indexes), and what its provider does
    with it."""

    path: InputPath
    old: Any
    new: Any
    replaces: bool
    effect: Effect = Effect.UPDATE
    note: str = ""

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
    delete_before_replace: bool = False
    cause: str = ""
    """For a replace the change itself does not force: the URN whose replacement forces it."""
    cause_note: str = ""
    refusal: str = ""
    """What `pulumi up` prints when it refuses this step, and what to do instead."""
    notes: tuple[str, ...] = ()
    """What the provider does that the symbol does not say."""
    reads: str = ""
    """For an update the change itself does not make: the URN of a replaced resource whose
    outputs its inputs are built from, unknown until the replacement is up."""
    blocked: str = ""
    """Why `pulumi up` cannot complete this replace or delete (others still use the old
    resource, or a provider-side guard such as a cluster's deletionProtection), and what to
    do."""
    hazards: tuple[Hazard, ...] = ()
    """Data lost and capacity gone by this replace or delete."""

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

    @property
    def destructive(self) -> bool:
        """A replace or delete of a stateful or protected resource, or one that loses data
        (a Slurm controller that holds /home)."""
        before = self.before
        if self.op not in (Op.REPLACE, Op.DELETE) or before is None:
            return False
        lost = any(h.kind is Kind.DATA_LOSS for h in self.hazards)
        return before.type in STATEFUL or before.protect or lost


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

    @property
    def refused(self) -> list[ResourceChange]:
        return [r for r in self.resources if r.refusal]

    @property
    def blocked(self) -> list[ResourceChange]:
        """Replaces `pulumi up` starts and cannot complete."""
        return [r for r in self.resources if r.blocked]

    @property
    def destructive(self) -> list[ResourceChange]:
        """Replaces and deletes of stateful or protected resources."""
        return [r for r in self.resources if r.destructive and not r.is_component]

    def summary(self) -> str:
        counts = self.counts()
        return (
            f"{counts[Op.CREATE]} to create, {counts[Op.UPDATE]} to change, "
            f"{counts[Op.REPLACE]} to replace, {counts[Op.DELETE]} to delete"
        )

    @cached_property
    def _by_cause(self) -> dict[str, list[ResourceChange]]:
        """The replaces each resource's replacement forces directly; built once, as
        `blast_radius` is asked for every resource of a diff."""
        by_cause: dict[str, list[ResourceChange]] = {}
        for r in self.resources:
            if r.cause:
                by_cause.setdefault(r.cause, []).append(r)
        return by_cause

    def blast_radius(self, urn: str) -> list[ResourceChange]:
        """Every replace the replacement of `urn` forces, directly or through others."""
        found: list[ResourceChange] = []
        todo = [urn]
        while todo:
            for r in self._by_cause.get(todo.pop(0), []):
                found.append(r)
                todo.append(r.urn)
        return found


def _unwrap(value: Any) -> tuple[Any, bool]:
    """A value and whether it is secret."""
    if isinstance(value, dict) and SECRET_SIG in value:
        return value.get("value"), True
    return value, False


def _canonical(value: Any) -> str:
    return json.dumps(unwrap(value), sort_keys=True, default=str)


def _applied_ignore_changes(old: dict[str, Any], new: dict[str, Any], paths: tuple[str, ...]):
    """The new inputs with each `ignore_changes` path holding the old value, as the engine
    applies them before the provider's diff."""
    if not paths:
        return new
    result = json.loads(json.dumps(new))
    for path in paths:
        keys = property_path(path)
        before = value_at(old, tuple(keys))
        target: Any = result
        for key in keys[:-1]:
            if isinstance(target, dict) and isinstance(key, str):
                target = target.get(key)
            elif isinstance(target, list) and isinstance(key, int) and key < len(target):
                target = target[key]
            else:
                target = None
        last = keys[-1] if keys else None
        if isinstance(target, dict) and isinstance(last, str):
            if before is ABSENT:
                target.pop(last, None)
            else:
                target[last] = json.loads(json.dumps(before))
        elif (
            isinstance(target, list)
            and isinstance(last, int)
            and before is not ABSENT
            and last < len(target)
        ):
            target[last] = json.loads(json.dumps(before))
    return result


@dataclass
class _Differ:
    """Walks two input trees for one resource, asking its rules about each difference."""

    type_: str
    rules: Rules | None
    ctx: Context
    also: tuple[str, ...]

    def verdict(self, path: InputPath, old: Any, new: Any) -> Verdict:
        if replace_on_changes(path, self.also):
            return Verdict(Effect.REPLACE, "the resource's replace_on_changes option")
        if self.rules is None:
            return Verdict(Effect.UPDATE, f"no replacement rule for {self.type_}: shown as update")
        return self.rules.decide(path, old, new, self.ctx)

    def change(self, path: InputPath, old: Any, new: Any, secret: bool) -> list[Change]:
        verdict = self.verdict(path, old, new)
        if verdict.effect is Effect.KEPT:
            return []
        shown = (
            (SECRET, SECRET)
            if secret and path[:1] not in {(p,) for p in SHOWN_SECRETS.get(self.type_, ())}
            else (old, new)
        )
        return [
            Change(
                path,
                shown[0],
                shown[1],
                verdict.effect is Effect.REPLACE,
                verdict.effect,
                verdict.note,
            )
        ]

    def walk(self, old: Any, new: Any, path: InputPath = (), secret: bool = False) -> list[Change]:
        old, old_secret = _unwrap(old)
        new, new_secret = _unwrap(new)
        secret = secret or old_secret or new_secret
        if old == new:
            return []
        if isinstance(old, dict) and isinstance(new, dict):
            changes: list[Change] = []
            for key in sorted(old.keys() | new.keys()):  # as preview orders them
                before, after = old.get(key, ABSENT), new.get(key, ABSENT)
                changes += self.walk(before, after, (*path, key), secret)
            return changes
        if isinstance(old, list) and isinstance(new, list):
            field_path = tuple(p for p in path if isinstance(p, str))
            is_set = self.rules is not None and self.rules.is_set(field_path)
            if is_set and sorted(map(_canonical, old)) == sorted(map(_canonical, new)):
                return []  # a set: the same elements in another order
            changes = []
            for i in range(max(len(old), len(new))):
                before = old[i] if i < len(old) else ABSENT
                after = new[i] if i < len(new) else ABSENT
                changes += self.walk(before, after, (*path, i), secret)
            return changes
        return self.change(path, old, new, secret)


def _provider_urn(reference: str) -> str:
    """A provider reference (`<urn>::<id>`) -> its URN."""
    return reference.rsplit("::", 1)[0] if reference else ""


def _resource_change(was: Registration, now: Registration, providers: dict[str, Registration]):
    """The change of one resource present in both graphs, or None when preview shows none."""
    rules = rules_for(now.type)
    new_inputs = _applied_ignore_changes(was.inputs, now.inputs, now.ignore_changes)
    provider = providers.get(_provider_urn(now.provider))
    ctx = Context(was.inputs, new_inputs, provider.inputs if provider is not None else {})
    differ = _Differ(now.type, rules, ctx, now.replace_on_changes)
    changes = differ.walk(was.inputs, new_inputs)
    notes: list[str] = []
    dbr = now.delete_before_replace
    if isinstance(rules, DynamicRules) and changes:
        answer = dynamic_decision(was.inputs, new_inputs)
        if answer.error:
            notes.append(f"its provider's diff() failed offline ({answer.error}): shown as update")
        elif answer.changes is False:
            changes = []
        else:
            changes = [
                replace(c, replaces=True, effect=Effect.REPLACE, note="its provider's diff()")
                if c.path[:1] and c.path[0] in answer.replaces
                else c
                for c in changes
            ]
            dbr = dbr or (answer.delete_before_replace and bool(answer.replaces))
    protect = (was.protect, now.protect) if was.protect != now.protect else None
    if not changes and protect is None:
        return None
    op = Op.REPLACE if any(c.replaces for c in changes) else Op.UPDATE
    if op is Op.REPLACE and rules is not None:
        dbr = dbr or rules.delete_before_replace(ctx)
    if op is Op.UPDATE and changes and all(c.effect is Effect.NO_OP for c in changes):
        notes.append("nothing is applied: the provider has no update path for these inputs")
    return ResourceChange(op, was, now, tuple(changes), protect, dbr, notes=tuple(notes))


def _strings(value: Any) -> set[str]:
    found: set[str] = set()
    value = unwrap(value)
    if isinstance(value, str) and len(value) > 3:
        found.add(value)
    elif isinstance(value, dict):
        for item in value.values():
            found |= _strings(item)
    elif isinstance(value, list):
        for item in value:
            found |= _strings(item)
    return found


def _leaves_holding(value: Any, needles: set[str], path: InputPath) -> Iterator[InputPath]:
    value = unwrap(value)
    if isinstance(value, str):
        if any(n in value for n in needles):
            yield path
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves_holding(item, needles, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _leaves_holding(item, needles, (*path, i))


def _forced_by(dependent: Registration, key: str, upstream: Registration) -> str | None:
    """Why `dependent` is replaced when `upstream` is: its input `key`, built from
    upstream's outputs, is unknown in preview. None when no ForceNew input is affected."""
    rules = rules_for(dependent.type)
    if rules is None:
        return None
    if isinstance(rules, KubernetesProviderRules):
        if key in ("kubeconfig", "context", "cluster"):
            return f"its {key} is built from {upstream.name} and unknown until it is replaced"
        return None
    if isinstance(rules, DynamicRules):
        news = {**dependent.inputs, key: UNKNOWN}
        answer = dynamic_decision(dependent.inputs, news)
        return f"its provider's diff() replaces on {key}" if key in answer.replaces else None
    ctx = Context(dependent.inputs, dependent.inputs)
    needles = _strings(upstream.outputs) | {upstream.name}
    leaves = list(_leaves_holding(dependent.inputs.get(key), needles, (key,))) or [(key,)]
    for path in leaves:
        verdict = rules.decide(path, value_at(dependent.inputs, path), UNKNOWN, ctx)
        if verdict.effect is Effect.REPLACE:
            return f"its input {render_path(path)} comes from {upstream.name} and is unknown"
    return None


def _spread(changes: dict[str, ResourceChange], before: Graph, after: Graph) -> None:
    """Replace what a replace forces (pulumi/pulumi step_generator.go: a changed provider
    replaces its resources; an unknown ForceNew input replaces; deletedWith follows)."""
    by_urn = {r.urn: r for r in after}
    old = {r.urn: r for r in before}
    replaced = {u for u, c in changes.items() if c.op is Op.REPLACE}
    grew = True
    while grew:
        grew = False
        for r in after:
            if r.urn in replaced or r.urn not in old or not (r.custom or r.remote):
                continue
            cause, why = "", ""
            provider = _provider_urn(r.provider)
            if provider in replaced:
                cause, why = provider, "its provider is replaced"
            elif r.deleted_with in replaced:
                cause, why = r.deleted_with, "it is deleted with a replaced resource"
            else:
                for key, deps in sorted(r.property_dependencies.items()):
                    for dep in deps:
                        if dep in replaced and dep in by_urn:
                            reason = _forced_by(r, key, by_urn[dep])
                            if reason:
                                cause, why = dep, reason
                                break
                    if cause:
                        break
            if not cause:
                continue
            was = changes.get(r.urn)
            rules = rules_for(r.type)
            dbr = r.delete_before_replace or (
                rules is not None
                and rules.delete_before_replace(Context(old[r.urn].inputs, r.inputs))
            )
            changes[r.urn] = ResourceChange(
                Op.REPLACE,
                old[r.urn],
                r,
                was.changes if was else (),
                was.protect if was else None,
                dbr,
                cause=cause,
                cause_note=why,
                notes=was.notes if was else (),
            )
            replaced.add(r.urn)
            grew = True
    _read_unknowns(changes, old, after, replaced)


def _read_unknowns(
    changes: dict[str, ResourceChange],
    old: dict[str, Registration],
    after: Graph,
    replaced: set[str],
) -> None:
    """An input built from a replaced resource's outputs is unknown in preview, so a
    dependent that is not replaced itself is updated, and preview shows it so (pulumi/pulumi
    step_generator.go: the provider's diff with unknown inputs)."""
    by_urn = {r.urn: r for r in after}
    for r in after:
        if r.urn in replaced or r.urn not in old or not (r.custom or r.remote):
            continue
        rules = rules_for(r.type)
        ctx = Context(old[r.urn].inputs, r.inputs)
        found: list[Change] = []
        reads = ""
        for key, deps in sorted(r.property_dependencies.items()):
            upstream = next((by_urn[d] for d in deps if d in replaced and d in by_urn), None)
            if upstream is None:
                continue
            reads = reads or upstream.urn
            needles = _strings(upstream.outputs) | {upstream.name}
            leaves = list(_leaves_holding(r.inputs.get(key), needles, (key,))) or [(key,)]
            for path in leaves:
                was = value_at(r.inputs, path)
                verdict = (
                    rules.decide(path, was, UNKNOWN, ctx)
                    if rules is not None and not isinstance(rules, DynamicRules)
                    else Verdict(Effect.UPDATE)
                )
                note = verdict.note or f"read from {upstream.name}, which is replaced"
                found.append(Change(path, was, UNKNOWN, False, Effect.UPDATE, note))
        if not found:
            continue
        was = changes.get(r.urn)
        seen = {c.path for c in was.changes} if was else set()
        merged = (*(was.changes if was else ()), *(c for c in found if c.path not in seen))
        changes[r.urn] = (
            replace(was, changes=merged, reads=reads)
            if was is not None
            else ResourceChange(Op.UPDATE, old[r.urn], r, merged, reads=reads)
        )


_UNPROTECT = (
    "set {key} to false in the stack file and run `pulumi up` once: the engine refuses only "
    "when both the old and the new state are protected, so it lifts protection and replaces "
    "in that run (restore protection afterwards); or run `pulumi up --ignore-protect` "
    "(Pulumi CLI 3.256 or later)"
)


def _refusal(change: ResourceChange, stack_key: str) -> str:
    """pulumi/pulumi step_generator.go and step.go: the errors `pulumi up` stops with."""
    r, urn = change.resource, change.urn
    if change.op is Op.DELETE and change.before is not None and change.before.protect:
        return (
            f'`pulumi up` will refuse: resource "{urn}" cannot be deleted because it is '
            "protected. First run `pulumi state unprotect "
            f"'{urn}'` (or deploy with {stack_key}: false before removing it), or run "
            "`pulumi up --ignore-protect` (Pulumi CLI 3.256 or later)"
        )
    if change.op is not Op.REPLACE or change.before is None or change.after is None:
        return ""
    if not (change.before.protect and change.after.protect):
        return ""
    if change.cause:
        return (
            f'`pulumi up` will refuse: unable to replace resource "{urn}" as part of '
            f'replacing "{change.cause}" as it is currently marked for protection. Run '
            f"`pulumi state unprotect '{urn}'` first, or "
            + _UNPROTECT.format(key=stack_key).removeprefix("set ")
        )
    return (
        f'`pulumi up` will refuse: unable to replace resource "{r.urn}" as it is currently '
        "marked for protection. To replace it, " + _UNPROTECT.format(key=stack_key)
    )


def _provider_guards(change: ResourceChange) -> tuple[str, ...]:
    """Provider-side guards that fail at apply, not in preview."""
    before = change.before
    if change.op not in (Op.REPLACE, Op.DELETE) or before is None:
        return ()
    notes = []
    if isinstance(rules_for(before.type), DynamicRules):
        missing = missing_provider_modules(before.inputs)
        if missing:
            notes.append(
                f"its state holds a provider from {', '.join(missing)}, which this code no "
                "longer has: `pulumi up` deletes with the provider in state, so the delete "
                "fails until that module imports again (keep a shim), or update the resource "
                "once before it goes"
            )
    if before.type == types.CLUSTER and unwrap(before.inputs.get("deletionProtection", True)):
        notes.append(
            "the provider refuses to delete a cluster whose deletionProtection is true "
            "(the default): apply deletionProtection: false in a `pulumi up` of its own first"
        )
    if unwrap(before.inputs.get("deletionPolicy")) == "PREVENT":
        notes.append("deletionPolicy PREVENT: the provider refuses to delete it at apply")
    return tuple(notes)


def diff(before: Graph, after: Graph, protect_key: str = "ai-infra:protect") -> GraphDiff:
    """What turns `before` into `after`, component resources included. `protect_key` is the
    config key an operator flips to lift protection."""
    old = {r.urn: r for r in before}
    new = {r.urn: r for r in after}
    providers = {r.urn: r for r in after if types.is_provider(r.type)}
    changes: dict[str, ResourceChange] = {}
    for r in after:
        if r.urn not in old:
            changes[r.urn] = ResourceChange(Op.CREATE, None, r)
            continue
        found = _resource_change(old[r.urn], r, providers)
        if found is not None:
            changes[r.urn] = found
    _spread(changes, before, after)
    ordered = [changes[r.urn] for r in after if r.urn in changes]
    ordered += [ResourceChange(Op.DELETE, r, None) for r in before if r.urn not in new]
    replaced = {c.urn for c in ordered if c.op is Op.REPLACE}
    later = capacity.read(before).machines
    return GraphDiff(
        tuple(
            replace(
                c,
                refusal=_refusal(c, protect_key),
                notes=(*c.notes, *_rollout(c, replaced)),
                blocked=_cannot_complete(c, before, replaced, later),
                hazards=hazards(c.before, c.op is Op.REPLACE, c.delete_before_replace, before)
                if c.op in (Op.REPLACE, Op.DELETE) and c.before is not None
                else (),
            )
            for c in ordered
        )
    )


def _cannot_complete(
    change: ResourceChange,
    before: Graph,
    replaced: set[str],
    later: Iterable[capacity.Machines],
) -> str:
    """Why `pulumi up` stops at this change: the old resource still in use, an id still held,
    an update the API refuses, or a provider guard that fails at apply (exit 3 each)."""
    in_use = ""
    if change.op is Op.REPLACE and change.delete_before_replace:
        in_use = blocked(change.urn, before, replaced, later)
    elif change.op is Op.REPLACE and change.after is not None and change.before is not None:
        in_use = collides(change.after, change.before)
    guards = [f"cannot complete: {guard}" for guard in _provider_guards(change)]
    fails = [c for c in change.changes if c.effect is Effect.FAILS]
    refused = [f"cannot complete: {c.rendered_path}: {c.note}" for c in fails]
    return "; ".join(part for part in (in_use, *refused, *guards) if part)


def _rollout(change: ResourceChange, replaced: set[str]) -> tuple[str, ...]:
    """For a group whose template changes (its versions name another, or one replaced): when
    the change reaches its running VMs."""
    group = change.after
    if change.op is not Op.UPDATE or group is None:
        return ()
    if group.type != types.INSTANCE_GROUP_MANAGER:
        return ()
    versions = any(c.path[:1] == ("versions",) for c in change.changes)
    if not versions and change.reads not in replaced:
        return ()
    return (rollout(group),)


def kinds(changes: list[ResourceChange]) -> str:
    """`2 NodePool, 1 Provider`: what a list of changes holds, by short type."""
    counted = Counter(
        f"{t.rsplit(':', 1)[-1]} provider" if types.is_provider(t) else t.rsplit(":", 1)[-1]
        for t in (c.resource.type for c in changes)
    )
    return ", ".join(f"{n} {kind}" for kind, n in sorted(counted.items(), key=lambda x: -x[1]))


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
    if value is ABSENT:
        return "(none)"
    if isinstance(value, Marker):
        return value.value
    if value == UNKNOWN:
        return UNKNOWN
    text = json.dumps(integral(value), ensure_ascii=False, separators=(", ", ": "), sort_keys=True)
    return text if len(text) <= limit else f"{text[: limit - 1]}…"


def is_text_block(change: Change) -> bool:
    """A change of multi-line text (a script, a rendered file): shown as a unified diff."""
    return any(isinstance(v, str) and "\n" in v for v in (change.old, change.new)) and not any(
        isinstance(v, Marker) for v in (change.old, change.new)
    )
