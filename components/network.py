"""The stack's network: a custom-mode VPC (or an existing one), a subnet with named pods and
services ranges and Private Google Access, Cloud Router + NAT so private nodes and VMs can pull
images, and the firewall rules GKE private clusters need. Every system joins it through a
`NetworkHandle`. The NAT and firewall builders here also serve the networks GPU clusters make
for themselves.
"""

from __future__ import annotations

import ipaddress
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Annotated

import pulumi
import pulumi_gcp as gcp
from pydantic import Field, InstanceOf, StringConstraints

from components.base import Component, ConfigModel, Problem, WiringModel
from components.context import StackContext
from components.types import Cidr, GceName

IAP_TCP_FORWARDING_RANGE = "35.235.240.0/20"
"""Source range of Identity-Aware Proxy TCP forwarding (SSH through IAP)."""
WEBHOOK_PORTS = ("443", "8082", "8443", "9443")
"""Pod ports the GKE control plane must reach: the Kueue and JobSet webhooks serve on 9443 and
Kueue's visibility APIServices on 8082, which the Kueue chart always installs (charts'
webhook/service.yaml and visibility/service.yaml targetPorts, tests/gke/chart_facts.py)."""


class AuthorizedNetwork(ConfigModel):
    cidr: Cidr
    """A range allowed to reach the cluster's public control-plane endpoint."""
    name: Annotated[str, StringConstraints(pattern=r"^[ -~]{1,100}$")]
    """Shown in the cluster's authorized networks list, e.g. `office` or `ci-runners`."""


class NetworkConfig(ConfigModel):
    """`ai-infra:network`: address plan and control-plane access."""

    subnet_cidr: Cidr = "10.129.0.0/20"
    """Primary range of the subnet, node IPs: a /8 to /29."""
    pods_cidr: Cidr = "192.168.64.0/20"
    """Secondary range `pods`, a /9 to /24. Each node takes a block of twice its pool's
    `maxPodsPerNode`, rounded up to a power of two (a /24 at the CPU pool's 110, a /27 per TPU
    host, a /26 per GPU node); the range must hold a block for every node every pool can
    reach."""
    services_cidr: Cidr = "192.168.80.0/20"
    """Secondary range `services`, ClusterIP addresses: a /16 to /28."""
    master_cidr: Cidr = "172.16.0.0/28"
    """The /28 GKE peers for the private control plane."""
    existing_vpc: GceName | None = None
    """Name of a VPC in the project to reuse instead of creating `<prefix>-vpc`; the subnet,
    router, NAT and firewall rules are still created in it."""
    authorized_networks: list[AuthorizedNetwork] = Field(default_factory=list)
    """Ranges allowed to reach the public control-plane endpoint (where `pulumi up` runs).
    Empty means only addresses inside the VPC reach it."""


def pods_per_node_prefix(max_pods_per_node: int) -> int:
    """Prefix length GKE gives each node from the pods range: twice the pod count, rounded up
    to a power of two (110 pods -> /24)."""
    return 32 - (2 * max_pods_per_node - 1).bit_length()


PREFIX_LIMITS: dict[str, tuple[int, int]] = {
    "subnetCidr": (8, 29),
    "podsCidr": (9, 24),
    "servicesCidr": (16, 28),
}
"""Prefix lengths GKE accepts for a VPC-native cluster's node, pods and services ranges
(GKE "VPC-native clusters", defaults and limits for user-managed ranges)."""


def problems(config: NetworkConfig) -> list[Problem]:
    """The address plan as a whole: ranges GKE can use, a /28 control plane, and four
    disjoint ranges."""
    ranges = {
        "subnetCidr": config.subnet_cidr,
        "podsCidr": config.pods_cidr,
        "servicesCidr": config.services_cidr,
        "masterCidr": config.master_cidr,
    }
    found = []
    for i, network in enumerate(config.authorized_networks):
        if ipaddress.IPv4Network(network.cidr).prefixlen == 0:
            found.append(
                Problem(
                    ("authorizedNetworks", i, "cidr"),
                    "0.0.0.0/0 opens the control plane to the whole internet; list the ranges "
                    "`pulumi up` and kubectl run from",
                )
            )
    for key, (widest, narrowest) in PREFIX_LIMITS.items():
        prefix = ipaddress.IPv4Network(ranges[key]).prefixlen
        if not widest <= prefix <= narrowest:
            found.append(
                Problem(
                    (key,),
                    f"GKE takes a /{widest} to /{narrowest} here, not /{prefix}; resize "
                    f"{ranges[key]}",
                )
            )
    if ipaddress.IPv4Network(config.master_cidr).prefixlen != 28:
        found.append(
            Problem(
                ("masterCidr",),
                f"GKE needs a /28 for the control plane, got {config.master_cidr}",
            )
        )
    for (a, ra), (b, rb) in itertools.combinations(ranges.items(), 2):
        if ipaddress.IPv4Network(ra).overlaps(ipaddress.IPv4Network(rb)):
            found.append(
                Problem(
                    (b,), f"{rb} overlaps {a} {ra}; every range in the network must be disjoint"
                )
            )
    return found


