"""Teams onboarded by config: what each team gets, and bad team input."""

from __future__ import annotations

from typing import Any

import pytest

from plan.engine import run_program
from stacks.loading import parse
from stacks.messages import ConfigError
from tests.conftest import build_graph, with_config

TEAMS = dict(
    cluster={"rbacSecurityGroup": "gke-security-groups@example.com"},
    tpuSlices=[{"name": "s", "accelerator": "v5p-16"}],
    buckets=[{"name": "data"}, {"name": "ckpt"}],
    teams=[
        {
            "name": "vision",
            "groups": ["vision@example.com", "shared@example.com"],
            "roles": ["roles/aiplatform.user"],
            "buckets": {"data": "read", "ckpt": "admin"},
            "serviceAccount": "jobs",
        },
        {"name": "speech", "groups": ["shared@example.com"]},
    ],
)


@pytest.fixture(scope="module")
def graph():
    return build_graph(with_config(**TEAMS))


def test_team_namespace_is_labelled_for_kueue(graph):
    namespace = graph.named("team-vision-namespace").inputs["metadata"]
    assert namespace["name"] == "vision"
    assert namespace["labels"] == {"ai-infra/team": "vision", "ai-infra/kueue-managed": "true"}


def test_team_identity_is_bound_both_ways(graph):
    email = "ai-test-vision@test-project.iam.gserviceaccount.com"
    assert graph.named("team-vision-identity-sa").inputs["accountId"] == "ai-test-vision"
    ksa = graph.named("team-vision-identity-service-account").inputs["metadata"]
    assert (ksa["name"], ksa["namespace"]) == ("jobs", "vision")
    assert ksa["annotations"] == {"iam.gke.io/gcp-service-account": email}
    binding = graph.named("team-vision-identity-iam.workloadIdentityUser").inputs
    assert binding["role"] == "roles/iam.workloadIdentityUser"
    assert binding["member"] == "serviceAccount:test-project.svc.id.goog[vision/jobs]"
    role = graph.named("team-vision-identity-aiplatform.user").inputs
    assert (role["role"], role["member"]) == ("roles/aiplatform.user", f"serviceAccount:{email}")
    grants = {
        g.inputs["bucket"]: g.inputs["role"]
        for g in graph.of_type("gcp:storage/bucketIAMMember:BucketIAMMember")
        if g.inputs["member"] == f"serviceAccount:{email}"
    }
    assert grants == {
        "test-project-ai-test-data": "roles/storage.objectViewer",
        "test-project-ai-test-ckpt": "roles/storage.objectAdmin",
    }
    namespace = graph.named("team-vision-namespace").urn
    assert namespace in graph.named("team-vision-identity-service-account").dependencies


def test_team_groups_get_edit_in_their_namespace_only(graph):
    binding = graph.named("team-vision-edit").inputs
    assert binding["metadata"]["namespace"] == "vision"
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "edit",
    }
    assert [s["name"] for s in binding["subjects"]] == ["vision@example.com", "shared@example.com"]
    assert all(s["kind"] == "Group" for s in binding["subjects"])
    assert not graph.of_type("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding")


def test_each_group_can_fetch_credentials_once(graph):
    viewers = [
        r.inputs
        for r in graph.of_type("gcp:projects/iAMMember:IAMMember")
        if r.inputs["role"] == "roles/container.clusterViewer"
    ]
    assert sorted(v["member"] for v in viewers) == [
        "group:shared@example.com",
        "group:vision@example.com",
    ]
    cluster = graph.named("gke-cluster").inputs
    assert cluster["authenticatorGroupsConfig"] == {
        "securityGroup": "gke-security-groups@example.com"
    }


