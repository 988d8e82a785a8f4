"""What a team member may do on the cluster, and what the control plane must reach: the RBAC
the program renders resolved against the charts' recorded ClusterRoles, and the firewall
against every webhook and APIService the charts install (catalog/charts.py)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from catalog.charts import CLUSTER_ROLES, CONTROL_PLANE_CALLS
from components.gke.kueue import BATCH_USER_ROLE, CHARTS, JOBSET_CONTROLLER
from graph.engine import Graph
from graph.rbac import allowed, cluster_role_rules
from tests.conftest import build_graph, with_config
from tests.gke.test_teams import TEAMS

VISION = {"vision@example.com"}
SPEECH = {"speech-only@example.com"}
SHARED = {"shared@example.com"}


@pytest.fixture(scope="module")
def graph() -> Graph:
    config: dict[str, Any] = copy.deepcopy(dict(TEAMS))
    config["teams"][1]["groups"] = ["shared@example.com", "speech-only@example.com"]
    return build_graph(with_config(**config))


def test_the_batch_user_role_is_the_one_the_kueue_chart_installs():
    # Release name = chart name, so the chart's `<fullname>-batch-user-role` is kueue-...
    assert CHARTS["kueue"].name == "kueue"
    assert BATCH_USER_ROLE == "kueue-batch-user-role"
    assert CLUSTER_ROLES[BATCH_USER_ROLE].aggregates == "rbac.kueue.x-k8s.io/batch-user"


def test_the_jobset_controller_is_the_user_the_jobset_chart_runs_it_as():
    # charts/jobset/templates/controller/_helpers.tpl at v0.12.0: `<fullname>-controller`,
    # in the release's namespace; the admission policies let only it make a JobSet's Jobs.
    assert JOBSET_CONTROLLER == "system:serviceaccount:jobset-system:jobset-controller"


def test_edit_alone_cannot_create_jobsets(graph: Graph):
    # Why teams get a second binding: both charts aggregate only JobSet reads into `edit`.
    rules = cluster_role_rules(graph, "edit")
    assert any(r.group == "jobset.x-k8s.io" and "get" in r.verbs for r in rules)
    assert not any(r.group == "jobset.x-k8s.io" and "create" in r.verbs for r in rules)


def test_team_groups_are_bound_to_the_member_role_and_kueue_batch_user(graph: Graph):
    bindings = {
        b.inputs["metadata"]["name"]: b.inputs
        for b in graph.of_type("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding")
        if b.inputs["metadata"]["namespace"] == "vision"
    }
    assert {name: b["roleRef"]["name"] for name, b in bindings.items()} == {
        "ai-infra-team-member": "ai-infra-team-member",
        "ai-infra-team-batch-user": "kueue-batch-user-role",
    }
    for binding in bindings.values():
        assert [s["name"] for s in binding["subjects"]] == [
            "vision@example.com",
            "shared@example.com",
        ]


@pytest.mark.parametrize("verb", ["create", "get", "list", "delete", "update"])
def test_a_member_manages_jobsets_in_their_namespace_only(graph: Graph, verb: str):
    assert allowed(graph, VISION, verb, "jobset.x-k8s.io", "jobsets", "vision")
    assert not allowed(graph, VISION, verb, "jobset.x-k8s.io", "jobsets", "speech")
    assert allowed(graph, SPEECH, verb, "jobset.x-k8s.io", "jobsets", "speech")
    assert not allowed(graph, SPEECH, verb, "jobset.x-k8s.io", "jobsets", "vision")
    # A group listed by both teams acts in both namespaces, nowhere else.
    assert allowed(graph, SHARED, verb, "jobset.x-k8s.io", "jobsets", "vision")
    assert allowed(graph, SHARED, verb, "jobset.x-k8s.io", "jobsets", "speech")
    assert not allowed(graph, SHARED, verb, "jobset.x-k8s.io", "jobsets", "kueue-system")


def test_a_member_sees_their_queue_but_cannot_admit_or_requeue_work(graph: Graph):
    def may(verb: str, group: str, resource: str, namespace: str | None = "vision") -> bool:
        return allowed(graph, VISION, verb, group, resource, namespace)

    # Pods come from Jobs and JobSets only: a bare pod could claim a Job owner and pass the
    # admission policies' Kueue-managed test.
    assert not may("create", "", "pods")
    assert may("delete", "", "pods") and may("get", "", "pods/log")
    assert may("create", "", "pods/exec")
    assert may("create", "batch", "jobs")
    assert may("get", "kueue.x-k8s.io", "localqueues")
    assert may("get", "kueue.x-k8s.io", "workloads")
    assert may("list", "visibility.kueue.x-k8s.io", "localqueues/pendingworkloads")
    for verb, resource in [
        ("update", "workloads"),
        ("patch", "workloads"),
        ("update", "localqueues"),
        ("create", "localqueues"),
    ]:
        assert not may(verb, "kueue.x-k8s.io", resource), (verb, resource)
    for resource in ("clusterqueues", "cohorts", "resourceflavors"):
        assert not may("create", "kueue.x-k8s.io", resource, None), resource
        assert not may("update", "kueue.x-k8s.io", resource, None), resource


def test_a_member_cannot_do_what_edit_would_let_them_do_around_the_tenancy(graph: Graph):
    def may(verb: str, group: str, resource: str) -> bool:
        return allowed(graph, VISION, verb, group, resource, "vision")

    for verb in ("create", "update", "patch", "delete"):
        assert not may(verb, "apps", "daemonsets"), verb
        assert not may(verb, "networking.k8s.io", "networkpolicies"), verb
        assert not may(verb, "", "serviceaccounts"), verb
        assert not may(verb, "rbac.authorization.k8s.io", "rolebindings"), verb
        assert not may(verb, "", "pods/ephemeralcontainers"), verb
    assert may("get", "networking.k8s.io", "networkpolicies")
    assert may("create", "apps", "deployments")


def test_a_team_without_groups_grants_nobody_anything(build):
    graph = build(tpuSlices=[{"name": "s", "accelerator": "v5p-16"}], teams=[{"name": "solo"}])
    assert not graph.of_type("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding")


def test_the_control_plane_reaches_every_webhook_and_apiservice(graph: Graph):
    (rule,) = [
        r
        for r in graph.of_type("gcp:compute/firewall:Firewall")
        if r.inputs["name"].endswith("allow-webhooks")
    ]
    (cluster,) = graph.of_type("gcp:container/cluster:Cluster")
    master = cluster.inputs["privateClusterConfig"]["masterIpv4CidrBlock"]
    assert rule.inputs["sourceRanges"] == [master]
    assert rule.inputs["direction"] == "INGRESS"
    # Every GKE node, and no other system's VM: the controllers run on the system pool.
    assert rule.inputs["targetTags"] == ["ai-test-gke-node"]
    ports = {
        int(port)
        for allow in rule.inputs["allows"]
        if allow["protocol"] == "tcp"
        for port in allow["ports"]
    }
    needed = {call.target_port for call in CONTROL_PLANE_CALLS}
    assert needed == {8082, 9443}
    missing = [
        f"{c.chart} {c.kind} {c.name} -> {c.service}:{c.target_port}"
        for c in CONTROL_PLANE_CALLS
        if c.target_port not in ports
    ]
    assert missing == [], rule.urn
    for release in graph.of_type("kubernetes:helm.sh/v3:Release"):
        assert rule.urn in release.dependencies, release.urn