def capacity_problems(
    config: NetworkConfig, pools: Iterable[tuple[str, int, int]]
) -> list[Problem]:
    """The pods range must hold a per-node block for every node every pool can reach.

    `pools` are (name, most nodes, max pods per node). Blocks are powers of two, so a range
    holds them all exactly when their sizes add up to at most its own.
    """
    pods = ipaddress.IPv4Network(config.pods_cidr)
    needed = 0
    largest: tuple[int, str, int] = (0, "", 0)
    for name, nodes, max_pods in pools:
        block = 2 ** (32 - pods_per_node_prefix(max_pods))
        needed += nodes * block
        largest = max(largest, (nodes * block, name, max_pods))
    if needed <= pods.num_addresses:
        return []
    _, name, max_pods = largest
    return [
        Problem(
            ("podsCidr",),
            f"{config.pods_cidr} has {pods.num_addresses} addresses, but the node pools can "
            f"grow to need {needed} (each node takes a block of twice its max pods, rounded "
            f"up to a power of two; the most goes to '{name}' at {max_pods} pods per node); "
            "widen podsCidr or lower maxPodsPerNode",
        )
    ]


def cloud_nat(
    parent: Component,
    name: str,
    *,
    project: str,
    region: str,
    base: str,
    network: pulumi.Input[str],
    subnet: pulumi.Input[str],
) -> gcp.compute.RouterNat:
    """A Cloud Router and NAT for one subnet, so VMs without public IPs reach the internet
    (image pulls, package installs); resources `<name>-router`/`<name>-nat`, named
    `<base>-router`/`<base>-nat`. Only errors are logged."""
    router = gcp.compute.Router(
        f"{name}-router",
        project=project,
        region=region,
        name=f"{base}-router",
        network=network,
        opts=parent.child_opts(),
    )
    return gcp.compute.RouterNat(
        f"{name}-nat",
        project=project,
        region=region,
        name=f"{base}-nat",
        router=router.name,
        nat_ip_allocate_option="AUTO_ONLY",
        source_subnetwork_ip_ranges_to_nat="LIST_OF_SUBNETWORKS",
        subnetworks=[
            gcp.compute.RouterNatSubnetworkArgs(
                name=subnet, source_ip_ranges_to_nats=["ALL_IP_RANGES"]
            )
        ],
        log_config=gcp.compute.RouterNatLogConfigArgs(enable=True, filter="ERRORS_ONLY"),
        opts=parent.child_opts(),
    )


ALL_INTERNAL = (
    gcp.compute.FirewallAllowArgs(protocol="tcp"),
    gcp.compute.FirewallAllowArgs(protocol="udp"),
    gcp.compute.FirewallAllowArgs(protocol="icmp"),
)
"""Every TCP and UDP port and ICMP: what VMs of one cluster need of each other."""


def firewall_rule(
    parent: Component,
    resource_name: str,
    *,
    project: str,
    network: pulumi.Input[str],
    name: str,
    description: str,
    allows: Sequence[gcp.compute.FirewallAllowArgs],
    source_ranges: Sequence[str] | None = None,
    source_tags: Sequence[str] | None = None,
    target_tags: Sequence[str] | None = None,
) -> gcp.compute.Firewall:
    """An ingress rule; without `target_tags` it applies to every VM of the network."""
    return gcp.compute.Firewall(
        resource_name,
        project=project,
        name=name,
        network=network,
        direction="INGRESS",
        source_ranges=list(source_ranges) if source_ranges is not None else None,
        source_tags=list(source_tags) if source_tags is not None else None,
        target_tags=list(target_tags) if target_tags is not None else None,
        allows=list(allows),
        description=description,
        opts=parent.child_opts(),
    )


def iap_ssh_rule(
    parent: Component,
    resource_name: str,
    *,
    project: str,
    network: pulumi.Input[str],
    name: str,
    description: str,
    target_tags: Sequence[str] | None = None,
) -> gcp.compute.Firewall:
    """SSH from Identity-Aware Proxy's TCP forwarding range only: no VM is reachable from the
    internet, and IAP decides who gets through."""
    return firewall_rule(
        parent,
        resource_name,
        project=project,
        network=network,
        name=name,
        description=description,
        allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=["22"])],
        source_ranges=[IAP_TCP_FORWARDING_RANGE],
        target_tags=target_tags,
    )


