"""How cost reads in the offline plan and diff: the plan's cost section, a diff's cost change,
and both as JSON. The plan calls these and nothing else of `prices`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import date
from typing import Any

from prices.catalog import AGE_UNKNOWN, HOURS_PER_MONTH, SOURCES, PriceRow, Status
from prices.cost import COHORT, OUTSIDE, Amount, CostReport, Line, Share
from prices.quotes import money
from stacks import registry

MONTH = f"a month is {HOURS_PER_MONTH} h, as Google's pricing calculator and Infracost reckon it"
REFRESH = "uv run python -m prices refresh"


def _figure(usd: float, unit: str, amount: Amount, total: bool) -> str:
    """An amount as a line or a total shows it: never $0 for what is not known. A line all
    of whose price is unknown says `unknown`; one partly priced, `$X/h + unknown`; a total,
    what it excludes."""
    if not amount.unknown:
        return f"{money(usd)}/{unit}"
    if not total:
        return "unknown" if usd == 0 else f"{money(usd)}/{unit} + unknown"
    return f"{money(usd)}/{unit} excl. {len(amount.unknown)} unknown"


def per_hour(amount: Amount, total: bool = False) -> str:
    return _figure(amount.usd, "h", amount, total)


def per_month(amount: Amount, total: bool = True) -> str:
    return _figure(amount.usd * HOURS_PER_MONTH, "mo", amount, total)


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
        f"    {', '.join(sorted(d if d != AGE_UNKNOWN else 'age unknown' for d in dates))}: "
        f"{SOURCES[source].title}"
        for source, dates in sorted(dated.items(), key=lambda kv: sorted(kv[1]))
    ]


def oldest(rows: Iterable[PriceRow]) -> PriceRow | None:
    """The dated catalog row the figures rest on whose price is oldest."""
    return min((r for r in rows if r.dated), key=lambda row: row.as_of, default=None)


def undated(rows: Iterable[PriceRow]) -> list[PriceRow]:
    """The priced rows the figures rest on whose source carries no date: age unknown."""
    found = {r.key: r for r in rows if r.dated is None and r.status is Status.PRICED}
    return list(found.values())


def _age(row: PriceRow, today: date) -> int:
    assert row.dated is not None
    return (today - row.dated).days


def _oldest_line(rows: Iterable[PriceRow], today: date) -> list[str]:
    rows = list(rows)
    row, unknown = oldest(rows), undated(rows)
    if row is None and not unknown:
        return []
    said = (
        []
        if row is None
        else [
            f"{row.as_of}, {_age(row, today)} days ago ({row.kind.value} {row.item} in "
            f"{row.region}, source {row.source})"
        ]
    )
    if unknown:
        sources = ", ".join(sorted({r.source for r in unknown}))
        said.append(
            f"{len(unknown)} price{'s' if len(unknown) > 1 else ''} of age unknown (source "
            f"{sources}: it carries no date)"
        )
    return [f"  Oldest price used: {'; '.join(said)}; `{REFRESH}` reads today's"]


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


def _line_rows(report: CostReport) -> list[str]:
    rows = [("line", "config key", "capacity", "idle", "full scale", "at full scale, priced as")]
    for line in report.lines:
        how = _how(line)
        rows.append(
            (
                line.label,
                line.config_key,
                line.capacity,
                per_hour(line.idle),
                per_hour(line.full),
                f"{line.units}: {how}" if how else line.units,
            )
        )
    return _table(rows)


def _shares(title: str, shares: Iterable[tuple[str, Share]]) -> list[str]:
    """A table of shares (systems, teams) per hour and per month, idle and at full scale."""
    rows = [
        (
            name,
            per_hour(share.idle, True),
            per_hour(share.full, True),
            per_month(share.idle),
            per_month(share.full),
        )
        for name, share in shares
    ]
    return ["", title, *_table([("", "idle", "full scale", "idle", "full scale"), *rows], "    ")]


def _by_team(report: CostReport) -> list[str]:
    teams = [(t, s) for t, s in report.teams.items() if t not in (COHORT, OUTSIDE)]
    if not teams:
        return []
    cohort = report.teams[COHORT]
    held = [(COHORT, cohort)] if cohort.full.usd or cohort.full.unknown else []
    shown = [*teams, *held, (OUTSIDE, report.teams[OUTSIDE])]
    return _shares("  By team (a team's share of the chips and GPUs of its quota):", shown)


def _caveats(report: CostReport, today: date) -> list[str]:
    """What the figures leave unknown or unpriced, the notes on the prices used, their
    sources and dates, and what is left out."""
    lines: list[str] = []
    unknown = _unknowns(report.lines)
    if unknown:
        lines += ["", "  Unknown prices (the totals exclude them, never count them as $0):"]
        lines += unknown
    if report.unpriced:
        lines += ["", "  Resources with no price rule (not in the totals):"]
        lines += [f"    {what}" for what in report.unpriced]
    notes = _notes(report.lines)
    if notes:
        lines += ["", "  Price notes:", *notes]
    lines += ["", f"  Prices as of (prices/catalog.csv; `{REFRESH}`):"]
    lines += _sources(report.rows)
    lines += _oldest_line(report.rows, today)
    return [*lines, "", "  Left out:", *(f"    {what}" for what in report.left_out)]


def cost_section(report: CostReport, today: date | None = None) -> list[str]:
    """The plan's cost section: each line per hour idle and at full scale with how it is
    priced, the stack's totals per hour and per month, by system and by team, what is
    unknown and what is left out, the dates of the prices and how old the oldest is."""
    stack = [
        ("", "idle", "full scale"),
        ("per hour", per_hour(report.idle, True), per_hour(report.full, True)),
        ("per month", per_month(report.idle), per_month(report.full)),
    ]
    titles = {system.name: system.title for system in registry.SYSTEMS}
    systems = ((titles.get(n, n), s) for n, s in report.by_system().items())
    return [
        "Cost at list prices (USD; idle: autoscaled pools at their minimum, flex-start pools, "
        "dynamic Slurm nodes and provisioner pools at zero, reservations as reserved; full "
        f"scale: every maximum; {MONTH}):",
        *_line_rows(report),
        "",
        "  Stack:",
        *_table(stack, "    "),
        *_shares("  By system:", systems),
        *_by_team(report),
        *_caveats(report, today or date.today()),
    ]


def _change(before: Amount, after: Amount, unit: str, hours: int = 1, moved: bool = False) -> str:
    """The change of an amount; what is not priced is said, never counted as $0: `+$1.20/h`,
    `+$1.20/h + unknown` where unpriced parts also change (`moved`) or come and go, `unknown`
    where nothing priced does."""
    delta = (after.usd - before.usd) * hours
    unpriced = moved or set(before.unknown) != set(after.unknown)
    if unpriced and delta == 0:
        return "unknown"
    sign = "+" if delta >= 0 else "-"
    text = f"{sign}{money(abs(delta))}/{unit}"
    return f"{text} + unknown" if unpriced else text


def _op(before: Line | None, after: Line | None) -> str:
    return "+" if before is None else "-" if after is None else "~"


def _differs(was: Line, now: Line) -> bool:
    """A line changes when its figures do, or what it bills at unknown prices does."""
    return (was.idle, was.full) != (now.idle, now.full) or (
        was.unpriced_units != now.unpriced_units
    )


def changed_lines(
    before: CostReport, after: CostReport
) -> list[tuple[str, Line | None, Line | None]]:
    """(op, before, after) for each line that comes, goes or costs another amount, in the new
    report's order, then the gone ones. A line whose figures stay (a NAT past its 32 VMs) is
    not a cost change, whatever else changed; one whose unpriced parts change is."""
    old = {line.key: line for line in before.lines}
    new = {line.key: line for line in after.lines}
    found = []
    for line in after.lines:
        was = old.get(line.key)
        if was is None or _differs(was, line):
            found.append((_op(was, line), was, line))
    found += [("-", line, None) for line in before.lines if line.key not in new]
    return found


def _booked(was: Line | None, now: Line | None) -> tuple[Amount, Amount]:
    """(idle, full) of the new line as it bills right after `pulumi up`: a group whose new
    template reaches running VMs only when they are recreated bills them at the old price, and
    only the VMs it adds at the new one."""
    if now is None:
        return Amount(), Amount()
    if was is None or not now.deferred or not was.vms[1] or not now.vms[1]:
        return now.idle, now.full
    booked = []
    for old_amount, new_amount, old_vms, new_vms in (
        (was.idle, now.idle, was.vms[0], now.vms[0]),
        (was.full, now.full, was.vms[1], now.vms[1]),
    ):
        kept = min(old_vms, new_vms)
        added = max(0, new_vms - old_vms)
        old_each = old_amount.times(1 / old_vms) if old_vms else Amount()
        new_each = new_amount.times(1 / new_vms) if new_vms else Amount()
        booked.append(old_each.times(kept) + new_each.times(added))
    return booked[0], booked[1]


def _deferred(was: Line | None, now: Line | None) -> str:
    """What a deferred template change costs once every VM is recreated."""
    if was is None or now is None or not now.deferred:
        return ""
    booked_full = _booked(was, now)[1]
    if booked_full == now.full:
        return ""
    # A machine with no catalog price changes by an unknown amount, never by $0.
    moved = bool(booked_full.unknown or now.full.unknown)
    return (
        f"{_change(booked_full, now.full, 'h', moved=moved)} more at full scale once its "
        "running VMs are "
        "recreated (the group's update policy is opportunistic)"
    )


def _booked_total(report: CostReport, changes: list[tuple[str, Line | None, Line | None]]):
    """The report's (idle, full) with each deferred line as it bills right after the run."""
    idle, full = report.idle, report.full
    for _, was, now in changes:
        if now is not None and now.deferred:
            booked_idle, booked_full = _booked(was, now)
            idle = idle + booked_idle + now.idle.times(-1)
            full = full + booked_full + now.full.times(-1)
    return idle, full


