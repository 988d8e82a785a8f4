"""What a team owns beside its quota, as the program registers it and refuses it: the bounds of
its namespace (ResourceQuotas, LimitRange, the services PriorityClass), what its namespace says
the shared policies allow it, its own slices' node account and image reads, and the opt-ins
that would reopen a path, each refused at its config path before anything registers."""

from __future__ import annotations

from typing import Any

import pytest

from components.gke.admission import SERVICES_PRIORITY_CLASS
from graph import types
from graph.engine import Graph, record_program
from stacks.loading import parse
from stacks.messages import ConfigError
from tests.conftest import build_graph, with_config

V5P = {"name": "s", "accelerator": "v5p-16"}
REPO = "us-docker.pkg.dev/test-project/vision"


@pytest.fixture(scope="module")
def graph() -> Graph:
    return build_graph(
        with_config(
            cluster={"imageRepositories": ["us-docker.pkg.dev/test-project/base"]},
            tpuSlices=[V5P, {"name": "own", "accelerator": "v5p-16", "team": "speech"}],
            teams=[
                {
                    "name": "vision",
                    "imageRepositories": [REPO],
                    "priorityClasses": ["normal"],
                    "limits": {"cpu": "6", "storage": {"premium-rwo": "1Ti"}, "claims": 3},
                },
                {"name": "speech", "tpuHostNetwork": True},
            ],
        )
    )


def _in(graph: Graph, type_: str, namespace: str) -> dict[str, dict[str, Any]]:
    return {
        r.inputs["metadata"]["name"]: r.inputs
        for r in graph.of_type(type_)
        if r.inputs["metadata"].get("namespace") == namespace
    }


def test_a_team_namespace_bounds_what_does_not_go_through_kueue(graph: Graph):
    quotas = _in(graph, types.RESOURCE_QUOTA, "vision")
    services = quotas["ai-infra-team-services"]["spec"]
    assert services["hard"] == {"pods": "20", "requests.cpu": "6", "requests.memory": "32Gi"}
    # Only the pods of the services PriorityClass, which the policies give every pod outside
    # Kueue and no Kueue pod: a job's pods are Kueue's to bound.
    assert services["scopeSelector"] == {
        "matchExpressions": [
            {"scopeName": "PriorityClass", "operator": "In", "values": [SERVICES_PRIORITY_CLASS]}
        ]
    }
    objects = quotas["ai-infra-team-objects"]["spec"]["hard"]
    assert objects["services.loadbalancers"] == objects["services.nodeports"] == "0"
    assert objects["premium-rwo.storageclass.storage.k8s.io/requests.storage"] == "1Ti"
    assert objects["premium-rwo.storageclass.storage.k8s.io/persistentvolumeclaims"] == "3"
    assert not any(k.startswith("standard-rwo.") for k in objects)
    assert {objects[k] for k in ("configmaps", "secrets", "count/deployments.apps")} == {"200"}
    (limit_range,) = _in(graph, types.LIMIT_RANGE, "vision").values()
    (item,) = limit_range["spec"]["limits"]
    # A default request, so the quota can count a container that asks none; no default
    # limit, which would cap a TPU job's containers.
    assert item == {"type": "Container", "defaultRequest": {"cpu": "100m", "memory": "128Mi"}}
    (priority,) = graph.of_type(types.PRIORITY_CLASS)
    assert priority.inputs["metadata"]["name"] == SERVICES_PRIORITY_CLASS
    assert priority.inputs["value"] == 0 and priority.inputs["preemptionPolicy"] == "Never"
    assert priority.inputs["globalDefault"] is False


def test_the_namespace_says_what_the_shared_policies_allow_the_team(graph: Graph):
    namespaces = {
        r.inputs["metadata"]["name"]: r.inputs["metadata"] for r in graph.of_type(types.NAMESPACE)
    }
    assert namespaces["vision"]["annotations"] == {
        "ai-infra/priority-classes": ",normal,",
        "ai-infra/storage-classes": ",premium-rwo,",
    }
    assert namespaces["speech"]["annotations"] == {
        "ai-infra/priority-classes": ",low,normal,high,",
        "ai-infra/storage-classes": ",standard-rwo,",
    }