def test_local_queue_points_at_the_team_cluster_queue(graph):
    local = graph.named("team-speech-local-queue").inputs
    assert local["metadata"] == {"name": "speech", "namespace": "speech"}
    assert local["spec"] == {"clusterQueue": "speech"}
    cluster_queue = graph.named("team-speech-cluster-queue")
    assert cluster_queue.urn in graph.named("team-speech-local-queue").dependencies
    assert cluster_queue.inputs["metadata"]["name"] == "speech"


def problems(**overrides: Any) -> dict[str, str]:
    config = with_config(**{**TEAMS, **overrides})
    with pytest.raises(ConfigError) as error:
        parse(config, "test")
    with pytest.raises(ConfigError):
        run_program(config)
    return dict(error.value.rendered)


@pytest.mark.parametrize(
    ("teams", "path", "fragment"),
    [
        ([{"name": "Vision"}], "ai-infra:teams[0].name", "lowercase"),
        ([{"name": "a"}, {"name": "a"}], "ai-infra:teams[1].name", "names must be unique"),
        ([{"name": "kube-system"}], "ai-infra:teams[0].name", "belongs to Kubernetes"),
        ([{"name": "kueue-system"}], "ai-infra:teams[0].name", "belongs to the platform"),
        ([{"name": "gmp-system"}], "ai-infra:teams[0].name", "belongs to GKE"),
        ([{"name": "gke-gmp-system"}], "ai-infra:teams[0].name", "belongs to GKE"),
        (
            [{"name": "a", "quota": {"s": 6}}, {"name": "b", "quota": {"s": "50%"}}],
            "ai-infra:teams[1].quota.s",
            "add up to 10, but it provides 8",
        ),
        (
            [{"name": "a", "quota": {"nope": 1}}],
            "ai-infra:teams[0].quota.nope",
            "no TPU slice or GPU pool named 'nope'",
        ),
        ([{"name": "a", "quota": {"s": 1.5}}], "ai-infra:teams[0].quota.s", "fraction 1.5"),
        ([{"name": "a", "quota": {"s": "150%"}}], "ai-infra:teams[0].quota.s", "0% and 100%"),
        ([{"name": "a", "roles": ["roles/editor"]}], "ai-infra:teams[0].roles[0]", "basic role"),
        (
            [{"name": "a", "buckets": {"logs": "read"}}],
            "ai-infra:teams[0].buckets.logs",
            "no bucket named 'logs'",
        ),
        ([{"name": "a", "groups": ["not-an-email"]}], "ai-infra:teams[0].groups[0]", "email"),
        ([{"name": "a", "queue": "x"}], "ai-infra:teams[0].queue", "unknown field"),
        ([{"name": "a-very-long-team-name-indeed"}], "ai-infra:teams[0].name", "6 to 30"),
    ],
)
def test_bad_team_input_is_rejected_with_its_path(teams, path, fragment):
    found = problems(teams=teams)
    assert path in found, found
    assert fragment in found[path], found[path]


def test_groups_need_the_rbac_security_group():
    found = problems(cluster={}, teams=[{"name": "a", "groups": ["a@example.com"]}])
    assert "rbacSecurityGroup" in found["ai-infra:teams[0].groups"]


def test_cpu_written_as_a_yaml_number_is_the_documented_default():
    config = parse(with_config(**{**TEAMS, "teams": [{"name": "a", "cpu": 1000}]}), "test")
    assert config.teams[0].cpu == "1000"
    found = problems(teams=[{"name": "a", "cpu": -1}])
    assert "Kubernetes quantity" in found["ai-infra:teams[0].cpu"]


def test_a_quota_key_with_markers_is_reported_at_its_own_path():
    """Problems are values: a key holding '@@' or '.' cannot pass for a path."""
    found = problems(teams=[{"name": "a", "quota": {"@@s@@x": 1, "a.b": 1}}])
    assert "no TPU slice or GPU pool named '@@s@@x'" in found['ai-infra:teams[0].quota["@@s@@x"]']
    assert "no TPU slice or GPU pool named 'a.b'" in found['ai-infra:teams[0].quota["a.b"]']
