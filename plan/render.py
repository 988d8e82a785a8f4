"""How the offline plan reads: the resource tree with the properties a reviewer checks, each
system's own sections (`stacks.environment.describe`), a diff as `pulumi preview` shows it,
and both as JSON for CI bots.
"""

from __future__ import annotations

import difflib
import json
from collections import Counter
from typing import Any

from graph import reachability, types
from graph.model import Graph, Registration, unwrap
from plan import args, summary
from plan.details import details
from plan.diff import (
    SHOWN_SECRETS,
    Change,
    GraphDiff,
    Op,
    ResourceChange,
    is_text_block,
    jsonable,
    kinds,
    render_value,
)
from plan.replacements import Effect
from stacks import environment
from stacks.config import StackConfig
from stacks.messages import NAMESPACE


def _short_type(type_: str) -> str:
    return type_.rsplit(":", 1)[-1]


def _short_key(key: str) -> str:
    """`ai-infra:tpuSlices[2]` -> `tpuSlices[2]`; other namespaces (`gcp:project`) stay."""
    return key.removeprefix(f"{NAMESPACE}:")


REACHABILITY = (
    "Reachability (who reaches whom on which ports, from the registered firewall rules and "
    "NetworkPolicies and the rules GKE creates for its nodes)"
)
SCHEMA_VERSION = args.SCHEMA_VERSION
"""`--json`'s version, described by schema/plan-output.schema.json.
4: error `kind` `usage` (a command line it cannot run); an amount's `perHour` and
`perMonth` null where any part is unknown (`pricedPerHour` holds the priced part), a change
null where an unpriced part changes; the cost's `ageUnknown`. 3: camelCase keys throughout
(`summary.capacity`), `exitCode`, an `error` document when there is no plan, and in a diff
`blocked`, `destructive`, `reachability` and per change `reads`, `blocked`, `hazards`,
`destructive`; the plan's `reachability`. 2: state-shaped URNs, `summary`, per-change
`effect`, `deleteBeforeReplace`, `cause`, `refusal` and `notes`."""


def _header(graph: Graph, config: StackConfig, stack: str) -> str:
    resources = len(graph.resources_to_apply)
    return (
        f"Plan for stack '{stack}' (project {config.project}, {config.region}): "
        f"{resources} resources, {len(graph) - resources} components"
    )


def render(graph: Graph, config: StackConfig, stack: str, cost: list[str] | None = None) -> str:
    """The plan: the resource tree, resources by type, each system's sections, the numbers,
    then `cost`, the cost section (plan.cli.Costing)."""
    lines = [_header(graph, config, stack), ""]
    by_parent: dict[str, list[Registration]] = {}
    for r in graph:
        by_parent.setdefault(r.parent, []).append(r)
    urns = set(graph.urns)
    keys = graph.config_keys()

    def walk(r: Registration, depth: int) -> None:
        indent = "  " * depth
        applied = r.custom or r.remote
        label = f"{indent}{'+' if applied else '#'} {_short_type(r.type)} {r.name}"
        if applied:
            shown = details(r)
        else:
            key = keys.get(r.urn) if r.parent not in urns else None
            shown = f"({_short_key(key)})" if key else ""
        lines.append(f"{label}  {shown}".rstrip())
        for child in by_parent.get(r.urn, []):
            walk(child, depth + 1)

    for r in graph:
        if r.parent not in urns:
            walk(r, 0)

    lines += ["", "Resources by type:"]
    for type_, count in sorted(Counter(r.type for r in graph.resources_to_apply).items()):
        lines.append(f"  {count:4d}  {type_}")
    for title, section in environment.describe(config):
        lines += ["", f"{title}:", *section]
    lines += ["", f"{REACHABILITY}:", *reachability.lines(graph)]
    lines += summary.render(summary.summarize(graph))
    if cost:
        lines += ["", *cost]
    return "\n".join(lines)


