"""Teams onboarded by config: what each team gets, and bad team input."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from graph.engine import run_program
from graph.netpol import Pod, connects, egress_allowed
from stacks.loading import parse
from stacks.messages import ConfigError
from tests.conftest import build_graph, with_config, with_mega_pool

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
    # Pod Security Admission enforces the team's level (baseline by default) and warns and
    # audits at restricted.
    assert namespace["labels"] == {
        "ai-infra/team": "vision",
        "ai-infra/kueue-managed": "true",
        "pod-security.kubernetes.io/enforce": "baseline",
        "pod-security.kubernetes.io/warn": "restricted",
        "pod-security.kubernetes.io/audit": "restricted",
    }


def test_a_host_network_team_enforces_baseline_by_policy_not_by_pod_security_admission():
    graph = build_graph(
        with_config(
            tpuSlices=[{"name": "s", "accelerator": "v5p-16", "team": "mega"}],
            teams=[{"name": "mega", "tpuHostNetwork": True}],
        )
    )
    labels = graph.named("team-mega-namespace").inputs["metadata"]["labels"]
    assert "pod-security.kubernetes.io/enforce" not in labels
    assert labels["pod-security.kubernetes.io/warn"] == "baseline"
    assert labels["ai-infra/tpu-host-network"] == "true"


def test_a_gpu_direct_team_enforces_baseline_by_policy_too():
    graph = build_graph(with_mega_pool(teams=[{"name": "vision", "gpuDirectPods": True}]))
    labels = graph.named("team-vision-namespace").inputs["metadata"]["labels"]
    assert "pod-security.kubernetes.io/enforce" not in labels
    assert labels["pod-security.kubernetes.io/audit"] == "baseline"
    assert labels["ai-infra/gpu-direct-pods"] == "true"


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


def test_team_groups_get_the_member_role_in_their_namespace_only(graph):
    binding = graph.named("team-vision-member").inputs
    assert binding["metadata"]["namespace"] == "vision"
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "ai-infra-team-member",
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


# Isolation between teams: one default-deny NetworkPolicy per team namespace.

KUBE_DNS = Pod("kube-system", {"k8s-app": "kube-dns"})
WORKER = Pod("vision", {"jobset.sigs.k8s.io/jobset-name": "train"})
LEADER = Pod("vision", {"jobset.sigs.k8s.io/jobset-name": "train", "role": "leader"})
OTHER_TEAM = Pod("speech", {"jobset.sigs.k8s.io/jobset-name": "asr"})
KUEUE = Pod("kueue-system", {"control-plane": "controller-manager"})


def test_team_pods_talk_to_each_other_on_any_port(graph):
    for port, protocol in [(8471, "TCP"), (8080, "TCP"), (1234, "UDP"), (9999, "TCP")]:
        assert connects(graph, WORKER, LEADER, port, protocol), (port, protocol)
        assert connects(graph, LEADER, WORKER, port, protocol), (port, protocol)


def test_teams_cannot_reach_each_other(graph):
    assert not connects(graph, WORKER, OTHER_TEAM, 8471)
    assert not connects(graph, OTHER_TEAM, WORKER, 8471)
    # Nor can a pod of an unpoliced namespace reach in.
    assert not connects(graph, KUEUE, WORKER, 8080)


def test_team_pods_resolve_names_through_kube_dns_only(graph):
    assert egress_allowed(graph, WORKER, KUBE_DNS, 53, "UDP")
    assert egress_allowed(graph, WORKER, KUBE_DNS, 53, "TCP")
    assert not egress_allowed(graph, WORKER, Pod("kube-system", {"k8s-app": "other"}), 53, "UDP")
    assert not egress_allowed(graph, WORKER, "8.8.8.8", 53, "UDP")
    assert not egress_allowed(graph, WORKER, KUBE_DNS, 10055)


def test_team_pods_reach_the_metadata_server_and_https_only(graph):
    assert egress_allowed(graph, WORKER, "169.254.169.254", 80)
    assert egress_allowed(graph, WORKER, "169.254.169.252", 988)
    # Cloud Storage and other Google APIs, by public address or Private Google Access.
    assert egress_allowed(graph, WORKER, "142.250.1.207", 443)
    assert egress_allowed(graph, WORKER, "199.36.153.8", 443)
    assert not egress_allowed(graph, WORKER, "142.250.1.207", 80)
    assert not egress_allowed(graph, WORKER, "10.0.0.5", 22)
    assert not egress_allowed(graph, WORKER, "169.254.169.254", 22)


def test_every_team_namespace_has_exactly_one_policy_selecting_every_pod(graph):
    policies = graph.of_type("kubernetes:networking.k8s.io/v1:NetworkPolicy")
    assert sorted(p.inputs["metadata"]["namespace"] for p in policies) == ["speech", "vision"]
    for policy in policies:
        spec = policy.inputs["spec"]
        assert spec["podSelector"] == {"matchLabels": {}}, policy.urn
        assert spec["policyTypes"] == ["Ingress", "Egress"], policy.urn
        assert graph.named(f"team-{policy.inputs['metadata']['namespace']}-namespace").urn in (
            policy.dependencies
        )


# Kueue manages every job of a team namespace.


def test_jobs_without_a_queue_name_are_queued_in_the_teams_default_queue(graph):
    release = graph.named("batch-kueue").inputs
    config = yaml.safe_load(release["values"]["managerConfig"]["controllerManagerConfigYaml"])
    assert config["manageJobsWithoutQueueName"] is True
    assert config["managedJobsNamespaceSelector"] == {
        "matchLabels": {"ai-infra/kueue-managed": "true"}
    }
    for team in ("vision", "speech"):
        default = graph.named(f"team-{team}-default-queue")
        assert default.inputs["metadata"] == {"name": "default", "namespace": team}
        assert default.inputs["spec"] == {"clusterQueue": team}
        assert graph.named(f"team-{team}-cluster-queue").urn in default.dependencies
