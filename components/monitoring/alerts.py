"""Alert policies from the watches: one policy per watch, one PromQL condition per situation,
sent to the owner's channels. The same conditions render as a Prometheus rule file, which
the tests hand to `promtool check rules` and `promtool test rules`: what promtool judges is
what the policy sends (`query` is `expr`, `duration` is `for`)."""

from __future__ import annotations

from typing import Any

import pulumi_gcp as gcp
import yaml

from components.monitoring.watch import Condition, Watch

EVALUATION_SECONDS = 60
"""A positive multiple of 30 s (AlertPolicy PrometheusQueryLanguageCondition); the system
metrics sample every 60 s."""


def group_name(watch: Watch) -> str:
    """From entry names, not config positions: reordering entries changes no policy."""
    return watch.id


def condition_args(watch: Watch, condition: Condition) -> gcp.monitoring.AlertPolicyConditionArgs:
    return gcp.monitoring.AlertPolicyConditionArgs(
        display_name=condition.title,
        condition_prometheus_query_language=(
            gcp.monitoring.AlertPolicyConditionConditionPrometheusQueryLanguageArgs(
                query=condition.query,
                # The API takes durations in seconds only: "600s", never "10m".
                duration=f"{condition.minutes * 60}s",
                evaluation_interval=f"{EVALUATION_SECONDS}s",
                rule_group=group_name(watch),
                alert_rule=condition.rule,
                labels={"owner": watch.owner or "platform", "watches": watch.id},
            )
        ),
    )


def documentation(watch: Watch) -> str:
    lines = [f"Watches {watch.what}; owner: {watch.owner or 'platform'}.", ""]
    lines += [f"- {c.title}: `{c.query}` for {c.minutes} min" for c in watch.conditions]
    return "\n".join(lines)


def rule_file(watches: list[Watch]) -> str:
    """The conditions as a Prometheus rule file: one group per watch."""
    groups: list[dict[str, Any]] = [
        {
            "name": group_name(w),
            "interval": f"{EVALUATION_SECONDS}s",
            "rules": [
                {
                    "alert": c.rule,
                    "expr": c.query,
                    "for": f"{c.minutes}m",
                    "labels": {"owner": w.owner or "platform", "watches": w.id},
                }
                for c in w.conditions
            ],
        }
        for w in watches
        if w.conditions
    ]
    return yaml.safe_dump({"groups": groups}, sort_keys=False)
