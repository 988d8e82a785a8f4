"""The stack's network: a custom-mode VPC (or an existing one) at a jumbo MTU, a subnet with
named pods and services ranges and Private Google Access, Cloud Router + NAT so private nodes
and VMs can pull images, the firewall rules GKE private clusters need, and the additional node
networks (a VPC and subnet each) that TPU hosts take a second NIC in. Every system joins it
through a `NetworkHandle`. The NAT and firewall builders here also serve the networks GPU
clusters make for themselves.

What the user writes is `config.py`, its problems `checks.py`, the plan's section
`describe.py`; `firewall.py` and `vpc.py` hold the builders every system shares, and
`stack_network.py` the stack's own network component.
"""

from __future__ import annotations

from components.network.checks import (
    PREFIX_LIMITS,
    allow_problems,
    capacity_problems,
    name_problems,
    node_network_capacity_problems,
    overlap_problems,
    pods_per_node_prefix,
    problems,
)
from components.network.config import (
    DEFAULT_MTU,
    JUMBO_MTU,
    MAX_NODE_NETWORKS,
    MIN_MTU,
    NODE_NETWORK_NAME_MAX,
    PODS,
    PORT_PROTOCOLS,
    AuthorizedNetwork,
    Mtu,
    NetworkConfig,
    NodeNetwork,
    NodeNetworkConfig,
    NodeNetworkName,
    OpeningName,
    OpeningSource,
    PortOpening,
    PortSpec,
    Reachable,
)
from components.network.describe import (
    describe,
    mtu_change_notice,
)
from components.network.firewall import (
    ALL_INTERNAL,
    IAP_TCP_FORWARDING_RANGE,
    MAX_SOURCE_TAGS,
    SystemTags,
    firewall_rule,
    gke_node_tag,
    iap_ssh_rule,
    port_allows,
    system_tag,
)
from components.network.stack_network import (
    WEBHOOK_PORTS,
    Network,
    NetworkArgs,
    NetworkHandle,
    NodeNetworkHandle,
)
from components.network.vpc import (
    cloud_nat,
    consecutive_ranges,
    custom_vpc,
    filestore_ip,
    rdma_nics,
    subnet_in,
    subnet_name,
    subnet_of,
    vpc_with_subnet,
)

__all__ = [
    "ALL_INTERNAL",
    "DEFAULT_MTU",
    "IAP_TCP_FORWARDING_RANGE",
    "JUMBO_MTU",
    "MAX_NODE_NETWORKS",
    "MAX_SOURCE_TAGS",
    "MIN_MTU",
    "NODE_NETWORK_NAME_MAX",
    "PODS",
    "PORT_PROTOCOLS",
    "PREFIX_LIMITS",
    "WEBHOOK_PORTS",
    "AuthorizedNetwork",
    "Mtu",
    "Network",
    "NetworkArgs",
    "NetworkConfig",
    "NetworkHandle",
    "NodeNetwork",
    "NodeNetworkConfig",
    "NodeNetworkHandle",
    "NodeNetworkName",
    "OpeningName",
    "OpeningSource",
    "PortOpening",
    "PortSpec",
    "Reachable",
    "SystemTags",
    "allow_problems",
    "capacity_problems",
    "cloud_nat",
    "consecutive_ranges",
    "custom_vpc",
    "describe",
    "filestore_ip",
    "firewall_rule",
    "gke_node_tag",
    "iap_ssh_rule",
    "mtu_change_notice",
    "name_problems",
    "node_network_capacity_problems",
    "overlap_problems",
    "pods_per_node_prefix",
    "port_allows",
    "problems",
    "rdma_nics",
    "subnet_in",
    "subnet_name",
    "subnet_of",
    "system_tag",
    "vpc_with_subnet",
]
