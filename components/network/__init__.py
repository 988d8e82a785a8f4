"""The stack's network: a custom-mode VPC (or an existing one) at a jumbo MTU, a subnet with
named pods and services ranges and Private Google Access, Cloud Router + NAT so private nodes
and VMs can pull images, the firewall rules GKE private clusters need, and the additional node
networks (a VPC and subnet each) that TPU hosts take a second NIC in. Every system joins it
through a `NetworkHandle`. The NAT and firewall builders here also serve the networks GPU
clusters make for themselves.
"""

from __future__ import annotations

import ipaddress
import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Literal

import pulumi
import pulumi_gcp as gcp
from pydantic import AfterValidator, Field, InstanceOf, StringConstraints

from components.base import (
    Component,
    ConfigModel,
    Problem,
    WiringModel,
    described,
    duplicate_names,
)
from components.context import StackContext
from components.types import Cidr, DnsLabel, GceName

IAP_TCP_FORWARDING_RANGE = "35.235.240.0/20"
"""Source range of Identity-Aware Proxy TCP forwarding (SSH through IAP)."""
WEBHOOK_PORTS = ("443", "8082", "8443", "9443")
"""Pod ports the GKE control plane must reach: the Kueue and JobSet webhooks serve on 9443 and
Kueue's visibility APIServices on 8082, which the Kueue chart always installs (charts'
webhook/service.yaml and visibility/service.yaml targetPorts, workload/chart_facts.py)."""


DEFAULT_MTU = 1460
"""What a VPC gets when no MTU is given (VPC docs, "Maximum transmission unit")."""
JUMBO_MTU = 8896
"""The largest MTU a VPC takes, and what MaxText's multislice guide, xpk's TPU cluster recipes
and Cluster Toolkit's `network/vpc` module give the networks TPU slices talk over."""
MIN_MTU = 1300
"""The smallest MTU a VPC takes (VPC docs; terraform-provider-google `google_compute_network`)."""
MAX_NODE_NETWORKS = 7
"""A VM has at most 8 NICs, the default one included, and GKE multi-networking has the same
limit ("About multi-network support for Pods")."""
NODE_NETWORK_NAME_MAX = 20
"""Keeps `<prefix>-<name>-allow-dcn`, the longest name derived from it, within 63 characters."""


@described(f"MTU in bytes, {MIN_MTU} to {JUMBO_MTU}", {"minimum": MIN_MTU, "maximum": JUMBO_MTU})
def _mtu(value: int) -> int:
    if not MIN_MTU <= value <= JUMBO_MTU:
        raise ValueError(
            f"{value} is not an MTU a VPC takes: {MIN_MTU} to {JUMBO_MTU} bytes (VPC docs, "
            f"'Maximum transmission unit'); use {JUMBO_MTU}, the default, for multislice, or "
            f"{DEFAULT_MTU}, Google's default"
        )
    return value


@described("DNS label, at most 20 characters, not `default`", {"not": {"const": "default"}})
def _node_network_name(value: str) -> str:
    if len(value) > NODE_NETWORK_NAME_MAX:
        raise ValueError(
            f"'{value}' is longer than {NODE_NETWORK_NAME_MAX} characters; it names the VPC "
            "`<prefix>-<name>-vpc` and its firewall rule, so shorten it (e.g. dcn-1)"
        )
    if value == "default":
        raise ValueError(
            "'default' is GKE's own pod network in every multi-network cluster; choose "
            "another name, e.g. dcn-1"
        )
    return value


Mtu = Annotated[int, AfterValidator(_mtu)]
NodeNetworkName = Annotated[DnsLabel, AfterValidator(_node_network_name)]


PORT_PROTOCOLS = ("tcp", "udp", "sctp")
"""The protocols a VPC firewall rule opens by port (Compute Engine `Firewall.allowed`)."""
_PORT = r"(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])"


@described("`tcp:PORT`, `udp:PORT` or `sctp:PORT`, a port or a range `LOW-HIGH`", {})
def _port_spec(value: str) -> str:
    protocol, _, ports = value.partition(":")
    low, _, high = ports.partition("-")
    if (
        protocol not in PORT_PROTOCOLS
        or not re.fullmatch(_PORT, low)
        or (high and (not re.fullmatch(_PORT, high) or int(high) < int(low)))
    ):
        raise ValueError(
            f"'{value}' is not a port opening: write the protocol and a port or a range of "
            "1 to 65535, e.g. tcp:6820, udp:5000-5100"
        )
    return value


