"""How cost reads in the offline plan and diff: the plan's cost section, a diff's cost change,
and both as JSON. The plan calls these and nothing else of `prices`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from prices.catalog import SOURCES, PriceRow
from prices.cost import COHORT, HOURS_PER_MONTH, OUTSIDE, Amount, CostReport, Line
from prices.quotes import money

SYSTEM_NAMES = {
    "stack": "Stack-wide",
    "gke": "GKE",
    "tpu-provisioner": "TPU provisioner",
    "tpu-vms": "TPU VMs",
    "gpu-clusters": "GPU clusters",
    "slurm": "Slurm",
}


def _unknown(amount: Amount) -> str:
    count = len(amount.unknown)
    return f" + {count} unknown" if count else ""


def per_hour(amount: Amount) -> str:
    return f"{money(amount.usd)}/h{_unknown(amount)}"


def per_month(amount: Amount) -> str:
    return f"{money(amount.usd * HOURS_PER_MONTH)}/mo{_unknown(amount)}"


def _table(rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        (indent + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True))).rstrip()
        for row in rows
    ]


def _how(line: Line) -> str:
    shown = []
    for part in line.parts:
        if part.quote.shown == "included" or part.full == 0:
            continue
        price = part.quote.shown if part.quote.known else "unknown"
        shown.append(f"{part.full:,g} {part.quote.what} x {price}")
    return "; ".join(shown)


def _dates(rows: Iterable[PriceRow]) -> dict[str, set[str]]:
    """Source -> the dates of its rows, in the order the rows come."""
    dated: dict[str, set[str]] = {}
    for row in rows:
        dated.setdefault(row.source, set()).add(row.as_of)
    return dated


def _sources(rows: Iterable[PriceRow]) -> list[str]:
    dated = _dates(rows)
    return [
        f"    {', '.join(sorted(dates))}: {SOURCES[source].title}"
        for source, dates in sorted(dated.items(), key=lambda kv: sorted(kv[1]))
    ]


def _notes(lines: Iterable[Line]) -> list[str]:
    """Each caveat of the prices behind the figures, with the lines it concerns."""
    concerns: dict[str, list[str]] = {}
    for line in lines:
        for part in line.parts:
            if part.idle or part.full:
                for note in part.quote.notes:
                    concerns.setdefault(note, []).append(line.label)
    return [f"    {note}: {', '.join(dict.fromkeys(who))}" for note, who in concerns.items()]


def _unknowns(lines: Iterable[Line]) -> list[str]:
    reasons: dict[str, list[str]] = {}
    for line in lines:
        for part in line.parts:
            if not part.quote.known and (part.idle or part.full):
                reasons.setdefault(f"{part.quote.what}: {part.quote.reason}", []).append(line.label)
    return [f"    {reason}: {', '.join(dict.fromkeys(who))}" for reason, who in reasons.items()]


def cost_section(report: CostReport) -> list[str]:
    """The plan's cost section: each line per hour idle and at full scale with how it is
    priced, the stack's totals per hour and per 30-day month, by system and by team, what is
    unknown and what is left out, and the dates of the prices."""
    lines = [
        "Cost at list prices (USD; idle: autoscaled pools at their minimum, flex-start pools, "
        "dynamic Slurm nodes and provisioner pools at zero; full scale: every maximum; "
        f"a month is 30 days, {HOURS_PER_MONTH} h):"
    ]
    rows = [("line", "config key", "capacity", "idle", "full scale", "at full scale, priced as")]
    for line in report.lines:
        rows.append(
            (
                line.label,
                line.config_key,
                line.capacity,
                per_hour(line.idle),
                per_hour(line.full),
                f"{line.units}: {_how(line)}" if _how(line) else line.units,
            )
        )
    lines += _table(rows)
    lines += ["", "  Stack:"]
    lines += _table(
        [
            ("", "idle", "full scale"),
            ("per hour", per_hour(report.idle), per_hour(report.full)),
            ("per month", per_month(report.idle), per_month(report.full)),
        ],
        "    ",
    )
    lines += ["", "  By system:"]
    lines += _table(
        [
            ("", "idle", "full scale", "idle", "full scale"),
            *(
                (
                    SYSTEM_NAMES.get(system, system),
                    per_hour(share.idle),
                    per_hour(share.full),
                    per_month(share.idle),
                    per_month(share.full),
                )
                for system, share in report.by_system().items()
            ),
        ],
        "    ",
    )
    teams = [(t, s) for t, s in report.teams.items() if t not in (COHORT, OUTSIDE)]
    if teams:
        lines += ["", "  By team (a team's share of the chips and GPUs of its quota):"]
        cohort = report.teams[COHORT]
        held = [(COHORT, cohort)] if cohort.full.usd or cohort.full.unknown else []
        shown = [*teams, *held, (OUTSIDE, report.teams[OUTSIDE])]
        lines += _table(
            [
                ("", "idle", "full scale", "idle", "full scale"),
                *(
                    (
                        team,
                        per_hour(s.idle),
                        per_hour(s.full),
                        per_month(s.idle),
                        per_month(s.full),
                    )
                    for team, s in shown
                ),
            ],
            "    ",
        )
    unknown = _unknowns(report.lines)
    if unknown:
        lines += ["", "  Unknown prices (not in the totals):", *unknown]
    if report.unpriced:
        lines += ["", "  Resources with no price rule (not in the totals):"]
        lines += [f"    {what}" for what in report.unpriced]
    notes = _notes(report.lines)
    if notes:
        lines += ["", "  Price notes:", *notes]
    lines += ["", "  Prices as of (prices/catalog.csv; `uv run python -m prices refresh`):"]
    lines += _sources(report.rows)
    lines += ["", "  Left out:", *(f"    {what}" for what in report.left_out)]
    return lines


def _change(before: Amount, after: Amount, unit: str, hours: int = 1) -> str:
    delta = (after.usd - before.usd) * hours
    sign = "+" if delta >= 0 else "-"
    text = f"{sign}{money(abs(delta))}/{unit}"
    added = [u for u in after.unknown if u not in before.unknown]
    removed = [u for u in before.unknown if u not in after.unknown]
    if added:
        text += f" + {len(added)} unknown"
    if removed:
        text += f" - {len(removed)} unknown"
    return text


def _op(before: Line | None, after: Line | None) -> str:
    return "+" if before is None else "-" if after is None else "~"


def changed_lines(
    before: CostReport, after: CostReport
) -> list[tuple[str, Line | None, Line | None]]:
    """(op, before, after) for each line that comes, goes or costs another amount, in the new
    report's order, then the gone ones. A line whose figures stay (a NAT past its 32 VMs) is
    not a cost change, whatever else changed."""
    old = {line.key: line for line in before.lines}
    new = {line.key: line for line in after.lines}
    found = []
    for line in after.lines:
        was = old.get(line.key)
        if was is None or (was.idle, was.full) != (line.idle, line.full):
            found.append((_op(was, line), was, line))
    found += [("-", line, None) for line in before.lines if line.key not in new]
    return found


def cost_change(before: CostReport, after: CostReport) -> list[str]:
    """A diff's cost: each changed line's own change per hour at full scale and idle, then the
    stack's idle and full-scale change per hour and per 30-day month."""
    lines = [
        f"Cost change at list prices (USD; a month is 30 days, {HOURS_PER_MONTH} h; "
        "prices/catalog.csv):"
    ]
    for op, was, now in changed_lines(before, after):
        line = now or was
        assert line is not None
        old_idle, old_full = (was.idle, was.full) if was else (Amount(), Amount())
        new_idle, new_full = (now.idle, now.full) if now else (Amount(), Amount())
        where = f" ({line.config_key})" if line.config_key else ""
        units = (
            line.units
            if not (was and now) or was.units == now.units
            else (f"{was.units} -> {now.units}")
        )
        lines.append(
            f"  {op} {line.label}{where}  {units}  "
            f"{_change(old_full, new_full, 'h')} at full scale, "
            f"{_change(old_idle, new_idle, 'h')} idle"
        )
    if len(lines) == 1:
        lines.append("  No change.")
    return lines + [f"  {line}" for line in change_totals(before, after)]


