"""The additional node networks are not one flat network: each group of hosts that may talk
over them (the slices of one Kueue flavor, a team's own slices, the TPU provisioner's pools)
has a rule admitting it from itself only, and its node pools carry its tag. Who reaches whom
is evaluated from the registered rules and pools, as the VPC firewall does."""

from __future__ import annotations

from typing import Any

from components.gke.config import dcn_group_id
from graph.engine import Graph, load_stack_config
from tests.conftest import build_graph, with_config

FIREWALL = "gcp:compute/firewall:Firewall"
NODE_POOL = "gcp:container/nodePool:NodePool"
DCN = {
    "additionalNodeNetworks": [
        {"name": "dcn-1", "subnetCidr": "10.200.0.0/22"},
        {"name": "dcn-2", "subnetCidr": "10.204.0.0/22"},
    ]
}


def _stack(**overrides: Any) -> dict[str, Any]:
    return with_config(
        **{"gcp:region": "us-east5", "gcp:zone": "us-east5-b", "network": DCN, **overrides}
    )


def reached(graph: Graph, vpc: str) -> dict[str, set[str]]:
    """Node pool -> the node pools whose hosts its hosts reach on `vpc`, by the ingress rules
    registered on that VPC (sources and targets by tag; the VPC's implied rule denies the
    rest)."""
    pools = {
        p.inputs["name"]: set(p.inputs["nodeConfig"]["tags"])
        for p in graph.of_type(NODE_POOL)
        if any(
            n["network"] == vpc
            for n in (p.inputs.get("networkConfig") or {}).get("additionalNodeNetworkConfigs", [])
        )
    }
    rules = [r.inputs for r in graph.of_type(FIREWALL) if r.inputs["network"] == vpc]
    for rule in rules:
        # Every rule names its sources by tag: no range, so no address outside its group.
        assert "sourceRanges" not in rule, rule
        assert rule["sourceTags"] and rule["targetTags"], rule
    return {
        source: {
            target
            for target, target_tags in pools.items()
            if any(
                set(r["sourceTags"]) & tags and set(r["targetTags"]) & target_tags for r in rules
            )
        }
        for source, tags in pools.items()
    }


def test_each_flavor_talks_to_itself_only_on_each_network():
    graph = build_graph(
        _stack(
            tpuSlices=[
                {"name": "a", "accelerator": "v6e-16", "count": 2},
                {"name": "b", "accelerator": "v6e-16"},
                {"name": "c", "accelerator": "v6e-32"},
                {"name": "own", "accelerator": "v6e-16", "team": "vision"},
                {"name": "single", "accelerator": "v6e-16", "additionalNodeNetworks": ["dcn-2"]},
            ],
            teams=[{"name": "vision"}, {"name": "speech"}],
        )
    )
    on_dcn1 = reached(graph, "ai-test-dcn-1-vpc")
    shared = {"a-0", "a-1", "b-0"}
    for pool in shared:
        # One flavor: a multislice job may span the slices of both entries.
        assert on_dcn1[pool] == shared, pool
    assert on_dcn1["c-0"] == {"c-0"}
    # A team's own slices are a flavor of their own: no other team's job reaches their NICs.
    assert on_dcn1["own-0"] == {"own-0"}
    assert "single-0" not in on_dcn1
    assert reached(graph, "ai-test-dcn-2-vpc")["single-0"] == {
        "a-0",
        "a-1",
        "b-0",
        "single-0",
    }
    names = {r.inputs["name"] for r in graph.of_type(FIREWALL)}
    assert "ai-test-dcn-1-dcn-v6e-16" in names
    assert f"ai-test-dcn-1-dcn-{dcn_group_id('v6e-16-team-vision')}" in names
    assert all(len(n) <= 63 for n in names)


def test_group_ids_are_short_stable_and_distinct():
    long = ["v6e-256-flex-start-team-finetune", "v6e-256-flex-start-team-finetunf"]
    ids = [dcn_group_id(n) for n in long]
    assert ids[0] != ids[1] and all(len(i) <= 17 for i in ids)
    assert ids == [dcn_group_id(n) for n in long]
    assert dcn_group_id("v6e-16") == "v6e-16"


def test_prod_keeps_its_v6e_slices_apart_from_its_flex_start_ones():
    graph = build_graph(load_stack_config("prod"), stack="prod")
    for vpc in ("ai-prod-dcn-1-vpc", "ai-prod-dcn-2-vpc"):
        found = reached(graph, vpc)
        tune = {p for p in found if p.startswith("v6e-tune")}
        flex = {p for p in found if p.startswith("v6e-flex")}
        assert tune and flex
        assert all(found[p] == tune for p in tune)
        assert all(found[p] == flex for p in flex)


def test_the_provisioners_pools_are_a_group_of_their_own():
    digest = "sha256:" + "ab" * 32
    graph = build_graph(
        _stack(
            cluster={"releaseChannel": "NONE"},
            tpuProvisioner={
                "enabled": True,
                "image": f"us-docker.pkg.dev/test-project/images/tpu-provisioner@{digest}",
                "quota": {"v6e-16": 2},
            },
            tpuSlices=[{"name": "a", "accelerator": "v6e-16"}],
            teams=[{"name": "vision"}],
        )
    )
    tag = "ai-test-dcn-provisioned"
    config = graph.named("tpu-provisioner-config").inputs["data"]
    assert tag in config["GCP_NODE_TAGS"].split(",")
    rules = [r.inputs for r in graph.of_type(FIREWALL) if r.inputs.get("sourceTags") == [tag]]
    assert {r["network"] for r in rules} == {"ai-test-dcn-1-vpc", "ai-test-dcn-2-vpc"}
    assert all(r["targetTags"] == [tag] for r in rules)
    (pool,) = [p for p in graph.of_type(NODE_POOL) if p.inputs["name"] == "a-0"]
    assert tag not in pool.inputs["nodeConfig"]["tags"]