def label(c: Change, r: Registration) -> str:
    """How a reviewer names a changed input: a Kueue quota by its flavor and resource
    (`quota v5p-32 google.com/tpu`), not `spec.resourceGroups[1].flavors[0]...`."""
    p = c.path
    quota = (
        len(p) == 8
        and p[:2] == ("spec", "resourceGroups")
        and p[3] == "flavors"
        and p[5] == "resources"
        and p[7] == "nominalQuota"
    )
    if quota and r.type.rsplit(":", 1)[-1] in ("ClusterQueue", "Cohort"):
        groups = unwrap(r.inputs).get("spec", {}).get("resourceGroups", [])
        try:
            flavor = groups[p[2]]["flavors"][p[4]]
            return f"quota {flavor['name']} {flavor['resources'][p[6]]['name']}"
        except (IndexError, KeyError, TypeError):
            return c.rendered_path
    return c.rendered_path


def _change_lines(c: Change, r: Registration) -> list[str]:
    if is_text_block(c):
        old = c.old if isinstance(c.old, str) else ""
        new = c.new if isinstance(c.new, str) else ""
        body = difflib.unified_diff(
            old.splitlines(), new.splitlines(), "before", "after", lineterm="", n=2
        )
        suffix = "  (forces replacement)" if c.replaces else ""
        return [f"    {label(c, r)}: text{suffix}", *(f"      {line}" for line in body)]
    if c.replaces:
        suffix = "  (forces replacement)"
    elif c.effect is Effect.FAILS:
        suffix = "  (refused at apply)"
    elif c.effect is Effect.NO_OP:
        suffix = "  (not applied)"
    elif c.note:
        suffix = f"  ({c.note})"
    else:
        suffix = ""
    return [f"    {label(c, r)}: {render_value(c.old)} → {render_value(c.new)}{suffix}"]


def _resource_line(change: ResourceChange, keys: dict[str, str]) -> str:
    r = change.resource
    key = keys.get(r.urn)
    parts = [f"{change.op.symbol} {_short_type(r.type)} {r.name}"]
    if key:
        parts.append(f"({_short_key(key)})")
    if change.op in (Op.CREATE, Op.DELETE):
        parts.append(details(r))
    if change.op is Op.REPLACE and change.delete_before_replace:
        parts.append("[deleted before its replacement is created]")
    return "  ".join(p for p in parts if p)


_GONE_WITH = {
    types.CLUSTER: "GKE deletes the cluster's node pools and every workload "
    "on it with the old cluster",
    types.QUEUED_RESOURCE: "its TPU VMs are deleted with it (force)",
}
"""What the cloud deletes with a resource, beyond what the graph shows."""


def _resource_lines(change: ResourceChange, keys: dict[str, str], diff: GraphDiff) -> list[str]:
    lines = [_resource_line(change, keys)]
    if change.cause:
        cause = change.cause.rsplit("::", 1)[-1]
        lines.append(f"    replaced with {cause}: {change.cause_note}")
    if change.reads:
        upstream = change.reads.rsplit("::", 1)[-1]
        lines.append(
            f"    updated with {upstream}: inputs read from it are known after its replacement"
        )
    for c in change.changes:
        lines += _change_lines(c, change.resource)
    if change.protect is not None:
        old, new = change.protect
        lines.append(f"    [protect]: {json.dumps(old)} → {json.dumps(new)}")
    if any(c.effect is Effect.NO_OP for c in change.changes):
        note = next(c.note for c in change.changes if c.effect is Effect.NO_OP)
        lines.append(f"    ! not applied: {note}")
    for note in change.notes:
        if not note.startswith("nothing is applied"):
            lines.append(f"    ! {note}")
    if change.op is Op.REPLACE and not change.cause:
        radius = diff.blast_radius(change.urn)
        gone = _GONE_WITH.get(change.resource.type)
        if radius or gone:
            what = f"{len(radius)} more replaced with it ({kinds(radius)})" if radius else ""
            lines.append("    blast radius: " + "; ".join(p for p in (what, gone) if p))
    if change.op is Op.DELETE and change.resource.type in _GONE_WITH:
        lines.append(f"    ! {_GONE_WITH[change.resource.type]}")
    lines += [f"    ! {h.kind}: {h.message}" for h in change.hazards]
    if change.refusal:
        lines.append(f"    ✗ {change.refusal}")
    if change.blocked:
        lines.append(f"    ✗ {change.blocked}")
    return lines


