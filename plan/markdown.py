"""A diff as a pull-request comment (`python -m plan <stack> --base <ref> --markdown`), as
Infracost posts one: the counts and the exit code in the heading, what `pulumi up` would
refuse, not complete or lose first, then a table of the changed resources with their changed
inputs, the cost change with a table per cost line, how the numbers move, the diff's other
sections (the reachability change among them) and the full text diff, folded. Its first line
is a hidden marker naming the stack, by which a workflow finds and edits its comment.
GitHub renders it; a CI posts it as is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from graph import types
from plan.args import MARKER, fence_for, marker_safe
from plan.diff import GraphDiff, Op, ResourceChange

ROWS = 40
"""Resources listed in the table; a cluster's replacement can take a hundred with it."""
INPUTS = 3
"""Changed inputs named per resource in the table; the full diff below has them all."""
FULL_DIFF = 40_000
"""Characters of the full diff the comment folds in: GitHub refuses a comment over 65,536."""
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
    cost_lines: list[dict[str, Any]] = field(default_factory=list)
    """Each changed cost line as the diff's `--json` holds it (`diff.cost.lines`)."""
    full_diff: str = ""
    """The diff as the text command prints it, folded into the comment."""


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


def _inputs(change: ResourceChange) -> str:
    """The inputs an update or replace changes, the first few by name."""
    paths = [c.rendered_path for c in change.changes]
    shown = ", ".join(f"`{_cell(p)}`" for p in paths[:INPUTS])
    return shown + (f" +{len(paths) - INPUTS} more" if len(paths) > INPUTS else "")


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
    rows = [
        "| | Resource | Config key | Changed inputs | Notes |",
        "| --- | --- | --- | --- | --- |",
    ]
    for c in shown[:ROWS]:
        name = f"{types.short(c.resource.type)} {c.resource.name}"
        rows.append(
            f"| `{c.op.symbol}` | {_cell(name)} | {_key(c, change.keys)} | {_inputs(c)} | "
            f"{_cell('; '.join(_flags(c)))} |"
        )
    return rows + _more(len(shown))


def _more(total: int) -> list[str]:
    """The line a table ends with when it shows only its first `ROWS` of `total`."""
    if total <= ROWS:
        return []
    return [f"\n…and {total - ROWS} more (`python -m plan` prints them all)."]


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


def _usd(amount: Mapping[str, Any], key: str = "perHour") -> str:
    """An amount of `diff.cost` as a cell: unknown parts said, never counted as $0."""
    value = amount.get(key)
    if value is None:
        priced = amount.get("pricedPerHour")
        return f"${priced:,.2f}/h + unknown" if priced else "unknown"
    return f"${value:,.2f}/h"


def _signed(change: Mapping[str, Any]) -> str:
    value = change.get("perHour")
    if value is None:
        return "unknown"
    return f"{'+' if value >= 0 else '-'}${abs(value):,.2f}/h"


def _cost_table(lines: list[dict[str, Any]]) -> list[str]:
    """Each changed cost line at full scale, before, after (as it bills right after the run)
    and the change, and its idle change; a group that keeps its old template says so."""
    if not lines:
        return []
    rows = [
        "| | Line | Config key | Before | After | Change | Idle change |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    symbol = {"create": "+", "update": "~", "delete": "-"}
    for line in lines[:ROWS]:
        full, idle = line["full"], line["idle"]
        label = _cell(line["label"]) + (f" ({_cell(line['deferred'])})" if line["deferred"] else "")
        key = f"`{line['configKey']}`" if line["configKey"] else ""
        rows.append(
            f"| `{symbol[line['op']]}` | {label} | {key} | {_usd(full['before'])} | "
            f"{_usd(full['after'])} | {_signed(full['change'])} | {_signed(idle['change'])} |"
        )
    return rows + _more(len(lines))


def _full_diff(text: str) -> list[str]:
    """The text diff folded away, fenced so that nothing in it can close the block."""
    if not text:
        return []
    cut = text if len(text) <= FULL_DIFF else text[:FULL_DIFF] + "\n… (cut; run the plan)"
    fence = fence_for(cut)
    return ["<details><summary>Full diff</summary>", "", fence, cut, fence, "", "</details>"]


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
    if change.cost_lines:
        lines += ["", "**Cost by line** (full scale):", "", *_cost_table(change.cost_lines)]
    if change.numbers:
        lines += ["", "**Numbers:**", *(f"- {n.strip()}" for n in change.numbers)]
    for title, section in change.sections.items():
        lines += ["", f"**{title}:**", *(f"- {line.strip()}" for line in section)]
    full = _full_diff(change.full_diff)
    if full:
        lines += ["", *full]
    return "\n".join(lines)