def change_totals(before: CostReport, after: CostReport) -> list[str]:
    """The stack's idle and full-scale cost before and after, per hour and per month."""
    return [
        f"{name}: {per_hour(old)} -> {per_hour(new)} ({_change(old, new, 'h')}, "
        f"{_change(old, new, 'mo', HOURS_PER_MONTH)})"
        for name, old, new in (
            ("idle", before.idle, after.idle),
            ("full scale", before.full, after.full),
        )
    ]


def _usd(usd: float) -> float:
    return round(usd, 6)


def amount_json(amount: Amount) -> dict[str, Any]:
    return {
        "perHour": _usd(amount.usd),
        "perMonth": _usd(amount.usd * HOURS_PER_MONTH),
        "unknown": list(amount.unknown),
    }


def _line_json(line: Line) -> dict[str, Any]:
    return {
        "key": line.key,
        "label": line.label,
        "configKey": line.config_key or None,
        "system": line.system,
        "capacity": line.capacity or None,
        "units": line.units,
        "chips": line.chips,
        "gpus": line.gpus,
        "idle": amount_json(line.idle),
        "full": amount_json(line.full),
        "parts": [
            {
                "what": part.quote.what,
                "usdPerUnitHour": part.quote.usd_per_hour,
                "price": part.quote.shown or None,
                "idleUnits": part.idle,
                "fullUnits": part.full,
                "unknownBecause": part.quote.reason or None,
            }
            for part in line.parts
        ],
    }