def render_diff(
    changes: GraphDiff,
    keys: dict[str, str],
    heading: str,
    numbers: list[str] | None = None,
) -> str:
    """The resources that differ, each with its changed inputs (old → new), what `pulumi up`
    would refuse, how the numbers move, then the counts."""
    lines = [heading, ""]
    for change in changes:
        if change.is_component:
            continue
        lines += _resource_lines(change, keys, changes)
    if len(lines) == 2:
        lines.append("No changes.")
    if numbers:
        lines += ["", "Numbers (before → after):", *numbers]
    lines += ["", changes.summary()]
    refused = [r for r in changes.refused if not r.is_component]
    if refused:
        lines.append(
            f"`pulumi up` will refuse {len(refused)} of these (protected resources): "
            "see the ✗ lines"
        )
    if changes.blocked:
        lines.append(
            f"`pulumi up` cannot complete {len(changes.blocked)} of these (the old resource "
            "is still in use, or the provider refuses to delete it): see the ✗ lines"
        )
    lost = [r for r in changes if any(h.kind == "data-loss" for h in r.hazards)]
    if lost:
        lines.append(f"{len(lost)} of these lose data: see the `! data-loss` lines")
    return "\n".join(lines)


def shown_inputs(r: Registration) -> dict[str, Any]:
    """A resource's inputs with the ones its SDK marks secret whatever they hold, and the
    program renders from plain config, in the clear (diff.SHOWN_SECRETS)."""
    shown = SHOWN_SECRETS.get(r.type, ())
    return {k: unwrap(v) if k in shown else v for k, v in r.inputs.items()}


def plan_json(
    graph: Graph, config: StackConfig, stack: str, cost: dict[str, Any] | None = None
) -> dict[str, Any]:
    keys = graph.config_keys()
    applied = graph.resources_to_apply
    numbers = summary.summarize(graph)
    return {
        "schemaVersion": SCHEMA_VERSION,
        "stack": stack,
        "project": config.project,
        "region": config.region,
        "resources": [
            {
                "urn": r.urn,
                "type": r.type,
                "name": r.name,
                "parent": r.parent or None,
                "component": not (r.custom or r.remote),
                "configKey": keys.get(r.urn),
                "protect": r.protect,
                "details": details(r) if r.custom or r.remote else "",
                "inputs": jsonable(shown_inputs(r)),
            }
            for r in graph
        ],
        "counts": {
            "resources": len(applied),
            "components": len(graph) - len(applied),
            "byType": dict(sorted(Counter(r.type for r in applied).items())),
        },
        "tpuChips": numbers.chips,
        "summary": numbers.to_json(),
        "cost": cost,
        "reachability": reachability.as_json(graph),
    }


def diff_json(
    changes: GraphDiff, keys: dict[str, str], base: str, before: summary.Summary | None = None
) -> dict[str, Any]:
    return {
        "base": base,
        "summary": {op.value: count for op, count in changes.counts().items()},
        "refused": len([r for r in changes.refused if not r.is_component]),
        "blocked": len([r for r in changes.blocked if not r.is_component]),
        "destructive": len(changes.destructive),
        "before": before.to_json() if before is not None else None,
        "resources": [
            {
                "op": change.op.value,
                "urn": change.urn,
                "type": change.resource.type,
                "name": change.resource.name,
                "configKey": keys.get(change.urn),
                "deleteBeforeReplace": change.delete_before_replace,
                "cause": change.cause or None,
                "refusal": change.refusal or None,
                "notes": list(change.notes),
                "reads": change.reads or None,
                "blocked": change.blocked or None,
                "hazards": [{"kind": str(h.kind), "message": h.message} for h in change.hazards],
                "destructive": change.destructive,
                "blastRadius": [r.urn for r in changes.blast_radius(change.urn)],
                "changes": [
                    {
                        "path": c.rendered_path,
                        "label": label(c, change.resource),
                        "old": jsonable(c.old),
                        "new": jsonable(c.new),
                        "replaces": c.replaces,
                        "effect": c.effect.value,
                        "note": c.note or None,
                    }
                    for c in change.changes
                ],
                "protect": (
                    {"old": change.protect[0], "new": change.protect[1]}
                    if change.protect is not None
                    else None
                ),
            }
            for change in changes
            if not change.is_component
        ],
    }
