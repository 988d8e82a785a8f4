"""GKE GPU node pools: a machine type with attached NVIDIA GPUs and GKE-managed drivers.
GPU clusters as managed instance groups (multi-NIC, compact placement) are a separate, later
component; this one covers GPUs scheduled by Kubernetes.
"""

from __future__ import annotations

from typing import Literal

import pulumi
import pulumi_gcp as gcp
from pydantic import Field

from components.base import (
    Component,
    ConfigModel,
    DnsLabel,
    Problem,
    Provisioning,
    Reservation,
    WiringModel,
    reservation_problems,
)
from components.gke import (
    MAX_NODES_PER_POOL,
    ClusterHandle,
    MachineType,
    node_config,
    pool_sizing,
)
from components.gpu_catalog import boot_disk_problem, gpu_problem

GPU_RESOURCE = "nvidia.com/gpu"
GPU_MAX_PODS_PER_NODE = 32
"""Room for a pod per GPU plus GKE's daemonsets: a /26 of the pods range per node (xpk uses
32 for A3 pools) instead of the /24 of GKE's default 110."""


class GpuPoolConfig(ConfigModel):
    """One entry of `ai-infra:gpuPools`."""

    name: DnsLabel
    """The GKE node pool's name."""
    machine_type: MachineType
    """Machine type of the nodes, e.g. `g2-standard-24`, `a3-highgpu-8g`; machine types with
    built-in GPUs must match `acceleratorType` and `acceleratorCount`."""
    accelerator_type: str
    """GKE accelerator type, e.g. `nvidia-l4`, `nvidia-h100-80gb`."""
    accelerator_count: int = Field(default=1, ge=1, le=16)
    """GPUs per node."""
    driver_version: Literal["DEFAULT", "LATEST", "INSTALLATION_DISABLED"] = "DEFAULT"
    """GKE-managed NVIDIA driver; INSTALLATION_DISABLED if you install drivers yourself."""
    zone: str | None = None
    """Defaults to `gcp:zone`; must be in `gcp:region`."""
    min_nodes: int = Field(default=0, ge=0, le=MAX_NODES_PER_POOL)
    """Autoscaling floor across the pool's zone."""
    max_nodes: int = Field(default=1, ge=0, le=MAX_NODES_PER_POOL)
    """Autoscaling ceiling across the pool's zone; the pool's GPUs at this size are what
    teams' quotas share."""
    provisioning: Provisioning = "on-demand"
    """`on-demand`, `spot`, `reservation` (naming `reservation`) or `flex-start`, as for TPU
    slices."""
    reservation: Reservation | None = None
    """Reservation name (or `projects/P/reservations/R`) when `provisioning: reservation`."""
    disk_size_gb: int = Field(default=200, ge=10, le=65536)
    """Boot disk size of each node, in GB."""
    disk_type: Literal["pd-balanced", "pd-ssd", "hyperdisk-balanced"] = "pd-balanced"
    """Boot disk type of each node; a3-ultragpu, a4 and a4x boot only from
    hyperdisk-balanced."""
    max_pods_per_node: int = Field(default=GPU_MAX_PODS_PER_NODE, ge=8, le=256)
    """Pods per GPU node; sizes each node's block of `network.podsCidr` (a /26 at 32)."""

    @property
    def gpus(self) -> int:
        """GPUs the pool provides at its largest."""
        return self.max_nodes * self.accelerator_count


def problems(pools: list[GpuPoolConfig]) -> list[Problem]:
    """Per-entry checks of `ai-infra:gpuPools`, each at `[i].<field>`."""
    found = []
    for i, config in enumerate(pools):
        if config.max_nodes < config.min_nodes:
            found.append(
                Problem((i, "maxNodes"), f"{config.max_nodes} is below minNodes {config.min_nodes}")
            )
        if config.provisioning == "flex-start" and config.min_nodes:
            found.append(
                Problem(
                    (i, "minNodes"),
                    "flex-start pools rest at 0 nodes and grow per provisioning request; set "
                    "minNodes: 0",
                )
            )
        found += [p.under(i) for p in reservation_problems(config.provisioning, config.reservation)]
        if problem := gpu_problem(
            config.machine_type, config.accelerator_type, config.accelerator_count
        ):
            found.append(Problem((i, "acceleratorType"), problem))
        if problem := boot_disk_problem(config.machine_type, config.disk_type):
            found.append(Problem((i, "diskType"), f"{problem}; set diskType accordingly"))
    return found


class GpuPoolArgs(WiringModel):
    cluster: ClusterHandle
    zone: str
    """The pool's zone, resolved from the entry or `gcp:zone`."""
    config: GpuPoolConfig


class GpuPool(Component):
    """One autoscaled GPU node pool in one zone."""

    node_pool: gcp.container.NodePool

    def __init__(self, name: str, args: GpuPoolArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ai-infra:gpu_pools:GpuPool", name, opts)
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
            node_locations=[args.zone],
            management=gcp.container.NodePoolManagementArgs(
                auto_repair=not flex_start, auto_upgrade=cluster.auto_upgrade
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