PortSpec = Annotated[str, AfterValidator(_port_spec)]
PODS = "pods"
"""An opening's source meaning the GKE cluster's pods range."""


@described("`pods` or an IPv4 range", {})
def _opening_source(value: str) -> str:
    if value == PODS:
        return value
    try:
        network = ipaddress.IPv4Network(value)
    except ValueError:
        raise ValueError(
            f"'{value}' is neither `pods` (the GKE cluster's pods range) nor an IPv4 range "
            "such as 10.8.0.0/24"
        ) from None
    if network.prefixlen == 0:
        raise ValueError(
            f"'{value}' opens the system to the whole internet; name the ranges that need it"
        )
    if str(network) != value:
        raise ValueError(f"'{value}' has host bits set; write {network}")
    return value


OpeningSource = Annotated[str, AfterValidator(_opening_source)]
Reachable = Literal["slurm", "slurmController", "slurmLogin", "gpuClusters", "tpuVms"]
"""The systems whose VMs a `network.allow` entry may open: every VM of the Slurm cluster, its
controller, its login VMs, every GPU cluster on the stack's network, every TPU VM entry on
it."""
OpeningName = Annotated[DnsLabel, StringConstraints(max_length=20)]


class PortOpening(ConfigModel):
    """One entry of `network.allow`: ports of one system opened to the GKE cluster's pods or
    to named ranges. Nothing else reaches another system's ports: every rule of the stack
    names the VMs it admits by their system's network tag."""

    name: OpeningName
    """Names the firewall rule `<prefix>-allow-<name>`."""
    to: Reachable
    """Whose VMs: `slurm` (every VM of the Slurm cluster, the TPU VMs it creates included),
    `slurmController`, `slurmLogin`, `gpuClusters` (those on the stack's network) or
    `tpuVms` (those on the stack's network)."""
    sources: list[OpeningSource] = Field(min_length=1)
    """Who: `pods` (the GKE cluster's pods range: every pod of every team, so prefer a
    service with its own authentication) and IPv4 ranges; never 0.0.0.0/0."""
    ports: list[PortSpec] = Field(min_length=1)
    """What: `tcp:6820`, `udp:5000-5100`; at least one, and only these."""


class NodeNetworkConfig(ConfigModel):
    """One entry of `network.additionalNodeNetworks`: a VPC and subnet for TPU hosts' second
    NIC."""

    name: NodeNetworkName
    """Names the VPC `<prefix>-<name>-vpc`, its subnet `<prefix>-<name>-subnet`, and GKE's
    `Network` object pods attach by; what `tpuSlices[].additionalNodeNetworks` lists."""
    subnet_cidr: Cidr
    """The subnet's range, a /8 to /29: one address per node that attaches, plus the 4 every
    subnet reserves; disjoint from every other range of the stack."""


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
    mtu: Mtu | None = None
    """MTU of the VPC and the additional node networks, 1300 to 8896 bytes. Unset is 8896, the
    jumbo frames multislice DCN traffic is meant to run on; set 1460 for Google's default. A
    running VM keeps the MTU it booted with until it is stopped and started. Not with
    `existingVpc`, whose MTU is its own."""
    additional_node_networks: list[NodeNetworkConfig] = Field(default_factory=list)
    """VPCs for a second (third, ...) NIC on TPU hosts, at most 7: each gets a subnet and a
    firewall rule for traffic inside it, and the cluster multi-networking. v6e and tpu7x
    slices attach to every one unless they list their own, and so do the TPU provisioner's
    pools when every shape of its quota is v6e or tpu7x (unless it names its own)."""
    allow: list[PortOpening] = Field(default_factory=list)
    """Ports of the Slurm cluster, GPU clusters or TPU VMs opened to the GKE cluster's pods or
    to other ranges, each named; by default no pod reaches any of them."""

    @property
    def managed_mtu(self) -> int | None:
        """The MTU of the VPC this program creates; None with `existingVpc`."""
        if self.existing_vpc is not None:
            return None
        return self.node_network_mtu

    @property
    def node_network_mtu(self) -> int:
        """The MTU of every additional node network."""
        return self.mtu if self.mtu is not None else JUMBO_MTU

    def vpc_name(self, prefix: str) -> str:
        return self.existing_vpc or f"{prefix}-vpc"

    def node_networks(self, prefix: str) -> dict[str, NodeNetwork]:
        """The additional node networks by name, with the names of what they are built of."""
        return {
            n.name: NodeNetwork(
                name=n.name,
                vpc=f"{prefix}-{n.name}-vpc",
                subnet=f"{prefix}-{n.name}-subnet",
                cidr=n.subnet_cidr,
            )
            for n in self.additional_node_networks
        }