def test_a_teams_own_slices_run_as_an_account_that_reads_its_images_only(graph: Graph):
    pools = {p.inputs["name"]: p.inputs["nodeConfig"] for p in graph.of_type(types.NODE_POOL)}
    own = pools["own-0"]
    assert own["serviceAccount"] == "ai-test-speech-nodes@test-project.iam.gserviceaccount.com"
    assert own["labels"]["ai-infra/dedicated"] == "speech"
    assert own["taints"] == [
        {"key": "ai-infra/dedicated", "value": "speech", "effect": "NO_SCHEDULE"}
    ]
    assert pools["s-0"]["serviceAccount"] == "ai-test-nodes@test-project.iam.gserviceaccount.com"
    assert "taints" not in pools["s-0"]
    reads = {
        (r.inputs["member"].split(":")[1].split("@")[0], r.inputs["repository"].rsplit("/", 1)[1])
        for r in graph.of_type(types.REPOSITORY_IAM_MEMBER)
    }
    assert reads == {
        ("ai-test-nodes", "base"),
        ("ai-test-nodes", "vision"),
        ("ai-test-speech-nodes", "base"),
    }
    roles = {
        r.inputs["role"]
        for r in graph.of_type(types.PROJECT_IAM_MEMBER)
        if r.inputs["member"].startswith("serviceAccount:ai-test-speech-nodes@")
    }
    assert roles == {
        "roles/container.defaultNodeServiceAccount",
        "roles/serviceusage.serviceUsageConsumer",
    }


