"""Who may log in to a GPU cluster: each `logins` member's grants reach that cluster's VMs, its
group and its VM account, and nothing project-wide but IAP to port 22; bad members are refused
at their path before anything registers."""

from __future__ import annotations

from typing import Any

import pytest

from graph.engine import record_program
from plan.details import details
from stacks.loading import parse
from stacks.messages import ConfigError
from tests.conftest import build_graph, with_config

PROJECT_MEMBER = "gcp:projects/iAMMember:IAMMember"
ACCOUNT_MEMBER = "gcp:serviceaccount/iAMMember:IAMMember"
CUSTOM_ROLE = "gcp:projects/iAMCustomRole:IAMCustomRole"
VMS = "projects/test-project/zones/us-east5-a/instances/ai-test-train-"
GROUP = "projects/test-project/zones/us-east5-a/instanceGroupManagers/ai-test-train"
ANY_PERSON = "user:, group: or serviceAccount:"
LOGINS = [{"member": "user:alice@example.com", "sudo": True}, {"member": "group:ml@example.com"}]


def login_grants(graph, member: str):
    return {
        r.inputs["role"]: r
        for r in graph
        if r.type in (PROJECT_MEMBER, ACCOUNT_MEMBER)
        and r.inputs.get("member") == member
        and "-login-" in r.name
    }


def test_each_member_reaches_this_clusters_vms_and_nothing_else():
    graph = build_graph(with_config(gpuClusters=[{"name": "train", "logins": LOGINS}]))
    alice = login_grants(graph, "user:alice@example.com")
    team = login_grants(graph, "group:ml@example.com")
    assert set(alice) == {
        "roles/compute.osAdminLogin",
        "roles/iap.tunnelResourceAccessor",
        "projects/test-project/roles/ai_test_train_gpu_login",
        "roles/iam.serviceAccountUser",
    }
    assert "roles/compute.osLogin" in team and "roles/compute.osAdminLogin" not in team

    login = alice["roles/compute.osAdminLogin"]
    assert login.inputs["condition"]["expression"] == (
        f'resource.type == "compute.googleapis.com/Instance" && resource.name.startsWith("{VMS}")'
    ), login.urn
    tunnel = alice["roles/iap.tunnelResourceAccessor"]
    assert tunnel.inputs["condition"]["expression"] == "destination.port == 22", tunnel.urn
    viewer = alice["projects/test-project/roles/ai_test_train_gpu_login"]
    expression = viewer.inputs["condition"]["expression"]
    assert f'resource.name.startsWith("{VMS}")' in expression, viewer.urn
    assert f'resource.name == "{GROUP}"' in expression, viewer.urn
    (role,) = [r for r in graph.of_type(CUSTOM_ROLE) if r.inputs["roleId"].endswith("_login")]
    # Read-only, and only what gcloud compute ssh and python -m hosts read.
    assert sorted(role.inputs["permissions"]) == [
        "compute.instanceGroupManagers.get",
        "compute.instanceGroupManagers.list",
        "compute.instances.get",
        "compute.instances.getGuestAttributes",
        "compute.projects.get",
    ], role.urn
    account = alice["roles/iam.serviceAccountUser"]
    assert account.type == ACCOUNT_MEMBER
    assert account.inputs["serviceAccountId"] == (
        "projects/test-project/serviceAccounts/ai-test-train-vm@test-project.iam.gserviceaccount.com"
    ), account.urn
    # Every project grant of a login carries a condition: none is project-wide.
    for grant in [*alice.values(), *team.values()]:
        if grant.type == PROJECT_MEMBER:
            assert grant.inputs.get("condition"), grant.urn
    # The plan shows where each grant reaches.
    assert "only: VMs of GPU cluster ai-test-train" in details(login), details(login)


def test_a_cluster_without_logins_grants_nobody():
    graph = build_graph(with_config(gpuClusters=[{"name": "train"}]))
    assert not [r.urn for r in graph if "-login" in r.name]


