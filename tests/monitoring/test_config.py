"""Bad `ai-infra:monitoring` input is refused at its path, with the fix, before anything is
registered."""

from __future__ import annotations

from typing import Any

import pytest

from graph.engine import record_program
from stacks.messages import ConfigError
from tests.monitoring.stack import monitoring, raw


def refused(**overrides: Any) -> dict[str, str]:
    graph, error = record_program(raw(**overrides))
    assert isinstance(error, ConfigError), "accepted"
    assert graph.resources == [], [r.urn for r in graph]
    return dict(error.rendered)


CASES: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "a threshold of the wrong type",
        monitoring(thresholds={"idlePercent": "5"}),
        "ai-infra:monitoring.thresholds.idlePercent",
        "number",
    ),
    (
        "a threshold out of range",
        monitoring(thresholds={"storagePercent": 100}),
        "ai-infra:monitoring.thresholds.storagePercent",
        "99",
    ),
    (
        "an unknown key",
        monitoring(pagerduty={"key": "x"}),
        "ai-infra:monitoring.pagerduty",
        "",
    ),
    (
        "a stack channel that is not defined",
        monitoring(stackChannels=["oncall", "nobody"]),
        "ai-infra:monitoring.stackChannels[1]",
        "'nobody' is not a channel of monitoring.channels (defined: oncall, pretrain-pager)",
    ),
    (
        "a team channel that is not defined",
        monitoring(teams=[{"team": "pretrain", "channels": ["pager"]}]),
        "ai-infra:monitoring.teams[0].channels[0]",
        "'pager' is not a channel",
    ),
    (
        "a team that is not a team",
        monitoring(teams=[{"team": "infra", "channels": ["oncall"]}]),
        "ai-infra:monitoring.teams[0].team",
        "'infra' is not a team of ai-infra:teams (pretrain, research)",
    ),
    (
        "a team routed twice",
        monitoring(teams=[{"team": "research"}, {"team": "research"}]),
        "ai-infra:monitoring.teams[1].team",
        "routed twice",
    ),
    (
        "alerts with nobody to tell",
        monitoring(stackChannels=[]),
        "ai-infra:monitoring.stackChannels",
        "no channel hears its alerts",
    ),
    (
        "a channel of two kinds",
        monitoring(
            channels=[
                {
                    "name": "oncall",
                    "email": "a@example.com",
                    "pubsubTopic": "projects/test-project/topics/alerts",
                }
            ]
        ),
        "ai-infra:monitoring.channels[0]",
        "exactly one of `email` or `pubsubTopic`",
    ),
    (
        "a channel of no kind",
        monitoring(channels=[{"name": "oncall"}]),
        "ai-infra:monitoring.channels[0]",
        "exactly one",
    ),
    (
        "two channels of one name",
        monitoring(
            channels=[
                {"name": "oncall", "email": "a@example.com"},
                {"name": "oncall", "email": "b@example.com"},
            ]
        ),
        "ai-infra:monitoring.channels[1].name",
        "names two channels",
    ),
    (
        "an address that is not one",
        monitoring(channels=[{"name": "oncall", "email": "oncall at example.com"}]),
        "ai-infra:monitoring.channels[0].email",
        "is not an email address",
    ),
    (
        "a topic without its project",
        monitoring(channels=[{"name": "oncall", "pubsubTopic": "alerts"}]),
        "ai-infra:monitoring.channels[0].pubsubTopic",
        "projects/PROJECT/topics/TOPIC",
    ),
    (
        "too many channels",
        monitoring(channels=[{"name": f"c{i}", "email": "a@example.com"} for i in range(17)]),
        "ai-infra:monitoring.channels",
        "16",
    ),
    (
        "enabled written as a string",
        monitoring(enabled="yes"),
        "ai-infra:monitoring.enabled",
        "expected true or false",
    ),
]


@pytest.mark.parametrize(("case", "value", "path", "fix"), CASES, ids=[c[0] for c in CASES])
def test_bad_monitoring_is_refused_at_its_path(case, value, path, fix):
    problems = refused(monitoring=value)
    assert path in problems, (case, problems)
    assert fix in problems[path], (case, problems[path])


def test_disabled_monitoring_builds_nothing_and_needs_no_channel():
    graph, error = record_program(raw(monitoring={"enabled": False}))
    assert error is None
    assert not [r for r in graph if r.type.startswith("gcp:monitoring/")]
    assert not [
        r for r in graph if r.type == "kubernetes:monitoring.googleapis.com/v1:PodMonitoring"
    ]
