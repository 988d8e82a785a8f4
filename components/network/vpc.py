"""VPCs, subnets and NAT: the builders the stack's network, GPU NIC networks, additional node
networks and Slurm's RDMA networks are made of, and the names subnets are known by.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

import pulumi
import pulumi_gcp as gcp

from components.base import (
    Component,
)
from components.network.firewall import ALL_INTERNAL, firewall_rule


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


def filestore_ip(instance: gcp.filestore.Instance) -> pulumi.Output[str]:
    """The address a Filestore instance serves NFS on: the first of its one network's."""
    return instance.networks.apply(lambda n: (n[0].ip_addresses or [""])[0] if n else "")