def cost_change(before: CostReport, after: CostReport) -> list[str]:
    """A diff's cost: each changed line's own change per hour at full scale and idle, then the
    stack's idle and full-scale change per hour and per month."""
    lines = [f"Cost change at list prices (USD; {MONTH}; prices/catalog.csv):"]
    changes = changed_lines(before, after)
    for op, was, now in changes:
        line = now or was
        assert line is not None
        old_idle, old_full = (was.idle, was.full) if was else (Amount(), Amount())
        new_idle, new_full = _booked(was, now)
        moved = bool(was and now and was.unpriced_units != now.unpriced_units)
        where = f" ({line.config_key})" if line.config_key else ""
        units = (
            line.units
            if not (was and now) or was.units == now.units
            else (f"{was.units} -> {now.units}")
        )
        later = _deferred(was, now)
        lines.append(
            f"  {op} {line.label}{where}  {units}  "
            f"{_change(old_full, new_full, 'h', moved=moved)} at full scale, "
            f"{_change(old_idle, new_idle, 'h', moved=moved)} idle"
            + (f"; {later}" if later else "")
        )
    if len(lines) == 1:
        lines.append("  No change.")
    return lines + [f"  {line}" for line in change_totals(before, after)]


def change_totals(before: CostReport, after: CostReport) -> list[str]:
    """The stack's idle and full-scale cost before and after, per hour and per month, as it
    bills right after the run."""
    idle, full = _booked_total(after, changed_lines(before, after))
    return [
        f"{name}: {per_hour(old, True)} -> {per_hour(new, True)} ({_change(old, new, 'h')}, "
        f"{_change(old, new, 'mo', HOURS_PER_MONTH)})"
        for name, old, new in (("idle", before.idle, idle), ("full scale", before.full, full))
    ]


