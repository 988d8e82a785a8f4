"""A diff as a pull-request comment (`python -m plan <stack> --base <ref> --markdown`), as
Infracost posts one: the counts and the exit code in the heading, what `pulumi up` would
refuse, not complete or lose first, then a table of the changed resources, the cost change,
how the numbers move and the diff's other sections (the reachability change among them).
GitHub renders it; a CI posts it as is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from graph import types
from plan.args import MARKER, marker_safe
from plan.diff import GraphDiff, Op, ResourceChange

ROWS = 40
"""Resources listed in the table; a cluster's replacement can take a hundred with it."""
_EXITS = {
    0: "no changes",
    2: "changes",
    3: "refused, incomplete or destructive",
}


@dataclass(frozen=True)
class Change:
    """What the summary is made of; `plan.cli.Report.markdown` fills it."""

    stack: str
    base: str
    changes: GraphDiff
    keys: Mapping[str, str]
    numbers: list[str]
    cost: list[str]
    """The stack's cost before and after (idle, full scale), or why it is not shown."""
    sections: Mapping[str, list[str]]
    exit_code: int


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _key(change: ResourceChange, keys: Mapping[str, str]) -> str:
    key = keys.get(change.urn, "").split(":", 1)[-1]
    return f"`{key}`" if key else ""


def _flags(change: ResourceChange) -> list[str]:
    """Why a reviewer must look at this change, one phrase each."""
    found = []
    if change.refusal:
        found.append("✗ refused: protected")
    if change.blocked:
        found.append("✗ cannot complete")
    found += [f"⚠ {h.kind}" for h in change.hazards]
    if change.cause:
        found.append(f"with {change.cause.rsplit('::', 1)[-1]}")
    return found


def _weight(change: ResourceChange) -> int:
    """Refused and blocked first, then what loses data, replaces and deletes, the rest."""
    if change.refusal or change.blocked:
        return 0
    if change.hazards:
        return 1
    return 2 if change.op in (Op.REPLACE, Op.DELETE) else 3


def _table(change: Change) -> list[str]:
    shown = sorted((c for c in change.changes if not c.is_component), key=_weight)
    if not shown:
        return ["No resource changes."]
    rows = ["| | Resource | Config key | Notes |", "| --- | --- | --- | --- |"]
    for c in shown[:ROWS]:
        name = f"{types.short(c.resource.type)} {c.resource.name}"
        rows.append(
            f"| `{c.op.symbol}` | {_cell(name)} | {_key(c, change.keys)} | "
            f"{_cell('; '.join(_flags(c)))} |"
        )
    if len(shown) > ROWS:
        rows.append(f"\n…and {len(shown) - ROWS} more (`python -m plan` prints them all).")
    return rows


def _why(change: Change) -> list[str]:
    """The refusals, incomplete replaces and hazards, in full."""
    lines = []
    for c in change.changes:
        said = [
            *([c.refusal] if c.refusal else []),
            *([c.blocked] if c.blocked else []),
            *(f"**{h.kind}**: {h.message}" for h in c.hazards),
        ]
        if said:
            name = f"{types.short(c.resource.type)} {c.resource.name}"
            lines.append(f"- `{c.op.symbol}` {name}: " + " ".join(said))
    return lines


def summary(change: Change) -> str:
    diff = change.changes
    lines = [
        MARKER.format(stack=marker_safe(change.stack)),
        f"### ai-infra `{marker_safe(change.stack)}`: {diff.summary()}",
        "",
        f"Since `{change.base}`; exit {change.exit_code} "
        f"({_EXITS.get(change.exit_code, 'error')}).",
    ]
    why = _why(change)
    if why:
        lines += ["", "**Look first:**", *why]
    lines += ["", *_table(change)]
    if change.cost:
        lines += ["", "**Cost change** (USD at list prices):", *(f"- {c}" for c in change.cost)]
    if change.numbers:
        lines += ["", "**Numbers:**", *(f"- {n.strip()}" for n in change.numbers)]
    for title, section in change.sections.items():
        lines += ["", f"**{title}:**", *(f"- {line.strip()}" for line in section)]
    return "\n".join(lines)