@dataclass(frozen=True)
class NodeNetwork:
    """An additional node network, resolved: the names GKE node pools, the TPU provisioner and
    GKE's `GKENetworkParamSet` refer to it by."""

    name: str
    """The config name, also the name of GKE's `Network` and `GKENetworkParamSet` objects."""
    vpc: str
    subnet: str
    cidr: str


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
    if config.mtu is not None and config.existing_vpc is not None:
        found.append(
            Problem(
                ("mtu",),
                f"the program does not manage existingVpc {config.existing_vpc}, so it cannot "
                "set its MTU; remove mtu and set the VPC's own (gcloud compute networks update "
                "NAME --mtu=8896, with its VMs stopped), or let the program create the VPC",
            )
        )
    return found + _node_network_problems(config, ranges)


def _node_network_problems(config: NetworkConfig, ranges: dict[str, str]) -> list[Problem]:
    """The additional node networks: how many, their names, and subnets that GKE takes and
    that overlap no other range of the network (GKE: the networks of one cluster must not
    overlap, "Set up multi-network support for Pods")."""
    networks = config.additional_node_networks
    found = [
        p.under("additionalNodeNetworks")
        for p in duplicate_names([n.name for n in networks], "additionalNodeNetworks")
    ]
    if len(networks) > MAX_NODE_NETWORKS:
        found.append(
            Problem(
                ("additionalNodeNetworks",),
                f"{len(networks)} networks, but a node takes at most {MAX_NODE_NETWORKS} "
                "besides its default NIC (8 NICs per VM); drop some",
            )
        )
    widest, narrowest = PREFIX_LIMITS["subnetCidr"]
    taken = dict(ranges)
    for i, network in enumerate(networks):
        path = ("additionalNodeNetworks", i, "subnetCidr")
        cidr = ipaddress.IPv4Network(network.subnet_cidr)
        if not widest <= cidr.prefixlen <= narrowest:
            found.append(
                Problem(
                    path,
                    f"a subnet is a /{widest} to /{narrowest}, not /{cidr.prefixlen}; resize "
                    f"{network.subnet_cidr}",
                )
            )
        for key, other in taken.items():
            if cidr.overlaps(ipaddress.IPv4Network(other)):
                found.append(
                    Problem(
                        path,
                        f"{network.subnet_cidr} overlaps {key} {other}; GKE needs every network "
                        "of a cluster disjoint: pick a free range",
                    )
                )
                break
        taken[f"additionalNodeNetworks[{i}]"] = network.subnet_cidr
    return found


def name_problems(config: NetworkConfig, prefix: str) -> list[Problem]:
    """An `existingVpc` named like a VPC the program creates for a node network, whose
    creation would fail on a name already taken."""
    found = []
    for i, network in enumerate(config.additional_node_networks):
        if config.existing_vpc == config.node_networks(prefix)[network.name].vpc:
            found.append(
                Problem(
                    ("additionalNodeNetworks", i, "name"),
                    f"the program creates the VPC {config.existing_vpc} for this network, which "
                    "is existingVpc's name; rename the network",
                )
            )
    return found


def overlap_problems(config: NetworkConfig, others: Mapping[str, str]) -> list[Problem]:
    """`additionalNodeNetworks[i].subnetCidr` problems for a subnet that overlaps a range of
    another system, `others` mapping where it is written (`gpuClusters[0] subnet 1`) to it."""
    found = []
    for i, network in enumerate(config.additional_node_networks):
        cidr = ipaddress.IPv4Network(network.subnet_cidr)
        for where, other in others.items():
            if cidr.overlaps(ipaddress.IPv4Network(other)):
                found.append(
                    Problem(
                        ("additionalNodeNetworks", i, "subnetCidr"),
                        f"{network.subnet_cidr} overlaps {where} {other}; keep every range of "
                        "the stack disjoint so that nodes and VMs can be routed between: pick "
                        "a free range",
                    )
                )
    return found