def _usd(usd: float) -> float:
    return round(usd, 6)


def amount_json(amount: Amount) -> dict[str, Any]:
    """An amount as JSON: `perHour` and `perMonth` null where any part is unknown (a tool
    that sums them must not read 0), `pricedPerHour` the part that is priced."""
    return {
        "perHour": _usd(amount.usd) if amount.known else None,
        "perMonth": _usd(amount.usd * HOURS_PER_MONTH) if amount.known else None,
        "pricedPerHour": _usd(amount.usd),
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
                "asOf": sorted({row.as_of for row in part.quote.rows}),
            }
            for part in line.parts
        ],
    }


def cost_json(report: CostReport, today: date | None = None) -> dict[str, Any]:
    """The cost section as JSON: the same lines and totals the text shows."""
    first = oldest(report.rows)

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
        "oldestPrice": None
        if first is None
        else {
            "asOf": first.as_of,
            "daysOld": _age(first, today or date.today()),
            "source": SOURCES[first.source].title,
        },
        "ageUnknown": len(undated(report.rows)),
    }


def _delta_json(before: Amount, after: Amount, moved: bool = False) -> dict[str, Any]:
    """Before, after and the change; the change is null where the text says `unknown` or
    `+ unknown` (an unpriced part changes), never a priced figure that leaves it out."""
    unpriced = moved or set(before.unknown) != set(after.unknown)
    delta = after.usd - before.usd
    return {
        "before": amount_json(before),
        "after": amount_json(after),
        "change": {
            "perHour": None if unpriced else _usd(delta),
            "perMonth": None if unpriced else _usd(delta * HOURS_PER_MONTH),
        },
    }


def _line_change_json(op: str, was: Line | None, now: Line | None) -> dict[str, Any]:
    line = now or was
    assert line is not None
    booked_idle, booked_full = _booked(was, now)
    moved = bool(was and now and was.unpriced_units != now.unpriced_units)
    return {
        "op": {"+": "create", "~": "update", "-": "delete"}[op],
        "key": line.key,
        "label": line.label,
        "configKey": line.config_key or None,
        "idle": _delta_json(was.idle if was else Amount(), booked_idle, moved),
        "full": _delta_json(was.full if was else Amount(), booked_full, moved),
        "deferred": _deferred(was, now) or None,
    }


def cost_change_json(before: CostReport, after: CostReport) -> dict[str, Any]:
    """A diff's cost change as JSON: the same numbers `cost_change` prints."""
    changes = changed_lines(before, after)
    idle, full = _booked_total(after, changes)
    return {
        "currency": "USD",
        "hoursPerMonth": HOURS_PER_MONTH,
        "idle": _delta_json(before.idle, idle),
        "full": _delta_json(before.full, full),
        "lines": [_line_change_json(*change) for change in changes],
    }
