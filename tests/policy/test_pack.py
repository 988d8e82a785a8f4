"""The CrossGuard pack's policies, run the way `pulumi preview --policy-pack policy` runs them
(Pulumi's own StackValidationArgs and PolicyResource types), over every shipped stack and docs
example: the mandatory ones pass, and a seeded violation of each fails."""

from __future__ import annotations

import copy
from collections.abc import Callable
from functools import cache
from typing import Any

import pytest
from pulumi_policy import (
    EnforcementLevel,
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, unknown_checking_proxy

from graph.engine import Graph, list_stacks, load_stack_config
from policy.pack import POLICIES
from policy.rules import RULES
from tests.conftest import build_graph
from tests.slurm.test_config import stack as slurm_stack
from tests.test_docs import examples

ALL = [*list_stacks(), *sorted(examples())]


@cache
def graph_of(name: str) -> Graph:
    if name in list_stacks():
        return build_graph(load_stack_config(name), stack=name)
    return build_graph(examples()[name].config, stack=name)


def policy_resources(graph: Graph) -> list[PolicyResource]:
    return [
        PolicyResource(
            resource_type=r.type,
            props={**r.outputs, **r.inputs},
            urn=r.urn,
            name=r.name,
            opts=PolicyResourceOptions(
                protect=r.protect,
                ignore_changes=list(r.ignore_changes),
                delete_before_replace=r.delete_before_replace,
                aliases=list(r.aliases),
                custom_timeouts=PolicyCustomTimeouts(0, 0, 0),
                additional_secret_outputs=[],
            ),
            provider=None,
            parent=None,
            dependencies=[],
            property_dependencies={},
        )
        for r in graph.resources_to_apply
    ]


def run(resources: list[PolicyResource]) -> dict[str, list[tuple[str, str | None]]]:
    """Each policy's reported violations, as the engine would collect them."""
    found: dict[str, list[tuple[str, str | None]]] = {}
    for policy in POLICIES:
        assert isinstance(policy, StackValidationPolicy)
        reported: list[tuple[str, str | None]] = []
        policy.validate(
            StackValidationArgs(resources),
            lambda message, urn=None, sink=reported: sink.append((message, urn)),
        )
        found[policy.name] = reported
    return found


MANDATORY = {p.name for p in POLICIES if p.enforcement_level == EnforcementLevel.MANDATORY}


def test_the_pack_holds_every_rule_at_its_level():
    assert [p.name for p in POLICIES] == [r.name for r in RULES]
    assert "images-pinned-by-digest" not in MANDATORY
    assert {"no-internet-ingress", "protected-in-prod", "no-basic-roles"} <= MANDATORY


@pytest.mark.parametrize("name", ALL)
def test_every_stack_and_example_passes_the_mandatory_policies(name: str):
    found = run(policy_resources(graph_of(name)))
    failed = {p: v for p, v in found.items() if v and p in MANDATORY}
    assert failed == {}, name


def test_teams_beside_a_filestore_share_pass_too():
    # The share's range is an output, absent from a new share's properties: the team pods'
    # egress policy was matched against '' and the pack stopped the preview with a ValueError.
    config = slurm_stack(home={"filestore": True})
    config["ai-infra:tpuSlices"] = [{"name": "s", "accelerator": "v4-8"}]
    config["ai-infra:teams"] = [{"name": "a"}]
    resources = policy_resources(build_graph(config))
    assert any(r.resource_type == "gcp:filestore/instance:Instance" for r in resources)
    found = run(resources)
    assert {p: v for p, v in found.items() if v and p in MANDATORY} == {}


def test_values_unknown_in_a_preview_leave_the_policies_running():
    # The engine hands each resource's properties through a proxy that raises on reading a
    # value it cannot know yet (a new account's email, a new VPC's self link, a new share's
    # range): every policy still runs, and still catches a violation.
    unknown = {
        "gcp:container/nodePool:NodePool": ("nodeConfig", "serviceAccount"),
        "gcp:compute/subnetwork:Subnetwork": ("network",),
        "gcp:compute/firewall:Firewall": ("network",),
    }
    resources = policy_resources(graph_of("dev"))
    raw = {}
    for r in resources:
        raw[r.urn] = props = copy.deepcopy(dict(r.props))
        path = unknown.get(r.resource_type)
        if path:
            node = props
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = UNKNOWN_STRING_VALUE
        r.props = unknown_checking_proxy(props)
    assert {p: v for p, v in run(resources).items() if v and p in MANDATORY} == {}
    firewall = next(r for r in resources if r.resource_type == "gcp:compute/firewall:Firewall")
    _open(raw[firewall.urn])
    firewall.props = unknown_checking_proxy(raw[firewall.urn])
    assert run(resources)["no-internet-ingress"]


def _edit(
    type_: str, change: Callable[[dict[str, Any]], None], graph: Graph
) -> list[PolicyResource]:
    resources = policy_resources(graph)
    for r in resources:
        if r.resource_type == type_:
            props = copy.deepcopy(dict(r.props))
            change(props)
            r.props = props
            return resources
    raise AssertionError(f"no {type_}")


def _set(path: list[str], value: Any) -> Callable[[dict[str, Any]], None]:
    def change(props: dict[str, Any]) -> None:
        node = props
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value

    return change


def _grant(props: dict[str, Any]) -> None:
    props["role"] = "roles/editor"


def _open(props: dict[str, Any]) -> None:
    props["sourceRanges"] = ["0.0.0.0/0"]
    props["allows"] = [{"protocol": "tcp", "ports": ["22"]}]


SEEDED: list[tuple[str, str, Callable[[dict[str, Any]], None], str]] = [
    ("no-basic-roles", "gcp:projects/iAMMember:IAMMember", _grant, "dev"),
    (
        "buckets-are-private",
        "gcp:storage/bucket:Bucket",
        _set(["publicAccessPrevention"], "inherited"),
        "dev",
    ),
    (
        "private-nodes",
        "gcp:container/cluster:Cluster",
        _set(["privateClusterConfig", "enablePrivateNodes"], False),
        "dev",
    ),
    (
        "metadata-server-everywhere",
        "gcp:container/nodePool:NodePool",
        _set(["nodeConfig", "workloadMetadataConfig", "mode"], "GCE_METADATA"),
        "dev",
    ),
    (
        "no-default-compute-account",
        "gcp:container/nodePool:NodePool",
        _set(["nodeConfig", "serviceAccount"], "123-compute@developer.gserviceaccount.com"),
        "dev",
    ),
    ("no-internet-ingress", "gcp:compute/firewall:Firewall", _open, "dev"),
    (
        "private-nodes",
        "gcp:container/nodePool:NodePool",
        _set(["networkConfig", "enablePrivateNodes"], False),
        "dev",
    ),
    (
        "no-default-compute-account",
        "gcp:container/nodePool:NodePool",
        _set(["nodeConfig", "serviceAccount"], "default"),
        "dev",
    ),
    (
        "no-default-compute-account",
        "gcp:container/cluster:Cluster",
        _set(["nodeConfig", "serviceAccount"], " Default "),
        "dev",
    ),
    (
        "team-namespaces-enforce-pod-security",
        "kubernetes:core/v1:Namespace",
        _set(
            ["metadata", "labels"],
            {"ai-infra/team": "x", "pod-security.kubernetes.io/enforce": "privileged"},
        ),
        "dev",
    ),
    (
        "protected-in-prod",
        "gcp:container/cluster:Cluster",
        _set(["deletionProtection"], False),
        "prod",
    ),
    (
        "network-policies-enforced",
        "gcp:container/cluster:Cluster",
        _set(["datapathProvider"], "LEGACY_DATAPATH"),
        "dev",
    ),
    (
        "team-namespaces-bounded",
        "kubernetes:core/v1:ResourceQuota",
        _set(["spec", "scopeSelector"], None),
        "dev",
    ),
]


@pytest.mark.parametrize(("rule", "type_", "change", "stack"), SEEDED, ids=[s[0] for s in SEEDED])
def test_a_seeded_violation_fails_its_policy(rule, type_, change, stack):
    found = run(_edit(type_, change, graph_of(stack)))
    assert found[rule], rule
    assert rule in MANDATORY


@pytest.mark.parametrize(
    "internet",
    [
        ["0.0.0.0/0"],
        ["10.1.2.3/0"],
        ["::/0"],
        ["0.0.0.0/1", "128.0.0.0/1"],
        ["2000::/4", "3000::/4"],
    ],
)
def test_the_whole_internet_fails_however_it_is_written(internet: list[str]):
    def change(props: dict[str, Any]) -> None:
        _open(props)
        props["sourceRanges"] = ["10.0.0.0/8", *internet]

    found = run(_edit("gcp:compute/firewall:Firewall", change, graph_of("dev")))
    assert found["no-internet-ingress"], internet


def test_an_ingress_rule_without_any_source_admits_the_internet():
    # The Compute API reads an ingress rule with no source range, tag or account as 0.0.0.0/0.
    def change(props: dict[str, Any]) -> None:
        _open(props)
        for key in ("sourceRanges", "sourceTags", "sourceServiceAccounts"):
            props.pop(key, None)

    found = run(_edit("gcp:compute/firewall:Firewall", change, graph_of("dev")))
    assert found["no-internet-ingress"]
    # A source tag alone admits no address range; a disabled rule admits nothing.
    tagged = _edit("gcp:compute/firewall:Firewall", change, graph_of("dev"))
    rule = next(r for r in tagged if r.resource_type == "gcp:compute/firewall:Firewall")
    rule.props = {**rule.props, "sourceTags": ["x"]}
    assert run(tagged)["no-internet-ingress"] == []
    rule.props = {k: v for k, v in rule.props.items() if k != "sourceTags"} | {"disabled": True}
    assert run(tagged)["no-internet-ingress"] == []


def test_a_quota_that_admits_a_node_port_leaves_the_namespace_unbounded():
    def open_ports(props: dict[str, Any]) -> None:
        if "services.nodeports" in props["spec"]["hard"]:
            props["spec"]["hard"]["services.nodeports"] = "1"

    resources = policy_resources(graph_of("dev"))
    for r in resources:
        if r.resource_type == "kubernetes:core/v1:ResourceQuota":
            props = copy.deepcopy(dict(r.props))
            open_ports(props)
            r.props = props
    found = run(resources)["team-namespaces-bounded"]
    assert {str(urn).rsplit("::", 1)[1] for _, urn in found} == {
        "team-research-namespace",
        "team-applied-namespace",
    }


def test_an_inline_node_pool_that_turns_private_nodes_off_fails():
    def change(props: dict[str, Any]) -> None:
        props["nodePools"] = [{"name": "x", "networkConfig": {"enablePrivateNodes": False}}]

    found = run(_edit("gcp:container/cluster:Cluster", change, graph_of("dev")))
    assert found["private-nodes"]


def test_an_authoritative_project_grant_fails():
    resources = policy_resources(graph_of("dev"))
    grant = next(r for r in resources if r.resource_type == "gcp:projects/iAMMember:IAMMember")
    grant.resource_type = "gcp:projects/iAMBinding:IAMBinding"
    assert run(resources)["no-authoritative-project-iam"]


def _opening(resources: list[PolicyResource]) -> PolicyResource:
    return next(
        r
        for r in resources
        if r.resource_type == "gcp:compute/firewall:Firewall"
        and str(r.props.get("name", "")).endswith("allow-jax")
    )


def test_what_a_rule_says_of_itself_opens_nothing():
    # The opening's description changes nothing: the rule names the pods range and its port.
    resources = policy_resources(graph_of("network-allow"))
    opening = _opening(resources)
    opening.props = {**opening.props, "description": "a rule someone added"}
    assert run(resources)["pods-reach-systems-only-where-opted-in"] == []
    # A rule claiming to be an opening, admitting a range that merely holds the pods range,
    # or every port of a protocol, opened nothing on purpose.
    for change in (
        {"sourceRanges": ["10.0.0.0/8", "192.168.0.0/16"]},
        {"allows": [{"protocol": "tcp"}]},
        {"allows": [{"protocol": "all"}]},
    ):
        resources = policy_resources(graph_of("network-allow"))
        opening = _opening(resources)
        opening.props = {**opening.props, "description": "network.allow jax: tcp:8476", **change}
        found = run(resources)["pods-reach-systems-only-where-opted-in"]
        assert found and "TPU VMs exp" in found[0][0], change


def test_an_unprotected_stateful_resource_in_prod_fails():
    resources = policy_resources(graph_of("prod"))
    bucket = next(r for r in resources if r.resource_type == "gcp:storage/bucket:Bucket")
    bucket.opts.protect = False
    assert any(urn == bucket.urn for _, urn in run(resources)["protected-in-prod"])


def test_a_mutable_image_is_advisory():
    def tag(props: dict[str, Any]) -> None:
        props["spec"]["template"]["spec"]["containers"][0]["image"] = "example.com/p:latest"

    assert run(policy_resources(graph_of("provisioner")))["images-pinned-by-digest"] == []
    found = run(_edit("kubernetes:apps/v1:Deployment", tag, graph_of("provisioner")))
    assert "mutable tag" in found["images-pinned-by-digest"][0][0]
    assert "images-pinned-by-digest" not in MANDATORY
