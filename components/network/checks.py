"""The problems of `ai-infra:network`: ranges GKE takes and that overlap nothing, additional
node networks that hold every node, pods-range capacity, and `allow` entries that open a
system the stack has.
"""

from __future__ import annotations

import ipaddress
import itertools
from collections.abc import Iterable, Mapping, Sequence

from components.base import (
    Problem,
    duplicate_names,
)
from components.network.config import PODS, NetworkConfig
from components.network.firewall import SystemTags
from components.ranges import Blocks, covers_internet


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
    found += _authorized_problems(config)
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


def _authorized_problems(config: NetworkConfig) -> list[Problem]:
    """The control plane's authorized networks, judged as GKE admits them: by the union of
    the ranges, so halves of the address space are as open as 0.0.0.0/0."""
    networks = config.authorized_networks
    alone = [
        Problem(
            ("authorizedNetworks", i, "cidr"),
            f"{n.cidr} admits every internet address, which opens the control plane to the "
            "whole internet; list the ranges `pulumi up` and kubectl run from",
        )
        for i, n in enumerate(networks)
        if covers_internet([n.cidr])
    ]
    if alone or not covers_internet(n.cidr for n in networks):
        return alone
    return [
        Problem(
            ("authorizedNetworks",),
            "these ranges together admit every internet address, which opens the control "
            "plane to the whole internet; list the ranges `pulumi up` and kubectl run from",
        )
    ]


def _node_network_problems(config: NetworkConfig, ranges: dict[str, str]) -> list[Problem]:
    """The additional node networks (how many is the model's bound): their names, and subnets
    that GKE takes and that overlap no other range of the network (GKE: the networks of one
    cluster must not overlap, "Set up multi-network support for Pods")."""
    networks = config.additional_node_networks
    found = [
        p.under("additionalNodeNetworks")
        for p in duplicate_names([n.name for n in networks], "additionalNodeNetworks")
    ]
    widest, narrowest = PREFIX_LIMITS["subnetCidr"]
    taken = Blocks()
    written = dict(ranges)
    for key, other in ranges.items():
        taken.add(ipaddress.IPv4Network(other), key)
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
        if (key := taken.first_overlap(cidr)) is not None:
            found.append(
                Problem(
                    path,
                    f"{network.subnet_cidr} overlaps {key} {written[key]}; GKE needs every network "
                    "of a cluster disjoint: pick a free range",
                )
            )
        written[f"additionalNodeNetworks[{i}]"] = network.subnet_cidr
        taken.add(cidr, f"additionalNodeNetworks[{i}]")
    return found


def name_problems(config: NetworkConfig, prefix: str) -> list[Problem]:
    """An `existingVpc` named like a VPC the program creates for a node network, whose
    creation would fail on a name already taken."""
    found = []
    resolved = config.node_networks(prefix)
    for i, network in enumerate(config.additional_node_networks):
        if config.existing_vpc == resolved[network.name].vpc:
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


def allow_problems(config: NetworkConfig, tags: SystemTags, *, gke: bool) -> list[Problem]:
    """`allow[i]` problems: a name used twice, a system the stack has no VMs of on its
    network, sources that together admit the internet, `pods` without a GKE cluster."""
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
        if covers_internet(s for s in opening.sources if s != PODS):
            found.append(
                Problem(
                    ("allow", i, "sources"),
                    "these ranges together admit every internet address (a firewall rule "
                    f"admits the union of its sources), opening {opening.to} to the whole "
                    "internet; name the ranges that need it",
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
    return found + _union_problems(config)


REACHES: dict[str, tuple[str, ...]] = {
    "slurmController": ("slurm", "slurmController"),
    "slurmLogin": ("slurm", "slurmLogin"),
    "slurm": ("slurm",),
    "gpuClusters": ("gpuClusters",),
    "tpuVms": ("tpuVms",),
}
"""Each group of VMs -> the `to` values whose rules admit traffic to it (`slurm` opens every
VM of the cluster, its controller and logins included)."""


def _union_problems(config: NetworkConfig) -> list[Problem]:
    """Rules that together admit the internet to one group of VMs, each alone not: VPC
    firewall rules add up, so two entries opening halves of the address space open all of it.
    Near-linear: one union per group of VMs."""
    found = []
    said: set[tuple[int, ...]] = set()
    for group, reached_by in REACHES.items():
        entries = [
            (i, a)
            for i, a in enumerate(config.allow)
            if a.to in reached_by and not covers_internet(s for s in a.sources if s != PODS)
        ]
        if len(entries) < 2 or tuple(i for i, _ in entries) in said:
            continue
        said.add(tuple(i for i, _ in entries))
        if covers_internet(s for _, a in entries for s in a.sources if s != PODS):
            names = ", ".join(f"allow[{i}] ({a.name})" for i, a in entries)
            found.append(
                Problem(
                    ("allow",),
                    f"{names} together admit every internet address to the {group} VMs (VPC "
                    "firewall rules add up); name the ranges that need them",
                )
            )
    return found
