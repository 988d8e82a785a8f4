"""Prometheus' own promtool judges the alert conditions: the rule file they render parses,
and each condition fires on synthetic series of the situation it names, not before its
duration, and stays silent on a healthy stack. The rule file carries the same query and
duration the alert policies send (alerts.rule_file and alerts.condition_args read one
Condition)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.monitoring.alerts import rule_file
from components.monitoring.watch import Condition, Watch, watches
from tests.monitoring.stack import config

PROMTOOL = shutil.which("promtool")
pytestmark = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool is absent: `apt-get install prometheus` provides it"
)
SELECTOR = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\}")
MATCHER = re.compile(r'([a-zA-Z_]+)(=~|=)"([^"]*)"')
WATCHES = watches(config())
CONDITIONS = [(w, c) for w in WATCHES for c in w.conditions]


def _values(regex: str, count: int) -> list[str]:
    """`count` distinct strings the regex matches: alternatives in turn, `.+` numbered."""
    group = re.search(r"\(([^()]*)\)", regex)
    alternatives = group.group(1).split("|") if group else regex.split("|")
    found = []
    for k in range(count):
        alt = alternatives[k % len(alternatives)]
        text = regex.replace(group.group(0), alt) if group else alt
        found.append(text.replace(".+", f"n{k}"))
    assert all(re.fullmatch(regex, v) for v in found), (regex, found)
    return found


def _series(selector: str, count: int = 1) -> list[dict[str, str]]:
    """`count` label sets the selector matches, `__name__` included."""
    match = SELECTOR.fullmatch(selector)
    assert match, selector
    name, body = match.groups()
    sets: list[dict[str, str]] = [{"__name__": name} for _ in range(count)]
    for label, op, value in MATCHER.findall(body):
        values = _values(value, count) if op == "=~" else [value] * count
        for labels, v in zip(sets, values, strict=True):
            labels[label] = v
    return sets


def _text(labels: dict[str, str]) -> str:
    return "{" + ", ".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def _input(labels: dict[str, str], value: float, minutes: int) -> dict[str, str]:
    return {"series": _text(labels), "values": f"{value}+0x{minutes + 10}"}


def _shown(labels: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in labels.items() if k != "__name__"}


def situations(
    c: Condition, minutes: int
) -> tuple[list[dict[str, str]], list[dict[str, str]], dict[str, str]]:
    """(series of the situation, series of a healthy stack, labels the alert carries beyond
    the rule's own)."""
    first = c.reads[0]
    if c.kind == "idle":
        (labels,) = _series(first)
        return [_input(labels, c.bound / 2, minutes)], [_input(labels, 50, minutes)], {}
    if c.kind == "full":
        (labels,) = _series(first)
        return [_input(labels, c.bound + 4, minutes)], [_input(labels, 50, minutes)], _shown(labels)
    if c.kind == "down":
        other = {"__name__": "unrelated", "job": "x"}
        (labels,) = _series(first)
        # absent() carries the selector's equality matchers as labels.
        equal = {k: v for k, op, v in MATCHER.findall(first) if op == "="}
        return [_input(other, 1, minutes)], [_input(labels, 600, minutes)], equal
    if c.kind == "pending":
        pending, nominal, usage = (_series(s)[0] for s in c.reads)
        common = [_input(pending, 1, minutes), _input(nominal, 8, minutes)]
        return [*common, _input(usage, 4, minutes)], [*common, _input(usage, 8, minutes)], {}
    size = int(c.bound)
    if c.query.startswith("(count(count by (node_id)"):
        nodes = _series(first, size)
        healthy = [_input(n, 50, minutes) for n in nodes]
        return healthy[:-1], healthy, {}
    if c.query.startswith("(count("):
        nodes = _series(first, size)
        healthy = [_input(n, 1, minutes) for n in nodes]
        return [*healthy[:-1], _input(nodes[-1], 0, minutes)], healthy, {}
    (labels,) = _series(first)
    return [_input(labels, size - 1, minutes)], [_input(labels, size, minutes)], _shown(labels)


def _run(tmp_path: Path, rules: str, tests: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    (tmp_path / "rules.yaml").write_text(rules)
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(tests, sort_keys=False))
    return subprocess.run(
        [str(PROMTOOL), "test", "rules", str(tmp_path / "tests.yaml")],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_the_rule_file_parses(tmp_path):
    path = tmp_path / "rules.yaml"
    path.write_text(rule_file(WATCHES))
    done = subprocess.run(
        [str(PROMTOOL), "check", "rules", str(path)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(CONDITIONS)} rules found" in done.stdout, done.stdout


def test_every_kind_of_condition_is_exercised():
    assert {c.kind for _, c in CONDITIONS} == {"idle", "below-size", "pending", "full", "down"}


@pytest.mark.parametrize(("watch", "condition"), CONDITIONS, ids=[c.rule for _, c in CONDITIONS])
def test_a_condition_fires_on_its_situation_after_its_duration_only(
    tmp_path: Path, watch: Watch, condition: Condition
):
    minutes = condition.minutes
    bad, good, extra = situations(condition, minutes)
    labels = {"owner": watch.owner or "platform", "watches": watch.id, **extra}
    fired = {"exp_labels": labels}

    def case(series: list[dict[str, str]], at: int, alerts: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "interval": "1m",
            "input_series": series,
            "alert_rule_test": [
                {"eval_time": f"{at}m", "alertname": condition.rule, "exp_alerts": alerts}
            ],
        }

    tests = {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [
            case(bad, minutes + 2, [fired]),
            case(bad, minutes - 2, []),
            case(good, minutes + 2, []),
        ],
    }
    only = rule_file(
        [
            Watch(
                watch.id,
                watch.key,
                watch.what,
                watch.page,
                watch.owner,
                watch.severity,
                (),
                (condition,),
            )
        ]
    )
    done = _run(tmp_path, only, tests)
    assert done.returncode == 0, f"{condition.query}\n{done.stdout}{done.stderr}"
