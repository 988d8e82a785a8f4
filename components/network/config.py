"""What the user writes under `ai-infra:network`: the address plan, control-plane access,
the additional node networks TPU hosts take a NIC in, and `allow` openings; and the MTU facts
they are checked against.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, StringConstraints

from components.base import (
    MAX_AUTHORIZED_NETWORKS,
    MAX_OPENINGS,
    MAX_SOURCES,
    ConfigModel,
    described,
)
from components.types import Cidr, DnsLabel, GceName

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
"""Keeps `<prefix>-<name>-dcn-<group>`, the longest name derived from it (a DCN group's rule,
components/gke/config.py DCN_GROUP_MAX), within 63 characters."""


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
    sources: list[OpeningSource] = Field(min_length=1, max_length=MAX_SOURCES)
    """Who: `pods` (the GKE cluster's pods range: every pod of every team, so prefer a
    service with its own authentication) and IPv4 ranges; never 0.0.0.0/0."""
    ports: list[PortSpec] = Field(min_length=1, max_length=MAX_OPENINGS)
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
    authorized_networks: list[AuthorizedNetwork] = Field(
        default_factory=list, max_length=MAX_AUTHORIZED_NETWORKS
    )
    """Ranges allowed to reach the public control-plane endpoint (where `pulumi up` runs).
    Empty means only addresses inside the VPC reach it."""
    mtu: Mtu | None = None
    """MTU of the VPC and the additional node networks, 1300 to 8896 bytes. Unset is 8896, the
    jumbo frames multislice DCN traffic is meant to run on; set 1460 for Google's default. A
    running VM keeps the MTU it booted with until it is stopped and started. Not with
    `existingVpc`, whose MTU is its own."""
    additional_node_networks: list[NodeNetworkConfig] = Field(
        default_factory=list, max_length=MAX_NODE_NETWORKS
    )
    """VPCs for a second (third, ...) NIC on TPU hosts, at most 7: each gets a subnet, a
    firewall rule per group of slices that may talk (the slices of one Kueue flavor, or the
    TPU provisioner's pools) admitting that group from itself only, and the cluster
    multi-networking. v6e and tpu7x
    slices attach to every one unless they list their own, and so do the TPU provisioner's
    pools when every shape of its quota is v6e or tpu7x (unless it names its own)."""
    allow: list[PortOpening] = Field(default_factory=list, max_length=MAX_OPENINGS)
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
