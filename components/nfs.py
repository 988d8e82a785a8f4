"""Who mounts a Filestore share, for every system that creates one: the share's NFS exports
admit only its clients' ranges (`nfsExportOptions`), and a pair of egress rules keeps every
other VM of the network from its address, since the exports see addresses, not systems.
Slurm's /home and GPU clusters' shares use both; what a share holds and where it is mounted
stay with the system.
"""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_gcp as gcp

from components.base import Component
from components.network import firewall_rule

CLIENT_PRIORITY = 900
"""The clients' egress allow wins over the deny (1000) every other VM of the network gets."""


def export_options(
    clients: Sequence[str], *, root_squash: bool, read_only: bool = False
) -> list[gcp.filestore.InstanceFileSharesNfsExportOptionArgs]:
    """One export rule: `clients` (IPv4 ranges) read and write (or only read), root squashed
    unless the consumer needs root on the share. Without any rule Filestore serves every
    address of its network read-write with root (Filestore "Configure IP-based access
    control": the default export)."""
    return [
        gcp.filestore.InstanceFileSharesNfsExportOptionArgs(
            ip_ranges=list(clients),
            access_mode="READ_ONLY" if read_only else "READ_WRITE",
            squash_mode="ROOT_SQUASH" if root_squash else "NO_ROOT_SQUASH",
        )
    ]


def reserved_range(instance: gcp.filestore.Instance) -> pulumi.Output[str]:
    """The range Filestore takes in the network for the instance (its address is in it)."""
    return instance.networks.apply(lambda n: (n[0].reserved_ip_range or "") if n else "")


def client_rules(
    parent: Component,
    resource_name: str,
    *,
    project: str,
    network: pulumi.Input[str],
    name: str,
    share: gcp.filestore.Instance,
    client_tags: Sequence[str],
    description: str,
    destination: pulumi.Input[str] | None = None,
) -> list[gcp.compute.Firewall]:
    """Egress to the share from the VMs tagged `client_tags` only: every other VM of the
    network (GKE nodes, pods through them, other systems) is denied its range, or
    `destination` where the range is not one (a share reached through private services access
    names its allocation instead). Filestore itself takes no VPC firewall rule, so the
    clients' side is where the network holds it."""
    target = destination if destination is not None else reserved_range(share)
    deny = firewall_rule(
        parent,
        f"{resource_name}-deny",
        project=project,
        network=network,
        name=f"{name}-deny",
        description=f"{description}: no other VM of the network",
        destination_ranges=[target],
        denies=[gcp.compute.FirewallDenyArgs(protocol="all")],
        egress=True,
    )
    if not client_tags:
        # A rule with no target tags applies to every VM: a share nobody mounts yet is only
        # denied.
        return [deny]
    return [
        deny,
        firewall_rule(
            parent,
            f"{resource_name}-clients",
            project=project,
            network=network,
            name=f"{name}-clients",
            description=f"{description}: its clients",
            destination_ranges=[target],
            target_tags=list(client_tags),
            allows=[
                gcp.compute.FirewallAllowArgs(protocol="tcp"),
                gcp.compute.FirewallAllowArgs(protocol="udp"),
            ],
            egress=True,
            priority=CLIENT_PRIORITY,
        ),
    ]
