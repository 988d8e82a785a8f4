"""The stack's network as one component: the VPC (or an existing one), its subnet, router
and NAT, the rules GKE nodes need, `network.allow` openings and the additional node
networks; and the handles systems join it through.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp
from pydantic import Field, InstanceOf

from components.base import (
    Component,
    WiringModel,
)
from components.context import StackContext
from components.network.config import PODS, NetworkConfig, NodeNetwork
from components.network.firewall import (
    ALL_INTERNAL,
    MAX_SOURCE_TAGS,
    firewall_rule,
    gke_node_tag,
    iap_ssh_rule,
    port_allows,
)
from components.network.vpc import cloud_nat, custom_vpc, subnet_in, subnet_name

WEBHOOK_PORTS = ("443", "8082", "8443", "9443")
"""Pod ports the GKE control plane must reach: the Kueue and JobSet webhooks serve on 9443 and
Kueue's visibility APIServices on 8082, which the Kueue chart always installs (charts'
webhook/service.yaml and visibility/service.yaml targetPorts, workload/chart_facts.py)."""


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
        """A VPC and subnet for one additional NIC of TPU hosts, at the stack's MTU. No NAT, no
        route out: a node's default route stays on its first NIC (Cluster Toolkit's multivpc
        module makes the same). No rule here either: the GKE system admits each group of
        slices that may talk (`components/gke/dcn.py`), so the network is not flat."""
        vpc = custom_vpc(
            self,
            f"{name}-{network.name}-vpc",
            project=ctx.project,
            name=network.vpc,
            mtu=config.node_network_mtu,
        )
        subnet = subnet_in(
            self,
            f"{name}-{network.name}-subnet",
            project=ctx.project,
            region=ctx.region,
            name=network.subnet,
            network=vpc,
            cidr=network.cidr,
        )
        return NodeNetworkHandle(network=network, vpc_name=vpc.name, subnet_name=subnet.name)
