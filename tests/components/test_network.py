"""The network component as the program registers it, and how it sizes the pods range."""

from __future__ import annotations

from components.network import IAP_TCP_FORWARDING_RANGE, pods_per_node_prefix


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
    assert internal["sourceRanges"] == ["10.129.0.0/20", "192.168.64.0/20", "192.168.80.0/20"]
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
