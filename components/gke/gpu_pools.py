"""GKE GPU node pools: a machine type with attached NVIDIA GPUs and GKE-managed drivers, and
for A3 High, A3 Mega, A3 Ultra and A4 the GPU NICs of their fast path (gpu_direct.py), each an
additional node network in a VPC of its own (RDMA's NICs share one with the zone's RoCE
profile). GPU clusters outside Kubernetes are `ai-infra:gpuClusters`.
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp
from pydantic import InstanceOf

from catalog.gpu import roce_profile
from components.base import Component, WiringModel
from components.context import StackContext
from components.gke.cluster import ClusterHandle
from components.gke.config import GpuPoolConfig
from components.gke.gpu_direct import GpuNetwork, network_names
from components.gke.node_pools import node_config, pool_sizing
from components.gke.pod_networks import DEVICE_MODE, RDMA_DEVICE_MODE
from components.network import custom_vpc, subnet_in, vpc_with_subnet


class GpuPoolArgs(WiringModel):
    context: InstanceOf[StackContext]
    cluster: InstanceOf[ClusterHandle]
    config: GpuPoolConfig


class GpuPool(Component):
    """One autoscaled GPU node pool in one zone, with its GPU NICs' networks."""

    node_pool: gcp.container.NodePool
    networks: list[GpuNetwork]
    """GKE's view of the GPU NICs, for the pod network objects; empty without a fast path."""

    def __init__(self, name: str, args: GpuPoolArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ai-infra:gke:GpuPool", name, opts)
        cluster = args.cluster
        config = args.config
        self.networks = self._gpu_networks(name, args)
        network_config = None
        if self.networks:
            # ForceNew, as for TPU slices: a pool's NICs are fixed when it is created.
            network_config = gcp.container.NodePoolNetworkConfigArgs(
                additional_node_network_configs=[
                    gcp.container.NodePoolNetworkConfigAdditionalNodeNetworkConfigArgs(
                        network=n.vpc, subnetwork=n.subnet
                    )
                    for n in self.networks
                ]
            )
        flex_start = config.provisioning == "flex-start"
        sizing = pool_sizing(config.max_nodes, min_nodes=config.min_nodes, flex_start=flex_start)
        self.node_pool = gcp.container.NodePool(
            f"{name}-pool",
            project=cluster.project,
            cluster=cluster.name,
            location=cluster.location,
            name=config.name,
            node_locations=[args.context.zone_of(config.zone)],
            # Upgraded on any channel, or none: only TPU slices hold upgrades off.
            management=gcp.container.NodePoolManagementArgs(
                auto_repair=not flex_start, auto_upgrade=True
            ),
            # A reservation has no spare machine for a surge node: replace one node at a time
            # (GKE counts upgrade nodes against the reservation, "Ensure resources for node
            # upgrades").
            upgrade_settings=(
                gcp.container.NodePoolUpgradeSettingsArgs(
                    strategy="SURGE", max_surge=0, max_unavailable=1
                )
                if config.provisioning == "reservation"
                else None
            ),
            max_pods_per_node=config.max_pods_per_node,
            node_config=node_config(
                service_account=cluster.node_service_account,
                machine_type=config.machine_type,
                disk_size_gb=config.disk_size_gb,
                disk_type=config.disk_type,
                labels={"ai-infra/pool": config.name},
                resource_labels=cluster.resource_labels,
                tags=cluster.node_tags,
                image_streaming=cluster.image_streaming,
                provisioning=config.provisioning,
                reservation=config.reservation,
                guest_accelerators=[
                    gcp.container.NodePoolNodeConfigGuestAcceleratorArgs(
                        type=config.accelerator_type,
                        count=config.accelerator_count,
                        gpu_driver_installation_config=(
                            gcp.container.NodePoolNodeConfigGuestAcceleratorGpuDriverInstallationConfigArgs(
                                gpu_driver_version=config.driver_version
                            )
                        ),
                    )
                ],
            ),
            network_config=network_config,
            initial_node_count=sizing.initial_node_count,
            autoscaling=sizing.autoscaling,
            queued_provisioning=sizing.queued_provisioning,
            # A pool's NICs are fixed when it is created, and the provider does not replace
            # it when they go (the block is computed): their change replaces the pool,
            # deleting first, as the new pool takes the same name.
            opts=self.child_opts(
                ignore_changes=["initialNodeCount"],
                replace_on_changes=["networkConfig"],
                delete_before_replace=True,
            ),
        )
        self.register_outputs(
            {"nodePool": self.node_pool.name, "gpuNetworks": [n.name for n in self.networks]}
        )

    def _gpu_networks(self, name: str, args: GpuPoolArgs) -> list[GpuNetwork]:
        """The GPU NICs' VPCs and subnets, at the layout's MTUs: a VPC each for TCPX's and
        TCPXO's gVNICs and RDMA's second gVNIC, with traffic allowed inside its subnet; and
        for RDMA one VPC with the zone's RoCE network profile and a subnet per MRDMA NIC
        (Cluster Toolkit v1.95.0 gke-a3-ultragpu and gke-a4: no firewall rules there)."""
        config, ctx = args.config, args.context
        layout = config.fast_path
        if layout is None:
            return []
        subnets = config.gpu_subnets()
        names = network_names(config.name, layout)
        base = f"{ctx.prefix}-{config.name}"
        gvnics = layout.host_nics - 1 if layout.rdma else layout.gpu_nics
        found = []
        for k in range(gvnics):
            vpc, subnet = vpc_with_subnet(
                self,
                project=ctx.project,
                region=ctx.region,
                cidr=subnets[k],
                mtu=layout.host_mtu if layout.rdma else layout.gpu_mtu,
                description=f"GPU NIC {k + 1} of the GKE pool {config.name}",
                vpc=(f"{name}-gpu{k}-vpc", f"{base}-gpu{k}-vpc"),
                subnet=(f"{name}-gpu{k}-subnet", f"{base}-gpu{k}-subnet"),
                firewall=(f"{name}-gpu{k}-internal", f"{base}-gpu{k}-internal"),
            )
            found.append(GpuNetwork(names[k], vpc.name, subnet.name, DEVICE_MODE))
        if layout.rdma:
            zone = ctx.zone_of(config.zone)
            rdma = custom_vpc(
                self,
                f"{name}-rdma-vpc",
                project=ctx.project,
                name=f"{base}-rdma-vpc",
                mtu=layout.gpu_mtu,
                profile=roce_profile(ctx.project, zone),
            )
            for j, cidr in enumerate(subnets[gvnics:]):
                subnet = subnet_in(
                    self,
                    f"{name}-rdma{j}-subnet",
                    project=ctx.project,
                    region=ctx.region,
                    name=f"{base}-rdma{j}-subnet",
                    network=rdma,
                    cidr=cidr,
                )
                found.append(
                    GpuNetwork(names[gvnics + j], rdma.name, subnet.name, RDMA_DEVICE_MODE)
                )
        return found