def test_a_teams_own_slices_are_a_flavor_only_its_queue_lists(graph: Graph):
    queues = {
        r.inputs["metadata"]["name"]: r.inputs["spec"] for r in graph.of_type(types.CLUSTER_QUEUE)
    }

    def flavors(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
        return {f["name"]: f["resources"][0] for g in spec["resourceGroups"] for f in g["flavors"]}

    own = flavors(queues["speech"])["v5p-16-team-speech"]
    assert own == {"name": "google.com/tpu", "nominalQuota": 8, "lendingLimit": 0}
    assert "v5p-16-team-speech" not in flavors(queues["vision"])
    (cohort,) = graph.of_type(types.COHORT)
    assert "v5p-16-team-speech" not in flavors(cohort.inputs["spec"])


BUCKETS = [{"name": "ckpt"}]
CASES: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "teams isolated by NetworkPolicies nothing enforces",
        {"cluster": {"dataplaneV2": False}, "teams": [{"name": "a"}]},
        "ai-infra:cluster.dataplaneV2",
        "nothing enforces",
    ),
    (
        "host networking on shared slices",
        {"tpuSlices": [V5P], "teams": [{"name": "a", "tpuHostNetwork": True}]},
        "ai-infra:teams[0].tpuHostNetwork",
        "set team: a",
    ),
    (
        "a slice owned by a team that does not exist",
        {"tpuSlices": [{**V5P, "team": "ghost"}], "teams": [{"name": "a"}]},
        "ai-infra:tpuSlices[0].team",
        "no team named 'ghost'",
    ),
    (
        "another team's share of a team's own slice",
        {
            "tpuSlices": [{**V5P, "team": "a"}],
            "teams": [{"name": "a"}, {"name": "b", "quota": {"s": 8}}],
        },
        "ai-infra:teams[1].quota.s",
        "team a's own",
    ),
    (
        "part of its own slice",
        {"tpuSlices": [{**V5P, "team": "a"}], "teams": [{"name": "a", "quota": {"s": "50%"}}]},
        "ai-infra:teams[0].quota.s",
        "all 8 chips",
    ),
    (
        "a team name whose node account collides with another team's account",
        {
            "tpuSlices": [{**V5P, "team": "x"}],
            "teams": [{"name": "x"}, {"name": "x-nodes"}],
        },
        "ai-infra:tpuSlices[0].name",
        "already belongs to",
    ),
    (
        "a node account id longer than IAM takes",
        {
            "tpuSlices": [{**V5P, "team": "a-rather-long-team-name"}],
            "teams": [{"name": "a-rather-long-team-name"}],
        },
        "ai-infra:tpuSlices[0].team",
        "6 to 30",
    ),
    (
        "a repository two teams claim",
        {
            "teams": [
                {"name": "a", "imageRepositories": [REPO]},
                {"name": "b", "imageRepositories": [REPO]},
            ]
        },
        "ai-infra:teams[1].imageRepositories[0]",
        "also team a's",
    ),
    (
        "a shared repository a team also claims",
        {
            "cluster": {"imageRepositories": [REPO]},
            "teams": [{"name": "a", "imageRepositories": [REPO]}],
        },
        "ai-infra:teams[0].imageRepositories[0]",
        "list it in one place",
    ),
    (
        "a repository written with a port",
        {"teams": [{"name": "a", "imageRepositories": ["us-docker.pkg.dev:443/p-roject/r"]}]},
        "ai-infra:teams[0].imageRepositories[0]",
        "LOCATION-docker.pkg.dev/PROJECT/REPOSITORY",
    ),
    (
        "a repository in capitals",
        {"teams": [{"name": "a", "imageRepositories": ["US-docker.pkg.dev/project-x/r"]}]},
        "ai-infra:teams[0].imageRepositories[0]",
        "LOCATION-docker.pkg.dev/PROJECT/REPOSITORY",
    ),
    (
        "an image path where a repository goes",
        {"teams": [{"name": "a", "imageRepositories": [f"{REPO}/img"]}]},
        "ai-infra:teams[0].imageRepositories[0]",
        "LOCATION-docker.pkg.dev/PROJECT/REPOSITORY",
    ),
    (
        "a priority class the stack has not",
        {"teams": [{"name": "a", "priorityClasses": ["urgent"]}]},
        "ai-infra:teams[0].priorityClasses[0]",
        "not one of kueue.priorityClasses",
    ),
    (
        "a system PriorityClass as a team's priority",
        {"teams": [{"name": "a", "priorityClasses": ["system-node-critical"]}]},
        "ai-infra:teams[0].priorityClasses[0]",
        "not one of kueue.priorityClasses",
    ),
    (
        "claims of a Filestore class",
        {"teams": [{"name": "a", "limits": {"storage": {"standard-rwx": "1Ti"}}}]},
        "ai-infra:teams[0].limits.storage.standard-rwx",
        "",
    ),
    (
        "a negative pod count",
        {"teams": [{"name": "a", "limits": {"pods": -1}}]},
        "ai-infra:teams[0].limits.pods",
        "must be at least 0",
    ),
    (
        "a CPU limit that is no quantity",
        {"teams": [{"name": "a", "limits": {"cpu": "lots"}}]},
        "ai-infra:teams[0].limits.cpu",
        "Kubernetes quantity",
    ),
    (
        "two teams writing one bucket",
        {
            "buckets": BUCKETS,
            "teams": [
                {"name": "a", "buckets": {"ckpt": "write"}},
                {"name": "b", "buckets": {"ckpt": "admin"}},
            ],
        },
        "ai-infra:teams[1].buckets.ckpt",
        "name its owner",
    ),
    (
        "writing another team's bucket",
        {
            "buckets": [{"name": "ckpt", "owner": "a"}],
            "teams": [{"name": "a"}, {"name": "b", "buckets": {"ckpt": "write"}}],
        },
        "ai-infra:teams[1].buckets.ckpt",
        "team a's bucket",
    ),
    (
        "a bucket owned by a team that does not exist",
        {"buckets": [{"name": "ckpt", "owner": "ghost"}], "teams": [{"name": "a"}]},
        "ai-infra:buckets[0].owner",
        "no team named 'ghost'",
    ),
    (
        "a second way to write another team's bucket: a storage volume",
        {
            "buckets": [{"name": "ckpt", "owner": "a"}],
            "storage": {"volumes": [{"name": "v", "bucket": "ckpt", "teams": {"b": "write"}}]},
            "teams": [{"name": "a"}, {"name": "b"}],
        },
        "ai-infra:storage.volumes[0].teams.b",
        "team a's bucket",
    ),
    (
        "a team's bucket and a volume of it owned by another team",
        {
            "buckets": [{"name": "ckpt", "owner": "a"}],
            "storage": {
                "volumes": [{"name": "v", "bucket": "ckpt", "owner": "b", "teams": {"b": "write"}}]
            },
            "teams": [{"name": "a"}, {"name": "b"}],
        },
        "ai-infra:buckets[0].owner",
        "name one owner",
    ),
]