def node_network_capacity_problems(
    config: NetworkConfig, attached: Mapping[str, Sequence[tuple[str, int]]]
) -> list[Problem]:
    """Each additional subnet must hold an address for every node that can attach to it.

    `attached` maps a network's name to (pool or slice, most nodes) pairs. A node's extra NIC
    takes one address of the subnet's primary range; pods get no address there, since the
    NIC moves into one pod whole (Device mode, NetDevice). A subnet reserves 4 addresses of
    its primary range (VPC docs, "Subnets": reserved IPv4 addresses).
    """
    found = []
    for i, network in enumerate(config.additional_node_networks):
        users = attached.get(network.name, ())
        needed = sum(nodes for _, nodes in users)
        usable = ipaddress.IPv4Network(network.subnet_cidr).num_addresses - 4
        if needed <= usable:
            continue
        largest = max(users, key=lambda user: user[1])
        found.append(
            Problem(
                ("additionalNodeNetworks", i, "subnetCidr"),
                f"{network.subnet_cidr} has {usable} usable addresses, but {needed} nodes can "
                f"attach to {network.name} (each takes one; the most, {largest[1]}, from "
                f"{largest[0]}); widen subnetCidr",
            )
        )
    return found


def describe(config: NetworkConfig, prefix: str) -> list[tuple[str, list[str]]]:
    """The plan's section: the VPC with its MTU and ranges, and each additional node network."""
    mtu = config.managed_mtu
    if mtu is None:
        shown = "its own MTU (existingVpc, not managed here)"
    elif config.mtu is None:
        shown = f"mtu {mtu} (default: jumbo frames for DCN traffic)"
    else:
        shown = f"mtu {mtu}"
    lines = [
        f"  {config.vpc_name(prefix)}: {shown}; subnet {config.subnet_cidr}, pods "
        f"{config.pods_cidr}, services {config.services_cidr}, control plane "
        f"{config.master_cidr}"
    ]
    lines += [
        f"  {n.vpc}: mtu {config.node_network_mtu}; subnet {n.cidr} "
        f"(additional node network {n.name})"
        for n in config.node_networks(prefix).values()
    ]
    return [("Network", lines)]


def mtu_change_notice(
    before: int | None, after: int | None, vpcs: Sequence[str], vms: Sequence[str]
) -> str | None:
    """What a reviewer must know when an edit changes the MTU of VPCs in use: the provider
    updates the network in place (terraform-provider-google `google_compute_network`: `mtu` is
    not ForceNew) and restarts nothing, while a VM takes its MTU from DHCP when it boots, so
    running VMs keep the old one ("Change the MTU setting of a VPC network")."""
    if before == after or before is None or after is None:
        return None
    return (
        f"MTU {before} -> {after} updates {', '.join(vpcs)} in place; the program "
        f"restarts no VM, and every running one keeps MTU {before} until it is stopped and "
        "started, mixing MTUs in the network meanwhile. Google advises stopping the VMs "
        "before the change (VPC docs, 'Change the MTU setting of a VPC network'). In these "
        f"networks: {'; '.join(vms) or 'no VMs this stack creates'}"
    )


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
    allows: Sequence[gcp.compute.FirewallAllowArgs] = (),
    denies: Sequence[gcp.compute.FirewallDenyArgs] = (),
    source_ranges: Sequence[str] | None = None,
    source_tags: Sequence[str] | None = None,
    target_tags: Sequence[str] | None = None,
    destination_ranges: Sequence[pulumi.Input[str]] | None = None,
    egress: bool = False,
    priority: int | None = None,
) -> gcp.compute.Firewall:
    """An ingress rule (an egress one with `egress`); without `target_tags` it applies to
    every VM of the network. Unset `priority` is the API's 1000."""
    return gcp.compute.Firewall(
        resource_name,
        project=project,
        name=name,
        network=network,
        direction="EGRESS" if egress else "INGRESS",
        priority=priority,
        source_ranges=list(source_ranges) if source_ranges is not None else None,
        source_tags=list(source_tags) if source_tags is not None else None,
        target_tags=list(target_tags) if target_tags is not None else None,
        destination_ranges=list(destination_ranges) if destination_ranges is not None else None,
        allows=list(allows) or None,
        denies=list(denies) or None,
        description=description,
        opts=parent.child_opts(),
    )


