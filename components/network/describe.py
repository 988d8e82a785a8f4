"""What the plan shows of the network: the VPCs with their MTU and ranges, and what an MTU
change does to running VMs.
"""

from __future__ import annotations

from collections.abc import Sequence

from components.network.config import NetworkConfig


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