@pytest.mark.parametrize(("case", "overrides", "path", "fix"), CASES, ids=[c[0] for c in CASES])
def test_an_opt_in_that_reopens_a_path_is_refused_at_its_path(case, overrides, path, fix):
    graph, error = record_program(with_config(**overrides))
    assert isinstance(error, ConfigError), f"{case}: accepted"
    found = dict(error.rendered)
    assert path in found, f"{case}: {found}"
    assert fix in found[path], f"{case}: {found[path]}"
    assert graph.resources == [], [r.urn for r in graph]


@pytest.mark.parametrize(
    "overrides",
    [
        {
            "buckets": [{"name": "ckpt", "sharedWrite": True}],
            "teams": [
                {"name": "a", "buckets": {"ckpt": "write"}},
                {"name": "b", "buckets": {"ckpt": "write"}},
            ],
        },
        {
            "buckets": [{"name": "ckpt", "owner": "a"}],
            "teams": [
                {"name": "a", "buckets": {"ckpt": "admin"}},
                {"name": "b", "buckets": {"ckpt": "read"}},
            ],
        },
    ],
    ids=["said shared", "one owner writes, the other reads"],
)
def test_a_bucket_shared_as_said_is_accepted(overrides):
    graph, error = record_program(with_config(**overrides))
    assert error is None, error
    assert graph.resources


def test_repeats_are_refused_at_each_later_listing_only():
    base = "us-docker.pkg.dev/test-project/base"
    raw = with_config(
        cluster={"imageRepositories": [base, REPO, base, base]},
        kueue={"priorityClasses": {"low": 100, "normal": 200}},
        teams=[
            {"name": "a", "imageRepositories": [base], "priorityClasses": ["low", "x", "x", "low"]}
        ],
    )
    with pytest.raises(ConfigError) as error:
        parse(raw, "test")
    found = {k: v for k, v in error.value.rendered if "imageRepositories" in k or "priority" in k}
    assert found == {
        "ai-infra:cluster.imageRepositories[2]": f"'{base}' is listed twice",
        "ai-infra:cluster.imageRepositories[3]": f"'{base}' is listed twice",
        "ai-infra:teams[0].imageRepositories[0]": f"'{base}' is in cluster.imageRepositories, "
        "which every team may run from; list it in one place",
        "ai-infra:teams[0].priorityClasses[1]": "'x' is not one of kueue.priorityClasses (low, "
        "normal); add it there or fix the name",
        "ai-infra:teams[0].priorityClasses[2]": "'x' is not one of kueue.priorityClasses (low, "
        "normal); add it there or fix the name",
        "ai-infra:teams[0].priorityClasses[3]": "'low' is listed twice",
    }


def test_a_share_of_a_teams_own_slice_names_that_slices_chips():
    raw = with_config(
        **{"gcp:region": "us-central2", "gcp:zone": "us-central2-b"},
        tpuSlices=[
            {"name": "own", "accelerator": "v4-8", "team": "a"},
            {"name": "big", "accelerator": "v4-16", "team": "a"},
        ],
        teams=[{"name": "a", "quota": {"own": 2, "big": 8}}],
    )
    with pytest.raises(ConfigError) as error:
        parse(raw, "test")
    found = dict(error.value.rendered)
    assert "all 4 chips of it" in found["ai-infra:teams[0].quota.own"]
    assert "ai-infra:teams[0].quota.big" not in found, found