def system_tag(owner: str, role: str) -> str:
    """The network tag by which firewall rules name one system's VMs, or one role of them:
    `<owner>-<role>` (`<prefix>-gke-node`, `<prefix>-<entry>-tpu-vm`, `<cluster>-controller`).
    Every rule of the stack names the tags it admits and the tags it applies to; none opens a
    port to every VM of the network (IAP's SSH aside)."""
    return f"{owner}-{role}"


def gke_node_tag(prefix: str) -> str:
    """Every GKE node of the stack, the TPU provisioner's included."""
    return system_tag(prefix, "gke-node")


SystemTags = Mapping[str, Sequence[str]]
"""`Reachable` system -> the network tags of its VMs on the stack's network (empty or absent
when the stack has none)."""
MAX_SOURCE_TAGS = 30
"""A VPC firewall rule takes at most 30 source tags (VPC quotas and limits)."""


def port_allows(ports: Sequence[str]) -> list[gcp.compute.FirewallAllowArgs]:
    """`tcp:6820`-style openings as a rule's `allows`, one per protocol in the order given."""
    by_protocol: dict[str, list[str]] = {}
    for spec in ports:
        protocol, _, port = spec.partition(":")
        by_protocol.setdefault(protocol, []).append(port)
    return [gcp.compute.FirewallAllowArgs(protocol=p, ports=n) for p, n in by_protocol.items()]


def allow_problems(config: NetworkConfig, tags: SystemTags, *, gke: bool) -> list[Problem]:
    """`allow[i]` problems: a name used twice, a system the stack has no VMs of on its
    network, `pods` without a GKE cluster."""
    found = [p.under("allow") for p in duplicate_names([a.name for a in config.allow], "allow")]
    for i, opening in enumerate(config.allow):
        if not tags.get(opening.to):
            found.append(
                Problem(
                    ("allow", i, "to"),
                    f"the stack has no {opening.to} VMs on its network to open; remove the "
                    "entry or add the system",
                )
            )
        if PODS in opening.sources and not gke:
            found.append(
                Problem(
                    ("allow", i, "sources"),
                    "`pods` is the GKE cluster's pods range, and cluster.enabled is false; "
                    "name IPv4 ranges instead",
                )
            )
    return found


def custom_vpc(
    parent: Component,
    resource: str,
    *,
    project: str,
    name: str,
    mtu: int | None,
    profile: pulumi.Input[str] | None = None,
) -> gcp.compute.Network:
    """A custom-mode, regionally routed VPC; `profile` a network profile (RDMA's RoCE)."""
    return gcp.compute.Network(
        resource,
        project=project,
        name=name,
        auto_create_subnetworks=False,
        routing_mode="REGIONAL",
        mtu=mtu,
        network_profile=profile,
        opts=parent.child_opts(),
    )


def subnet_in(
    parent: Component,
    resource: str,
    *,
    project: str,
    region: str,
    name: str,
    network: gcp.compute.Network,
    cidr: str,
    private_google_access: bool | None = None,
) -> gcp.compute.Subnetwork:
    """One subnet of `network`."""
    return gcp.compute.Subnetwork(
        resource,
        project=project,
        region=region,
        name=name,
        network=network.self_link,
        ip_cidr_range=cidr,
        private_ip_google_access=private_google_access,
        opts=parent.child_opts(),
    )


def vpc_with_subnet(
    parent: Component,
    *,
    project: str,
    region: str,
    cidr: str,
    mtu: int | None,
    description: str,
    vpc: tuple[str, str],
    subnet: tuple[str, str],
    firewall: tuple[str, str],
    private_google_access: bool | None = None,
) -> tuple[gcp.compute.Network, gcp.compute.Subnetwork]:
    """A custom-mode VPC with one subnet and a rule admitting all traffic from inside that
    subnet: each GPU NIC's network and each additional node network. `vpc`, `subnet` and
    `firewall` are (resource name, cloud name) pairs."""
    network = custom_vpc(parent, vpc[0], project=project, name=vpc[1], mtu=mtu)
    subnetwork = subnet_in(
        parent,
        subnet[0],
        project=project,
        region=region,
        name=subnet[1],
        network=network,
        cidr=cidr,
        private_google_access=private_google_access,
    )
    firewall_rule(
        parent,
        firewall[0],
        project=project,
        network=network.name,
        name=firewall[1],
        description=description,
        source_ranges=[cidr],
        allows=ALL_INTERNAL,
    )
    return network, subnetwork


