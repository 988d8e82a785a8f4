"""What is wrong with `ai-infra:monitoring` in its stack: a channel named but not defined, a
team that is not a team, an alert with nobody to tell, a rule name two watches share."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from components.base import Problem
from components.monitoring.config import RULE_NAME

if TYPE_CHECKING:
    from stacks.config import StackConfig

KEY = "monitoring"


def _channel_refs(config: StackConfig) -> list[Problem]:
    monitoring = config.monitoring
    defined = [c.name for c in monitoring.channels]
    problems = [
        Problem((KEY, "channels", i, "name"), f"'{name}' names two channels; names are unique")
        for i, name in enumerate(defined)
        if defined.index(name) != i
    ]
    known = ", ".join(sorted(set(defined))) or "none"
    routes = [(("stackChannels",), monitoring.stack_channels)] + [
        (("teams", i, "channels"), route.channels) for i, route in enumerate(monitoring.teams)
    ]
    for path, names in routes:
        problems += [
            Problem(
                (KEY, *path, j),
                f"'{name}' is not a channel of monitoring.channels (defined: {known}); add it "
                "there or name a defined one",
            )
            for j, name in enumerate(names)
            if name not in defined
        ]
    return problems


def _team_refs(config: StackConfig) -> list[Problem]:
    teams = [t.name for t in config.teams]
    routed = [r.team for r in config.monitoring.teams]
    problems = []
    for i, name in enumerate(routed):
        if name not in teams:
            problems.append(
                Problem(
                    (KEY, "teams", i, "team"),
                    f"'{name}' is not a team of ai-infra:teams "
                    f"({', '.join(teams) or 'none'}); route only teams the stack onboards",
                )
            )
        elif routed.index(name) != i:
            problems.append(
                Problem((KEY, "teams", i, "team"), f"'{name}' is routed twice; merge the entries")
            )
    return problems


def problems(config: StackConfig) -> list[Problem]:
    """The config's problems at stack paths; an enabled config needs stack channels."""
    monitoring = config.monitoring
    found = _channel_refs(config) + _team_refs(config)
    if monitoring.enabled and not monitoring.stack_channels:
        found.append(
            Problem(
                (KEY, "stackChannels"),
                "monitoring is enabled but no channel hears its alerts; list at least one "
                "monitoring.channels name here (an alert nobody reads is no alert)",
            )
        )
    return found


def rule_problems(config: StackConfig) -> list[Problem]:
    """Alert names derived from the stack must be label names and unique: a guard on the
    derivation, reported at the monitoring key."""
    from components.monitoring.watch import watches

    rules = [c.rule for w in watches(config) for c in w.conditions]
    twice = [r for r, n in Counter(rules).items() if n > 1]
    bad = [r for r in rules if not RULE_NAME.fullmatch(r)]
    return [
        Problem((KEY,), f"derived alert name '{r}' is {why}; rename the entry it comes from")
        for why, names in (("not a Prometheus label name", bad), ("shared by two alerts", twice))
        for r in names
    ]
