"""VPC firewall rules as every system writes them: one builder, the network tags that name
each system's VMs, and SSH from Identity-Aware Proxy only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pulumi
import pulumi_gcp as gcp

from components.base import (
    Component,
)

IAP_TCP_FORWARDING_RANGE = "35.235.240.0/20"
"""Source range of Identity-Aware Proxy TCP forwarding (SSH through IAP)."""


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
