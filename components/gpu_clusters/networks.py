"""A GPU cluster's networks: the stack's VPC, a VPC of its own, one VPC per NIC, or host VPCs
plus an RDMA VPC with the zone's RoCE profile, with NAT and IAP-only SSH on the host NIC; and its
Filestore shares on the host NIC's VPC, exported to the host subnet only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pulumi
import pulumi_gcp as gcp

from catalog import gpu as gpu_catalog
from components.base import Component
from components.gpu_clusters import metadata
from components.gpu_clusters.config import NfsShare
from components.network import (
    ALL_INTERNAL,
    cloud_nat,
    filestore_ip,
    firewall_rule,
    iap_ssh_rule,
    rdma_nics,
    system_tag,
    vpc_with_subnet,
)
from components.nfs import client_rules, export_options

if TYPE_CHECKING:
    from components.gpu_clusters.cluster import GpuClusterArgs


def network_tag(base: str) -> str:
    """The tag the firewall rules name a GPU cluster's VMs by: on the stack's network, its
    VMs (and Ray's ports, which run unauthenticated) reach each other and nothing else does."""
    return system_tag(base, "gpu-vm")


def networks(
    parent: Component, name: str, args: GpuClusterArgs, base: str, zone: str
) -> tuple[list[gcp.compute.InstanceTemplateNetworkInterfaceArgs], list[pulumi.Input[str]]]:
    """The template's NICs and the names of the host VPCs behind them (the first one
    carries NAT, IAP SSH and Filestore)."""
    config = args.config
    nic_type = "GVNIC" if config.gvnic else "VIRTIO_NET"
    if config.network == "default":
        network = args.network
        tag = network_tag(base)
        firewall_rule(
            parent,
            f"{name}-internal",
            project=args.context.project,
            network=network.name,
            name=f"{tag}-internal",
            description=f"GPU cluster {config.name}: its VMs to each other (Ray included)",
            source_tags=[tag],
            target_tags=[tag],
            allows=ALL_INTERNAL,
        )
        return [
            gcp.compute.InstanceTemplateNetworkInterfaceArgs(
                network=network.self_link,
                subnetwork=network.subnet_self_link,
                nic_type=nic_type,
            )
        ], [network.name]
    layout = config.nic_layout
    cidrs = config.nic_cidrs()
    own_vpcs = layout.host_nics if layout is not None and layout.rdma else len(cidrs)
    nics: list[gcp.compute.InstanceTemplateNetworkInterfaceArgs] = []
    names: list[pulumi.Input[str]] = []
    for k, cidr in enumerate(cidrs[:own_vpcs]):
        mtu = None
        if layout is not None:
            mtu = layout.host_mtu if k < layout.host_nics else layout.gpu_mtu
        vpc, subnet = _vpc(parent, name, args, base, k, cidr, mtu)
        nics.append(
            gcp.compute.InstanceTemplateNetworkInterfaceArgs(
                network=vpc.self_link, subnetwork=subnet.self_link, nic_type=nic_type
            )
        )
        names.append(vpc.name)
        if k == 0:
            _egress(parent, name, args, base, vpc, subnet)
    if layout is not None and layout.rdma:
        nics += _rdma(parent, name, base, args, zone, layout, cidrs[own_vpcs:])
    return nics, names


def _vpc(
    parent: Component,
    name: str,
    args: GpuClusterArgs,
    base: str,
    k: int,
    cidr: str,
    mtu: int | None,
) -> tuple[gcp.compute.Network, gcp.compute.Subnetwork]:
    """VPC `k` with its one subnet, and traffic allowed between the cluster's VMs on it."""
    ctx = args.context
    return vpc_with_subnet(
        parent,
        project=ctx.project,
        region=ctx.region,
        cidr=cidr,
        mtu=mtu,
        description=f"Traffic between the GPU cluster {args.config.name}'s VMs on NIC {k}",
        vpc=(f"{name}-net{k}", f"{base}-net{k}"),
        subnet=(f"{name}-subnet{k}", f"{base}-subnet{k}"),
        firewall=(f"{name}-internal{k}", f"{base}-internal{k}"),
        private_google_access=True,
    )


def _rdma(
    parent: Component,
    name: str,
    base: str,
    args: GpuClusterArgs,
    zone: str,
    layout: gpu_catalog.GpuNicLayout,
    cidrs: list[str],
) -> list[gcp.compute.InstanceTemplateNetworkInterfaceArgs]:
    """The RDMA NICs: MRDMA NICs on one VPC with the zone's RoCE network profile, a
    subnet each (network.rdma_nics)."""
    ctx = args.context
    return rdma_nics(
        parent,
        f"{name}-rdma",
        project=ctx.project,
        region=ctx.region,
        name=f"{base}-rdma",
        mtu=layout.gpu_mtu,
        profile=gpu_catalog.roce_profile(ctx.project, zone),
        cidrs=cidrs,
    )


def _egress(
    parent: Component,
    name: str,
    args: GpuClusterArgs,
    base: str,
    vpc: gcp.compute.Network,
    subnet: gcp.compute.Subnetwork,
) -> None:
    """NAT for the host NIC (the VMs have no public IP) and SSH through IAP only."""
    ctx = args.context
    cloud_nat(
        parent,
        name,
        project=ctx.project,
        region=ctx.region,
        base=base,
        network=vpc.self_link,
        subnet=subnet.self_link,
    )
    iap_ssh_rule(
        parent,
        f"{name}-iap-ssh",
        project=ctx.project,
        network=vpc.name,
        name=f"{base}-iap-ssh",
        description="SSH to the GPU cluster's VMs through Identity-Aware Proxy only",
    )


def shares(
    parent: Component,
    name: str,
    args: GpuClusterArgs,
    zone: str,
    base: str,
    labels: dict[str, str],
    network_name: pulumi.Input[str],
    host_cidr: str,
) -> list[tuple[NfsShare, pulumi.Output[str]]]:
    """A Filestore instance per share, on the host NIC's VPC (Filestore takes its name),
    exported to the host subnet only. Root is not squashed: the share's root directory
    is root's, and the VMs' users reach it through sudo (OS Login admins) to make their
    directories; a squashed root could write nothing there. On the stack's network, where
    other systems' VMs share the subnet, egress rules keep them from it."""
    ctx = args.context
    config = args.config
    shares = []
    for k, share in enumerate(config.nfs_shares):
        instance = gcp.filestore.Instance(
            f"{name}-nfs{k}",
            project=ctx.project,
            name=f"{base}-nfs{k}",
            # Enterprise instances are regional (Filestore "Service tiers").
            location=ctx.region if share.tier == "ENTERPRISE" else zone,
            tier=share.tier,
            file_shares=gcp.filestore.InstanceFileSharesArgs(
                name=metadata.NFS_SHARE,
                capacity_gb=share.size_gb,
                nfs_export_options=export_options([host_cidr], root_squash=False),
            ),
            networks=[gcp.filestore.InstanceNetworkArgs(network=network_name, modes=["MODE_IPV4"])],
            labels=labels,
            opts=parent.child_opts(protect=ctx.protect),
        )
        if config.network == "default":
            client_rules(
                parent,
                f"{name}-nfs{k}",
                project=ctx.project,
                network=network_name,
                name=f"{base}-nfs{k}",
                share=instance,
                client_tags=[network_tag(base)],
                description=f"GPU cluster {config.name}'s share {k}",
            )
        ip = filestore_ip(instance)
        shares.append((share, ip))
    return shares
