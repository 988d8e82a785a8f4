"""GKE GPU node pools: a machine type with attached NVIDIA GPUs and GKE-managed drivers. GPU
clusters outside Kubernetes are `ai-infra:gpuClusters`.
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp
from pydantic import InstanceOf

from components.base import Component, WiringModel
from components.context import StackContext
from components.gke.cluster import ClusterHandle
from components.gke.config import GpuPoolConfig
from components.gke.node_pools import node_config, pool_sizing


class GpuPoolArgs(WiringModel):
    context: InstanceOf[StackContext]
    cluster: InstanceOf[ClusterHandle]
    config: GpuPoolConfig


class GpuPool(Component):
    """One autoscaled GPU node pool in one zone."""

    node_pool: gcp.container.NodePool

    def __init__(self, name: str, args: GpuPoolArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ai-infra:gke:GpuPool", name, opts)
        cluster = args.cluster
        config = args.config
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
            initial_node_count=sizing.initial_node_count,
            autoscaling=sizing.autoscaling,
            queued_provisioning=sizing.queued_provisioning,
            opts=self.child_opts(ignore_changes=["initialNodeCount"]),
        )
        self.register_outputs({"nodePool": self.node_pool.name})