def cost_json(report: CostReport) -> dict[str, Any]:
    """The cost section as JSON: the same lines and totals the text shows."""

    def shares(items: Iterable[tuple[str, Any]]) -> dict[str, Any]:
        return {k: {"idle": amount_json(s.idle), "full": amount_json(s.full)} for k, s in items}

    return {
        "currency": "USD",
        "hoursPerMonth": HOURS_PER_MONTH,
        "lines": [_line_json(line) for line in report.lines],
        "total": {"idle": amount_json(report.idle), "full": amount_json(report.full)},
        "bySystem": shares(report.by_system().items()),
        "byTeam": shares(report.teams.items()),
        "unpriced": list(report.unpriced),
        "leftOut": list(report.left_out),
        "sources": [
            {"source": SOURCES[s].title, "url": SOURCES[s].url, "asOf": sorted(d)}
            for s, d in _dates(report.rows).items()
        ],
    }


def _delta_json(before: Amount, after: Amount) -> dict[str, Any]:
    return {
        "before": amount_json(before),
        "after": amount_json(after),
        "change": {
            "perHour": _usd(after.usd - before.usd),
            "perMonth": _usd((after.usd - before.usd) * HOURS_PER_MONTH),
        },
    }


def _line_change_json(op: str, was: Line | None, now: Line | None) -> dict[str, Any]:
    line = now or was
    assert line is not None
    return {
        "op": {"+": "create", "~": "update", "-": "delete"}[op],
        "key": line.key,
        "label": line.label,
        "configKey": line.config_key or None,
        "idle": _delta_json(was.idle if was else Amount(), now.idle if now else Amount()),
        "full": _delta_json(was.full if was else Amount(), now.full if now else Amount()),
    }


def cost_change_json(before: CostReport, after: CostReport) -> dict[str, Any]:
    """A diff's cost change as JSON: the same numbers `cost_change` prints."""
    return {
        "currency": "USD",
        "hoursPerMonth": HOURS_PER_MONTH,
        "idle": _delta_json(before.idle, after.idle),
        "full": _delta_json(before.full, after.full),
        "lines": [_line_change_json(*change) for change in changed_lines(before, after)],
    }