def subnet_name(prefix: str) -> str:
    """The stack's subnet, which has Private Google Access; its name is known up front."""
    return f"{prefix}-subnet"


def subnet_of(prefix: str, subnetwork: str | None) -> str:
    """An entry's subnet by name: its own, or the stack's."""
    return subnetwork if subnetwork is not None else subnet_name(prefix)


@dataclass(frozen=True)
class NetworkHandle:
    """What a system needs of the stack's network to put nodes or VMs in it."""

    self_link: pulumi.Output[str]
    name: pulumi.Input[str]
    """The VPC's name, which firewall rules and Filestore take."""
    subnet_self_link: pulumi.Output[str]
    subnet_name: str
    """The subnet's name, known before it exists."""
    pods_range_name: str
    services_range_name: str
    webhook_firewall: gcp.compute.Firewall
    """The control plane's path to admission webhooks; Kueue's release waits for it."""
    component: pulumi.Resource
    """The network component: VMs that boot into the subnet and egress through the NAT wait
    for it, and what must be deleted before any of it depends on it."""


class NetworkArgs(WiringModel):
    context: InstanceOf[StackContext]
    config: NetworkConfig


class Network(Component):
    """VPC, subnet, router, NAT and firewall for one training environment."""

    handle: NetworkHandle
    pods_range_name = "pods"
    services_range_name = "services"

    def __init__(self, name: str, args: NetworkArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ai-infra:network:Network", name, opts)
        ctx = args.context
        config = args.config
        if config.existing_vpc is None:
            vpc = gcp.compute.Network(
                f"{name}-vpc",
                project=ctx.project,
                name=ctx.name("vpc"),
                auto_create_subnetworks=False,
                routing_mode="REGIONAL",
                opts=self.child_opts(),
            )
            network_ref: pulumi.Input[str] = vpc.self_link
            network_name: pulumi.Input[str] = vpc.name
        else:
            network_ref = f"projects/{ctx.project}/global/networks/{config.existing_vpc}"
            network_name = config.existing_vpc

        subnet = gcp.compute.Subnetwork(
            f"{name}-subnet",
            project=ctx.project,
            region=ctx.region,
            name=subnet_name(ctx.prefix),
            network=network_ref,
            ip_cidr_range=config.subnet_cidr,
            private_ip_google_access=True,
            secondary_ip_ranges=[
                gcp.compute.SubnetworkSecondaryIpRangeArgs(
                    range_name=self.pods_range_name, ip_cidr_range=config.pods_cidr
                ),
                gcp.compute.SubnetworkSecondaryIpRangeArgs(
                    range_name=self.services_range_name, ip_cidr_range=config.services_cidr
                ),
            ],
            log_config=gcp.compute.SubnetworkLogConfigArgs(
                aggregation_interval="INTERVAL_10_MIN", flow_sampling=0.5
            ),
            opts=self.child_opts(),
        )
        cloud_nat(
            self,
            name,
            project=ctx.project,
            region=ctx.region,
            base=ctx.prefix,
            network=network_ref,
            subnet=subnet.self_link,
        )

        firewall_rule(
            self,
            f"{name}-allow-internal",
            project=ctx.project,
            network=network_name,
            name=ctx.name("allow-internal"),
            description="Node, pod and service traffic inside the environment",
            source_ranges=[config.subnet_cidr, config.pods_cidr, config.services_cidr],
            allows=ALL_INTERNAL,
        )
        iap_ssh_rule(
            self,
            f"{name}-allow-iap-ssh",
            project=ctx.project,
            network=network_name,
            name=ctx.name("allow-iap-ssh"),
            description="SSH to nodes through Identity-Aware Proxy only",
        )
        webhooks = firewall_rule(
            self,
            f"{name}-allow-webhooks",
            project=ctx.project,
            network=network_name,
            name=ctx.name("allow-webhooks"),
            description="GKE control plane to webhooks and APIServices on nodes (Kueue, JobSet)",
            source_ranges=[config.master_cidr],
            allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=list(WEBHOOK_PORTS))],
        )
        self.handle = NetworkHandle(
            self_link=pulumi.Output.from_input(network_ref),
            name=network_name,
            subnet_self_link=subnet.self_link,
            subnet_name=subnet_name(ctx.prefix),
            pods_range_name=self.pods_range_name,
            services_range_name=self.services_range_name,
            webhook_firewall=webhooks,
            component=self,
        )
        self.register_outputs(
            {"network": self.handle.self_link, "subnetwork": self.handle.subnet_self_link}
        )