def rdma_nics(
    parent: Component,
    resource: str,
    *,
    project: str,
    region: str,
    name: str,
    mtu: int,
    profile: str,
    cidrs: Sequence[str],
) -> list[gcp.compute.InstanceTemplateNetworkInterfaceArgs]:
    """MRDMA NICs on one VPC `name` with an RDMA network profile (the zone's RoCE), a subnet
    `<name>-subnet<j>` each and no firewall rule (Cluster Toolkit v1.95.0
    modules/network/gpu-rdma-vpc); "except for VPC networks that are created with an RDMA
    network profile, each network interface must be assigned to a subnet in a unique VPC
    network" (Compute Engine, "Create VMs with multiple network interfaces")."""
    vpc = custom_vpc(parent, resource, project=project, name=name, mtu=mtu, profile=profile)
    return [
        gcp.compute.InstanceTemplateNetworkInterfaceArgs(
            network=vpc.self_link,
            subnetwork=subnet_in(
                parent,
                f"{resource}-subnet{j}",
                project=project,
                region=region,
                name=f"{name}-subnet{j}",
                network=vpc,
                cidr=cidr,
            ).self_link,
            nic_type="MRDMA",
        )
        for j, cidr in enumerate(cidrs)
    ]


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


def consecutive_ranges(first: str, count: int) -> list[str]:
    """`count` ranges of `first`'s size: `first` and those right after it, as a VM's NICs
    beyond the first take them. ValueError when they run past the address space."""
    network = ipaddress.IPv4Network(first)
    return [
        str(
            ipaddress.IPv4Network(
                (int(network.network_address) + k * network.num_addresses, network.prefixlen)
            )
        )
        for k in range(count)
    ]


def subnet_name(prefix: str) -> str:
    """The stack's subnet, which has Private Google Access; its name is known up front."""
    return f"{prefix}-subnet"


def subnet_of(prefix: str, subnetwork: str | None) -> str:
    """An entry's subnet by name: its own, or the stack's."""
    return subnetwork if subnetwork is not None else subnet_name(prefix)


@dataclass(frozen=True)
class NodeNetworkHandle:
    """An additional node network as node pools attach to it: its names, as outputs of the VPC
    and subnet, so that a pool waits for both."""

    network: NodeNetwork
    vpc_name: pulumi.Output[str]
    subnet_name: pulumi.Output[str]


@dataclass(frozen=True)
class NetworkHandle:
    """What a system needs of the stack's network to put nodes or VMs in it."""

    self_link: pulumi.Output[str]
    name: pulumi.Input[str]
    """The VPC's name, which firewall rules and Filestore take."""
    subnet_self_link: pulumi.Output[str]
    subnet_name: str
    """The subnet's name, known before it exists."""
    subnet_cidr: str
    """The subnet's primary range: the addresses of every VM in it."""
    pods_range_name: str
    services_range_name: str
    webhook_firewall: gcp.compute.Firewall | None
    """The control plane's path to admission webhooks, which Kueue's release waits for; None
    without a GKE cluster."""
    component: pulumi.Resource
    """The network component: VMs that boot into the subnet and egress through the NAT wait
    for it, and what must be deleted before any of it depends on it."""
    node_networks: Mapping[str, NodeNetworkHandle] = field(default_factory=dict)
    """The additional node networks, by name."""


