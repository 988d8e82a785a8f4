"""Firewall rules on the additional node networks: the hosts of one DCN group (the slices of
one Kueue flavor, or the TPU provisioner's pools) reach each other there on every port, and
nothing else reaches them. A multislice job runs on slices of one flavor; a team's own slices
(`tpuSlices[].team`) are a flavor, and so a group, of their own.
"""

from __future__ import annotations

import pulumi
from pydantic import InstanceOf

from components.base import Component, WiringModel
from components.gke.config import DcnGroup
from components.network import ALL_INTERNAL, NodeNetworkHandle, firewall_rule


class DcnRulesArgs(WiringModel):
    project: str
    prefix: str
    groups: list[DcnGroup]
    networks: dict[str, InstanceOf[NodeNetworkHandle]]
    """The stack's node networks, by name."""


class DcnRules(Component):
    """A rule per group and node network it attaches to: source and target the group's
    network tag, which its node pools (and the provisioner's, through GCP_NODE_TAGS) carry.
    Source tags match the address of a VM's NIC in the rule's own network (VPC firewall
    rules, "Sources for ingress rules"), which a NetDevice pod or a host-network pod sends
    from."""

    def __init__(self, name: str, args: DcnRulesArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ai-infra:gke:DcnRules", name, opts)
        for group in args.groups:
            for network in group.networks:
                handle = args.networks[network]
                firewall_rule(
                    self,
                    f"{name}-{network}-{group.id}",
                    project=args.project,
                    network=handle.vpc_name,
                    name=f"{args.prefix}-{network}-dcn-{group.id}",
                    description=f"DCN traffic among {', '.join(group.members)} on {network}",
                    source_tags=[group.tag],
                    target_tags=[group.tag],
                    allows=ALL_INTERNAL,
                )
        self.register_outputs({"groups": [g.id for g in args.groups]})