def _problems(entries: list[dict[str, Any]]) -> dict[str, str]:
    config = with_config(gpuClusters=entries)
    with pytest.raises(ConfigError) as error:
        parse(config, "test")
    graph, raised = record_program(config, stack="test")
    assert isinstance(raised, ConfigError)
    assert len(graph) == 0, [r.urn for r in graph]
    return dict(error.value.rendered)


@pytest.mark.parametrize(
    ("logins", "path", "fix"),
    [
        (
            [{"member": "domain:example.com"}],
            "logins[0].member",
            ANY_PERSON,
        ),
        ([{"member": "allUsers"}], "logins[0].member", "public"),
        ([{"member": "user:alice"}], "logins[0].member", "not an iam member"),
        ([{"member": "alice@example.com"}], "logins[0].member", "not an iam member"),
        (
            [
                {
                    "member": "principal://iam.googleapis.com/locations/global/workforcePools/p/subject/a"
                }
            ],
            "logins[0].member",
            ANY_PERSON,
        ),
        ([{"member": "user:a@example.com", "sudo": "true"}], "logins[0].sudo", "without quotes"),
        ([{"member": "user:a@example.com", "root": True}], "logins[0].root", ""),
        (
            [{"member": "user:a@example.com"}, {"member": "user:A@example.com", "sudo": True}],
            "logins[1].member",
            "already listed at logins[0]",
        ),
    ],
)
def test_bad_logins_are_refused_at_their_path(logins, path, fix):
    rendered = _problems([{"name": "train", "logins": logins}])
    key = f"ai-infra:gpuClusters[0].{path}"
    assert key in rendered, rendered
    assert fix.lower() in rendered[key].lower(), rendered[key]


def test_logins_that_would_reach_another_clusters_vms_are_refused():
    rendered = _problems(
        [{"name": "train", "logins": LOGINS[:1]}, {"name": "train-big"}],
    )
    message = rendered["ai-infra:gpuClusters[0].logins"]
    assert "train-big" in message and "rename" in message, message


SLURM = {
    "clusterName": "ai",
    "partitions": [{"name": "cpu", "nodesets": ["cpu"], "default": True}],
    "cpuNodesets": [{"name": "cpu", "machineType": "n2-standard-4", "nodeCountDynamicMax": 1}],
}


@pytest.mark.parametrize(
    ("overrides", "owner"),
    [
        # Slurm names its VMs <clusterName>-*: ai-test-x-* would be ai-* ones too.
        ({"slurm": SLURM}, "the Slurm cluster ai's VMs"),
        ({"prefix": "gke"}, "GKE's nodes"),
        ({"prefix": "t1v", "gpuClusters": [{"name": "n"}]}, "TPU VM hosts"),
    ],
)
def test_a_cluster_whose_vm_names_nest_with_another_systems_is_refused(overrides, owner):
    config = with_config(**{"gpuClusters": [{"name": "x", "logins": LOGINS[:1]}], **overrides})
    with pytest.raises(ConfigError) as error:
        parse(config, "test")
    rendered = dict(error.value.rendered)
    message = rendered.get("ai-infra:gpuClusters[0].name", "")
    assert owner in message and "choose another name" in message, rendered


def test_every_cluster_a_login_reaches_is_named_in_list_order_and_only_in_its_zone():
    entries = [
        {"name": "t", "logins": LOGINS[:1]},
        {"name": "t-b", "logins": LOGINS[:1]},
        {"name": "tx"},  # not t-*
        {"name": "t-a", "zone": "us-east5-b"},  # another zone: its VMs are out of reach
        {"name": "t-a-1"},
        {"name": "t-b-x"},
    ]
    with pytest.raises(ConfigError) as error:
        parse(with_config(gpuClusters=entries), "test")
    reached = [
        (p.path[1], p.message.split("gpuClusters ")[1].split("'s")[0])
        for p in error.value.problems
        if p.path[-1:] == ("logins",)
    ]
    assert reached == [(0, "t-b"), (0, "t-a-1"), (0, "t-b-x"), (1, "t-b-x")]
