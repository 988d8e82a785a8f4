"""What monitoring registers for a stack, read from the mock run: dashboards Google's own
types accept, alert policies routed to their owners, scrapes named as the charts name things,
and edits that change exactly what they are about."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest

from components.gke.kueue import CHARTS, kueue_manager_config
from components.monitoring import metrics
from components.monitoring.scrape import TARGETS
from graph.engine import Graph
from tests.conftest import build_graph
from tests.monitoring.stack import SLICES, raw

dashboards_v1 = pytest.importorskip(
    "google.cloud.monitoring_dashboard_v1", reason="google-cloud-monitoring-dashboards absent"
)
monitoring_v3 = pytest.importorskip(
    "google.cloud.monitoring_v3", reason="google-cloud-monitoring absent"
)

DASHBOARD = "gcp:monitoring/dashboard:Dashboard"
POLICY = "gcp:monitoring/alertPolicy:AlertPolicy"
CHANNEL = "gcp:monitoring/notificationChannel:NotificationChannel"
POD_MONITORING = "kubernetes:monitoring.googleapis.com/v1:PodMonitoring"
METRIC_NAME = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\{")


@pytest.fixture(scope="module")
def graph() -> Graph:
    return build_graph(raw())


def _board(graph: Graph, role: str) -> dict[str, Any]:
    return json.loads(graph.named(f"monitoring-dashboard-{role}").inputs["dashboardJson"])


def _queries(board: dict[str, Any]) -> list[str]:
    return [
        d["timeSeriesQuery"]["prometheusQuery"]
        for w in board["gridLayout"]["widgets"]
        for d in w["xyChart"]["dataSets"]
    ]


def _policy_queries(policy: Any) -> list[str]:
    return [c["conditionPrometheusQueryLanguage"]["query"] for c in policy.inputs["conditions"]]


def test_every_dashboard_is_one_googles_types_accept(graph):
    found = graph.of_type(DASHBOARD)
    assert len(found) == 5, [r.urn for r in found]
    for r in found:
        # Strict: an unknown field, a wrong enum or two widget kinds fail (json_format.Parse).
        parsed = dashboards_v1.Dashboard.from_json(r.inputs["dashboardJson"])
        assert parsed.display_name.startswith("ai-test: "), r.urn
        assert parsed.grid_layout.widgets, r.urn


def test_every_alert_policy_is_one_googles_types_accept(graph):
    for r in graph.of_type(POLICY):
        body = {k: v for k, v in r.inputs.items() if k not in ("project", "notificationChannels")}
        policy = monitoring_v3.AlertPolicy.from_json(json.dumps(body))
        for condition in policy.conditions:
            promql = condition.condition_prometheus_query_language
            assert promql.duration.total_seconds() >= 300, r.urn
            assert promql.evaluation_interval.total_seconds() % 30 == 0, r.urn


def test_every_query_names_a_metric_of_the_table(graph):
    known = {m.name for m in metrics.ALL}
    queries = [
        q for r in graph.of_type(DASHBOARD) for q in _queries(json.loads(r.inputs["dashboardJson"]))
    ]
    queries += [q for r in graph.of_type(POLICY) for q in _policy_queries(r)]
    named = {n for q in queries for n in METRIC_NAME.findall(q)}
    assert named, "no query named a metric"
    assert named <= known, sorted(named - known)


def test_each_slice_pool_queued_resource_team_volume_and_controller_has_a_policy(graph):
    names = {r.name for r in graph.of_type(POLICY)}
    assert names == {
        f"monitoring-alert-{w}"
        for w in (
            "tpu-slice-train",
            "tpu-slice-small",
            "tpu-slice-burst",
            "gpu-pool-l4",
            "tpu-vms-sweep",
            "team-pretrain",
            "team-research",
            "volume-shared",
            "controller-kueue",
            "controller-jobset",
        )
    }


def test_a_flex_start_slice_is_watched_for_idleness_not_size(graph):
    rules = [
        c["conditionPrometheusQueryLanguage"]["alertRule"]
        for c in graph.named("monitoring-alert-tpu-slice-burst").inputs["conditions"]
    ]
    assert rules == ["tpu_slice_burst_idle"]


def test_a_teams_page_shows_only_its_own_queue(graph):
    for team, other in (("pretrain", "research"), ("research", "pretrain")):
        queries = _queries(_board(graph, f"team-{team}"))
        queues = {
            v for q in queries for v in re.findall(r'(?:preempting_)?cluster_queue="([^"]+)"', q)
        }
        assert queues == {team}, (team, queries)
        assert not any(other in q for q in queries), team


def test_a_teams_alert_goes_to_its_channel_and_others_to_the_stacks(graph):
    def channels(policy: str) -> set[str]:
        deps = graph.named(policy).property_dependencies["notificationChannels"]
        return {urn.rsplit("::", 1)[1] for urn in deps}

    assert channels("monitoring-alert-team-pretrain") == {"monitoring-channel-pretrain-pager"}
    assert channels("monitoring-alert-team-research") == {"monitoring-channel-oncall"}
    assert channels("monitoring-alert-tpu-slice-train") == {"monitoring-channel-oncall"}
    labels = graph.named("monitoring-alert-team-pretrain").inputs["userLabels"]
    assert labels["owner"] == "pretrain"
    condition = graph.named("monitoring-alert-team-pretrain").inputs["conditions"][0]
    assert condition["conditionPrometheusQueryLanguage"]["duration"] == "1200s"


def test_channels_are_of_the_kind_written(graph):
    oncall = graph.named("monitoring-channel-oncall").inputs
    pager = graph.named("monitoring-channel-pretrain-pager").inputs
    assert (oncall["type"], oncall["labels"]) == ("email", {"email_address": "oncall@example.com"})
    assert (pager["type"], pager["labels"]) == (
        "pubsub",
        {"topic": "projects/test-project/topics/pretrain-pager"},
    )


def test_scrapes_name_what_the_pinned_charts_name(graph):
    found = {r.inputs["metadata"]["name"]: r for r in graph.of_type(POD_MONITORING)}
    assert set(found) == {"kueue", "jobset"}
    for target in TARGETS:
        chart = CHARTS[target.release]
        r = found[target.release]
        # The releases are named as the charts, so `<fullname>` is the release name.
        assert (chart.name, chart.namespace) == (target.release, target.namespace)
        assert r.inputs["metadata"]["namespace"] == chart.namespace
        assert (
            r.inputs["spec"]["selector"]["matchLabels"]["app.kubernetes.io/instance"] == chart.name
        )
        endpoint = r.inputs["spec"]["endpoints"][0]
        assert (endpoint["port"], endpoint["scheme"]) == ("metrics", "https")
        secret = endpoint["authorization"]["credentials"]["secret"]
        tokens = [
            s
            for s in graph.of_type("kubernetes:core/v1:Secret")
            if s.inputs["metadata"]["namespace"] == chart.namespace
            and s.inputs["metadata"]["name"] == secret["name"]
        ]
        assert len(tokens) == 1, chart.name
        binding = [
            b
            for b in graph.of_type("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding")
            if b.inputs["roleRef"]["name"] == f"{chart.name}-metrics-reader"
        ]
        assert len(binding) == 1, chart.name
        assert binding[0].inputs["subjects"][0]["namespace"] == chart.namespace


def test_kueue_reports_the_quota_gauges_the_queue_pages_read():
    assert kueue_manager_config()["metrics"]["enableClusterQueueResources"] is True


def _added_slice() -> dict[str, Any]:
    slices = [*copy.deepcopy(SLICES), {"name": "extra", "accelerator": "v6e-4"}]
    return raw(tpuSlices=slices)


def test_a_new_slice_adds_a_panel_and_an_alert_and_touches_only_the_capacity_page(graph):
    after = build_graph(_added_slice())
    new = set(after.urns) - set(graph.urns)
    assert {u.rsplit("::", 1)[1] for u in new if "monitoring" in u} == {
        "monitoring-alert-tpu-slice-extra"
    }
    before_panels = _board(graph, "capacity")["gridLayout"]["widgets"]
    after_panels = _board(after, "capacity")["gridLayout"]["widgets"]
    added = [w["title"] for w in after_panels if w not in before_panels]
    assert added and all("extra" in t for t in added), added
    conditions = after.named("monitoring-alert-tpu-slice-extra").inputs["conditions"]
    assert [c["conditionPrometheusQueryLanguage"]["alertRule"] for c in conditions] == [
        "tpu_slice_extra_idle",
        "tpu_slice_extra_below_size",
    ]
    for r in graph:
        if r.type in (POLICY, CHANNEL) or (r.type == DASHBOARD and "capacity" not in r.name):
            assert after.named(r.name).inputs == r.inputs, r.urn


def test_the_plan_lists_each_dashboard_and_alert_with_what_it_watches():
    from stacks.registry import SYSTEMS, view
    from tests.monitoring.stack import config

    (system,) = [s for s in SYSTEMS if s.name == "monitoring"]
    ((title, lines),) = system.describe(view(config()))
    text = "\n".join(lines)
    assert title == "Monitoring"
    assert "ai-test: team pretrain: 3 panels for teams[0]" in text
    assert "Team pretrain's queue (teams[0]), WARNING, to pretrain-pager:" in text
    assert "TPU VMs sweep (v5p-8 x2) (tpuVms[0]), ERROR, to oncall:" in text
    assert "queued resource not ACTIVE" in text
    assert "monitoring.googleapis.com" in text
    more = config(
        teams=[{"name": "pretrain"}, {"name": "research"}, *({"name": f"t{i}"} for i in range(6))]
    )
    samples = []
    for c in (config(), more):
        found = re.search(r"~([0-9,]+) M samples", "\n".join(system.describe(view(c))[0][1]))
        assert found, "no samples line"
        samples.append(int(found[1].replace(",", "")))
    assert samples[0] < samples[1], samples


def test_monitoring_asks_for_its_api_only_when_enabled():
    from stacks.registry import SYSTEMS, services
    from tests.monitoring.stack import config

    (system,) = [s for s in SYSTEMS if s.name == "monitoring"]
    assert "monitoring.googleapis.com" in services(config())
    assert system.services(config(monitoring={"enabled": False})) == ()


def test_a_team_leaving_takes_its_page_and_alert_and_nothing_else(graph):
    volume = {"name": "shared", "filestore": {"capacityGib": 1024}}
    storage = {"privateServiceRange": "10.200.0.0/20", "volumes": [volume]}
    after = build_graph(raw(teams=[{"name": "pretrain"}], storage=storage))
    gone = {u.rsplit("::", 1)[1] for u in set(graph.urns) - set(after.urns) if "monitoring" in u}
    assert gone == {"monitoring-dashboard-team-research", "monitoring-alert-team-research"}
    for name in (
        "monitoring-alert-team-pretrain",
        "monitoring-dashboard-team-pretrain",
        "monitoring-alert-tpu-slice-train",
        "monitoring-alert-volume-shared",
    ):
        assert after.named(name).inputs == graph.named(name).inputs, name