class NetworkArgs(WiringModel):
    context: InstanceOf[StackContext]
    config: NetworkConfig
    gke: bool = True
    """Whether the stack has a GKE cluster, whose nodes get the rules GKE needs."""
    system_tags: dict[str, list[str]] = Field(default_factory=dict)
    """The other systems' network tags on this network (`SystemTags`): what `allow` entries
    open, and what is denied the GKE nodes."""


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
                name=config.vpc_name(ctx.prefix),
                auto_create_subnetworks=False,
                routing_mode="REGIONAL",
                mtu=config.managed_mtu,
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

        webhooks = self._gke_rules(name, ctx, config, network_name, args) if args.gke else None
        iap_ssh_rule(
            self,
            f"{name}-allow-iap-ssh",
            project=ctx.project,
            network=network_name,
            name=ctx.name("allow-iap-ssh"),
            description="SSH to every VM of the network through Identity-Aware Proxy only",
        )
        for opening in config.allow:
            firewall_rule(
                self,
                f"{name}-allow-{opening.name}",
                project=ctx.project,
                network=network_name,
                name=ctx.name("allow", opening.name),
                description=f"network.allow {opening.name}: {', '.join(opening.ports)} of "
                f"{opening.to} VMs",
                source_ranges=[config.pods_cidr if s == PODS else s for s in opening.sources],
                target_tags=list(args.system_tags[opening.to]),
                allows=port_allows(opening.ports),
            )
        self.handle = NetworkHandle(
            self_link=pulumi.Output.from_input(network_ref),
            name=network_name,
            subnet_self_link=subnet.self_link,
            subnet_name=subnet_name(ctx.prefix),
            subnet_cidr=config.subnet_cidr,
            pods_range_name=self.pods_range_name,
            services_range_name=self.services_range_name,
            webhook_firewall=webhooks,
            component=self,
            node_networks={
                node_network.name: self._node_network(name, ctx, config, node_network)
                for node_network in config.node_networks(ctx.prefix).values()
            },
        )
        self.register_outputs(
            {"network": self.handle.self_link, "subnetwork": self.handle.subnet_self_link}
        )

    def _gke_rules(
        self,
        name: str,
        ctx: StackContext,
        config: NetworkConfig,
        network_name: pulumi.Input[str],
        args: NetworkArgs,
    ) -> gcp.compute.Firewall:
        """GKE nodes reach each other and take their pods' traffic; the control plane reaches
        the webhooks on them; no other system's VM reaches them. GKE's own `-vms` rule admits
        the whole subnet to its nodes at priority 1000 ("Automatically created firewall
        rules"), so the deny takes 900, ahead of it. The resource keeps its old name: this
        rule was the flat allow-internal that admitted every range to every VM."""
        tag = gke_node_tag(ctx.prefix)
        firewall_rule(
            self,
            f"{name}-allow-internal",
            project=ctx.project,
            network=network_name,
            name=ctx.name("allow-internal"),
            description="GKE nodes and pods to GKE nodes; other systems have rules of their own",
            source_ranges=[config.pods_cidr],
            source_tags=[tag],
            target_tags=[tag],
            allows=ALL_INTERNAL,
        )
        others = sorted({t for tags in args.system_tags.values() for t in tags})
        for k in range(0, len(others), MAX_SOURCE_TAGS):
            suffix = "" if k == 0 else f"-{k // MAX_SOURCE_TAGS}"
            firewall_rule(
                self,
                f"{name}-deny-to-gke{suffix}",
                project=ctx.project,
                network=network_name,
                name=ctx.name(f"deny-to-gke{suffix}"),
                description="Slurm, GPU cluster and TPU VMs never reach GKE nodes or pods",
                source_tags=others[k : k + MAX_SOURCE_TAGS],
                target_tags=[tag],
                denies=[gcp.compute.FirewallDenyArgs(protocol="all")],
                priority=900,
            )
        return firewall_rule(
            self,
            f"{name}-allow-webhooks",
            project=ctx.project,
            network=network_name,
            name=ctx.name("allow-webhooks"),
            description="GKE control plane to webhooks and APIServices on nodes (Kueue, JobSet)",
            source_ranges=[config.master_cidr],
            target_tags=[tag],
            allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=list(WEBHOOK_PORTS))],
        )

    def _node_network(
        self, name: str, ctx: StackContext, config: NetworkConfig, network: NodeNetwork
    ) -> NodeNetworkHandle:
        """A VPC and subnet for one additional NIC of TPU hosts, at the stack's MTU, and a rule
        that admits traffic from inside the subnet only. No NAT, no route out: a node's default
        route stays on its first NIC (Cluster Toolkit's multivpc module makes the same)."""
        vpc, subnet = vpc_with_subnet(
            self,
            project=ctx.project,
            region=ctx.region,
            cidr=network.cidr,
            mtu=config.node_network_mtu,
            description=f"TPU hosts' traffic on the additional node network {network.name}",
            vpc=(f"{name}-{network.name}-vpc", network.vpc),
            subnet=(f"{name}-{network.name}-subnet", network.subnet),
            firewall=(f"{name}-{network.name}-allow-dcn", f"{ctx.prefix}-{network.name}-allow-dcn"),
        )
        return NodeNetworkHandle(network=network, vpc_name=vpc.name, subnet_name=subnet.name)


def filestore_ip(instance: gcp.filestore.Instance) -> pulumi.Output[str]:
    """The address a Filestore instance serves NFS on: the first of its one network's."""
    return instance.networks.apply(lambda n: (n[0].ip_addresses or [""])[0] if n else "")
