"""The network component as the program registers it, and how it sizes the pods range."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from components import network
from components.network import (
    DEFAULT_MTU,
    IAP_TCP_FORWARDING_RANGE,
    JUMBO_MTU,
    MIN_MTU,
    NetworkConfig,
    mtu_change_notice,
    node_network_capacity_problems,
    overlap_problems,
    pods_per_node_prefix,
    port_allows,
)


def test_subnet_ranges_nat_and_private_google_access(build):
    graph = build(
        network={
            "subnetCidr": "10.1.0.0/20",
            "podsCidr": "10.8.0.0/14",
            "servicesCidr": "10.12.0.0/20",
        }
    )
    subnet = graph.named("network-subnet")
    assert subnet.inputs["ipCidrRange"] == "10.1.0.0/20"
    assert subnet.inputs["privateIpGoogleAccess"] is True
    assert {r["rangeName"]: r["ipCidrRange"] for r in subnet.inputs["secondaryIpRanges"]} == {
        "pods": "10.8.0.0/14",
        "services": "10.12.0.0/20",
    }
    vpc = graph.named("network-vpc")
    assert vpc.inputs["autoCreateSubnetworks"] is False
    nat = graph.named("network-nat")
    assert nat.inputs["router"] == "ai-test-router"
    assert nat.inputs["sourceSubnetworkIpRangesToNat"] == "LIST_OF_SUBNETWORKS"
    assert subnet.urn in nat.dependencies


def test_firewall_admits_internal_iap_and_control_plane_webhooks(build):
    graph = build(network={"masterCidr": "172.16.8.0/28"})
    webhooks = graph.named("network-allow-webhooks").inputs
    assert webhooks["sourceRanges"] == ["172.16.8.0/28"]
    assert webhooks["allows"] == [{"protocol": "tcp", "ports": ["443", "8082", "8443", "9443"]}]
    iap = graph.named("network-allow-iap-ssh").inputs
    assert iap["sourceRanges"] == [IAP_TCP_FORWARDING_RANGE] == ["35.235.240.0/20"]
    assert iap["allows"] == [{"protocol": "tcp", "ports": ["22"]}]
    internal = graph.named("network-allow-internal").inputs
    # GKE nodes and pods reach GKE nodes; the subnet as a whole (other systems) does not.
    assert internal["sourceRanges"] == ["192.168.64.0/20"]
    assert internal["sourceTags"] == internal["targetTags"] == ["ai-test-gke-node"]
    assert webhooks["targetTags"] == ["ai-test-gke-node"]
    for rule in ("internal", "iap-ssh", "webhooks"):
        assert graph.named(f"network-allow-{rule}").inputs["direction"] == "INGRESS"


def test_existing_vpc_is_reused_not_created(build):
    graph = build(network={"existingVpc": "shared-ml"})
    assert not graph.of_type("gcp:compute/network:Network")
    subnet = graph.named("network-subnet")
    assert subnet.inputs["network"] == "projects/test-project/global/networks/shared-ml"
    assert graph.named("network-allow-internal").inputs["network"] == "shared-ml"
    cluster = graph.named("gke-cluster")
    assert cluster.inputs["network"] == "projects/test-project/global/networks/shared-ml"


def test_pods_per_node_block_size():
    assert pods_per_node_prefix(110) == 24
    assert pods_per_node_prefix(32) == 26
    assert pods_per_node_prefix(8) == 28
    assert pods_per_node_prefix(256) == 23


# MTU and additional node networks.

DCN = [{"name": "dcn-1", "subnetCidr": "10.200.0.0/24"}]


def network_problems(**fields):
    return {
        (".".join(str(p) for p in problem.path)): problem.message
        for problem in network.problems(NetworkConfig.model_validate(fields))
    }


def test_the_vpc_is_jumbo_by_default_and_an_explicit_mtu_is_honoured(build):
    assert build().named("network-vpc").inputs["mtu"] == JUMBO_MTU == 8896
    for mtu in (MIN_MTU, DEFAULT_MTU, 1500, JUMBO_MTU):
        graph = build(network={"mtu": mtu, "additionalNodeNetworks": DCN})
        assert graph.named("network-vpc").inputs["mtu"] == mtu
        assert graph.named("network-dcn-1-vpc").inputs["mtu"] == mtu


def test_an_mtu_the_vpc_api_refuses_is_refused_with_the_range_and_a_fix():
    for mtu in (MIN_MTU - 1, JUMBO_MTU + 1, 9000, 0, -1500):
        with pytest.raises(ValidationError) as raised:
            NetworkConfig.model_validate({"mtu": mtu})
        message = str(raised.value)
        assert "1300 to 8896" in message and "use 8896" in message, message
    for not_a_number in ("8896", 8896.0, True):
        with pytest.raises(ValidationError):
            NetworkConfig.model_validate({"mtu": not_a_number})


def test_an_existing_vpc_keeps_its_own_mtu_and_refuses_one_from_here(build):
    graph = build(network={"existingVpc": "shared-ml", "additionalNodeNetworks": DCN})
    assert [r.name for r in graph.of_type("gcp:compute/network:Network")] == ["network-dcn-1-vpc"]
    assert graph.named("network-dcn-1-vpc").inputs["mtu"] == JUMBO_MTU
    found = network_problems(existingVpc="shared-ml", mtu=8896)
    assert "gcloud compute networks update" in found["mtu"]


def test_each_additional_node_network_is_a_vpc_and_subnet_with_no_rule_of_its_own(build):
    graph = build(
        network={
            "additionalNodeNetworks": [
                {"name": "dcn-1", "subnetCidr": "10.200.0.0/24"},
                {"name": "dcn-2", "subnetCidr": "10.201.0.0/22"},
            ]
        }
    )
    for name, cidr in (("dcn-1", "10.200.0.0/24"), ("dcn-2", "10.201.0.0/22")):
        vpc = graph.named(f"network-{name}-vpc")
        assert vpc.inputs["name"] == f"ai-test-{name}-vpc"
        assert vpc.inputs["autoCreateSubnetworks"] is False
        subnet = graph.named(f"network-{name}-subnet")
        assert subnet.inputs["name"] == f"ai-test-{name}-subnet"
        assert subnet.inputs["ipCidrRange"] == cidr
        # Device mode: nodes take addresses of the primary range only, pods none here.
        assert "secondaryIpRanges" not in subnet.inputs
        assert vpc.urn in subnet.dependencies
    # Nothing attaches here, so nothing is admitted: each group of slices that attaches gets a
    # rule of its own (tests/gke/test_dcn.py), never one for the whole subnet.
    assert not [
        r
        for r in graph.of_type("gcp:compute/firewall:Firewall")
        if r.inputs["network"] in ("ai-test-dcn-1-vpc", "ai-test-dcn-2-vpc")
    ]
    # No route out of the extra NICs: one router and NAT, on the stack's own VPC.
    (router,) = graph.of_type("gcp:compute/router:Router")
    assert router.inputs["network"].endswith("/ai-test-vpc")


def test_node_network_names_and_counts_are_refused_before_anything_is_built():
    def names(*listed):
        return [
            {"name": name, "subnetCidr": f"10.{200 + i}.0.0/24"} for i, name in enumerate(listed)
        ]

    with pytest.raises(ValidationError, match="GKE's own pod network"):
        NetworkConfig.model_validate({"additionalNodeNetworks": names("default")})
    with pytest.raises(ValidationError, match="longer than 20"):
        NetworkConfig.model_validate({"additionalNodeNetworks": names("d" * 21)})
    found = network_problems(additionalNodeNetworks=names("dcn", "dcn"))
    assert "names must be unique" in found["additionalNodeNetworks.1.name"]
    # The count is the field's bound (8 NICs per VM), refused while the config is read.
    with pytest.raises(ValidationError, match="at most 7"):
        NetworkConfig.model_validate(
            {"additionalNodeNetworks": names(*(f"n{k}" for k in range(8)))}
        )
    assert network_problems(additionalNodeNetworks=names(*(f"n{k}" for k in range(7)))) == {}


def test_a_node_network_overlapping_any_range_of_the_stack_is_refused():
    stack = {
        "subnetCidr": "10.1.0.0/20",
        "podsCidr": "10.8.0.0/14",
        "servicesCidr": "10.12.0.0/20",
        "masterCidr": "172.16.0.0/28",
    }
    for key, inside in (
        ("subnetCidr", "10.1.4.0/24"),
        ("podsCidr", "10.9.0.0/16"),
        ("servicesCidr", "10.12.8.0/24"),
        ("masterCidr", "172.16.0.0/29"),
    ):
        found = network_problems(
            **stack, additionalNodeNetworks=[{"name": "dcn", "subnetCidr": inside}]
        )
        message = found["additionalNodeNetworks.0.subnetCidr"]
        assert f"overlaps {key} {stack[key]}" in message and "pick a free range" in message
    found = network_problems(
        **stack,
        additionalNodeNetworks=[
            {"name": "a", "subnetCidr": "10.200.0.0/22"},
            {"name": "b", "subnetCidr": "10.200.2.0/24"},
        ],
    )
    assert "overlaps additionalNodeNetworks[0]" in found["additionalNodeNetworks.1.subnetCidr"]
    found = network_problems(additionalNodeNetworks=[{"name": "a", "subnetCidr": "10.0.0.0/30"}])
    assert "/8 to /29" in found["additionalNodeNetworks.0.subnetCidr"]


def test_gpu_cluster_subnets_and_node_networks_must_be_disjoint():
    config = NetworkConfig.model_validate({"additionalNodeNetworks": DCN})
    found = overlap_problems(config, {"gpuClusters[0] subnet 1": "10.200.0.128/25"})
    assert [p.path for p in found] == [("additionalNodeNetworks", 0, "subnetCidr")]
    assert "overlaps gpuClusters[0] subnet 1 10.200.0.128/25" in found[0].message
    assert overlap_problems(config, {"gpuClusters[0] subnet 0": "10.130.0.0/20"}) == []


def test_each_node_network_holds_an_address_for_every_node_that_attaches():
    config = NetworkConfig.model_validate(
        {"additionalNodeNetworks": [{"name": "dcn", "subnetCidr": "10.200.0.0/26"}]}
    )
    # A /26 has 64 addresses, of which the subnet reserves 4.
    assert node_network_capacity_problems(config, {"dcn": [("'a'", 32), ("'b'", 28)]}) == []
    (problem,) = node_network_capacity_problems(config, {"dcn": [("'a'", 32), ("'b'", 29)]})
    assert problem.path == ("additionalNodeNetworks", 0, "subnetCidr")
    assert "60 usable addresses, but 61 nodes" in problem.message
    assert "32, from 'a'" in problem.message and "widen subnetCidr" in problem.message
    assert node_network_capacity_problems(config, {}) == []


def test_an_mtu_change_says_the_update_is_in_place_and_which_vms_keep_the_old_one():
    assert mtu_change_notice(8896, 8896, ["v"], ["x"]) is None
    assert mtu_change_notice(None, 8896, ["v"], ["x"]) is None  # an existing VPC's own
    notice = mtu_change_notice(1460, 8896, ["ai-test-vpc"], ["GKE node pools cpu, a-0"])
    assert notice is not None
    assert "1460 -> 8896 updates ai-test-vpc in place" in notice
    assert "keeps MTU 1460 until it is stopped and started" in notice
    assert notice.endswith("GKE node pools cpu, a-0")


def test_other_systems_get_rules_of_their_own_and_are_denied_the_gke_nodes(build):
    graph = build(
        **{"gcp:region": "us-central2", "gcp:zone": "us-central2-b"},
        tpuVms=[{"name": "exp", "accelerator": "v4-8"}],
        network={
            "allow": [{"name": "jax", "to": "tpuVms", "sources": ["pods"], "ports": ["tcp:8476"]}]
        },
    )
    tag = "ai-test-exp-tpu-vm"
    own = graph.named("tpuvm-exp-internal").inputs
    assert own["sourceTags"] == own["targetTags"] == [tag]
    assert "sourceRanges" not in own
    deny = graph.named("network-deny-to-gke").inputs
    assert deny["sourceTags"] == [tag] and deny["targetTags"] == ["ai-test-gke-node"]
    assert deny["denies"] == [{"protocol": "all"}]
    # Ahead of GKE's own `-vms` rule, which admits the whole subnet at 1000.
    assert deny["priority"] < 1000
    opening = graph.named("network-allow-jax").inputs
    assert opening["name"] == "ai-test-allow-jax"
    assert opening["sourceRanges"] == ["192.168.64.0/20"]
    assert opening["targetTags"] == [tag]
    assert opening["allows"] == [{"protocol": "tcp", "ports": ["8476"]}]


def test_port_openings_group_ports_by_protocol():
    allows = port_allows(["tcp:8265", "udp:5000-5100", "tcp:6379"])
    assert [(a.protocol, a.ports) for a in allows] == [
        ("tcp", ["8265", "6379"]),
        ("udp", ["5000-5100"]),
    ]


def test_ranges_that_together_admit_the_internet_are_refused_where_they_are_written():
    halves = [{"cidr": "0.0.0.0/1", "name": "a"}, {"cidr": "128.0.0.0/1", "name": "b"}]
    found = network.problems(NetworkConfig.model_validate({"authorizedNetworks": halves}))
    assert [(p.path, "together" in p.message) for p in found] == [(("authorizedNetworks",), True)]
    one = [{"cidr": "0.0.0.0/0", "name": "all"}, *halves]
    found = network.problems(NetworkConfig.model_validate({"authorizedNetworks": one}))
    assert [p.path for p in found] == [("authorizedNetworks", 0, "cidr")]
    assert network.problems(NetworkConfig.model_validate({"authorizedNetworks": halves[:1]})) == []
    opening = {"name": "ssh", "to": "tpuVms", "ports": ["tcp:22"]}
    config = NetworkConfig.model_validate(
        {"allow": [opening | {"sources": ["pods", "0.0.0.0/1", "128.0.0.0/1"]}]}
    )
    found = network.allow_problems(config, {"tpuVms": ["vm"]}, gke=True)
    assert [p.path for p in found] == [("allow", 0, "sources")]
    narrow = NetworkConfig.model_validate({"allow": [opening | {"sources": ["0.0.0.0/1"]}]})
    assert network.allow_problems(narrow, {"tpuVms": ["vm"]}, gke=True) == []


TAGS = {k: ["vm"] for k in ("slurm", "slurmController", "slurmLogin", "gpuClusters", "tpuVms")}


def _opening(name: str, to: str, *sources: str) -> dict[str, object]:
    return {"name": name, "to": to, "sources": list(sources), "ports": ["tcp:22"]}


@pytest.mark.parametrize(
    "entries",
    [
        # two entries, halves of IPv4, to the same VMs
        [_opening("a", "tpuVms", "0.0.0.0/1"), _opening("b", "tpuVms", "128.0.0.0/1")],
        # every public block, spread over three entries
        [
            _opening("a", "gpuClusters", "0.0.0.0/2", "64.0.0.0/2"),
            _opening("b", "gpuClusters", "128.0.0.0/2"),
            _opening("c", "gpuClusters", "192.0.0.0/3", "224.0.0.0/3"),
        ],
        # `slurm` opens the controller too: it adds up with a controller entry
        [_opening("a", "slurm", "0.0.0.0/1"), _opening("b", "slurmController", "128.0.0.0/1")],
        # the private blocks need not be named: the public ones suffice
        [
            _opening("a", "slurmLogin", "1.0.0.0/8", "2.0.0.0/7", "4.0.0.0/6", "8.0.0.0/7"),
            _opening(
                "b",
                "slurmLogin",
                "11.0.0.0/8",
                "12.0.0.0/6",
                "16.0.0.0/4",
                "32.0.0.0/3",
                "64.0.0.0/2",
                "128.0.0.0/1",
            ),
        ],
    ],
)
def test_entries_that_together_admit_the_internet_to_one_group_are_refused(entries):
    """VPC firewall rules add up: what one group of VMs admits is the union of every rule
    that targets it, not each rule alone."""
    config = NetworkConfig.model_validate({"allow": entries})
    found = network.allow_problems(config, TAGS, gke=True)
    assert [p.path for p in found] == [("allow",)], found
    assert "together admit every internet address" in found[0].message


def test_entries_to_different_groups_do_not_add_up():
    entries = [_opening("a", "tpuVms", "0.0.0.0/1"), _opening("b", "gpuClusters", "128.0.0.0/1")]
    config = NetworkConfig.model_validate({"allow": entries})
    assert network.allow_problems(config, TAGS, gke=True) == []
    logins = [
        _opening("a", "slurmLogin", "0.0.0.0/1"),
        _opening("b", "slurmController", "128.0.0.0/1"),
    ]
    config = NetworkConfig.model_validate({"allow": logins})
    assert network.allow_problems(config, TAGS, gke=True) == []
