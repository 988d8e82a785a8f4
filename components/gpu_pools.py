"""GKE GPU node pools: a machine type with attached NVIDIA GPUs and GKE-managed drivers.
GPU clusters as managed instance groups (multi-NIC, compact placement) are a separate, later
component; this one covers GPUs scheduled by Kubernetes.
"""

from __future__ import annotations

from typing import Any, Literal

import pulumi
import pulumi_gcp as gcp
from pydantic import Field, SkipValidation, model_validator

from components.base import (
    Component,
    ConfigModel,
    DnsLabel,
    Provisioning,
    WiringModel,
    reservation_problems,
)
from components.gke import node_config

GPU_RESOURCE = "nvidia.com/gpu"


class GpuPoolConfig(ConfigModel):
    """One entry of `ai-infra:gpuPools`."""

    name: DnsLabel
    machine_type: str
    """e.g. `g2-standard-24`, `a3-highgpu-8g`."""
    accelerator_type: str
    """GKE accelerator type, e.g. `nvidia-l4`, `nvidia-h100-80gb`."""
    accelerator_count: int = Field(default=1, ge=1, le=16)
    """GPUs per node."""
    driver_version: Literal["DEFAULT", "LATEST", "INSTALLATION_DISABLED"] = "DEFAULT"
    """GKE-managed NVIDIA driver; INSTALLATION_DISABLED if you install drivers yourself."""
    zone: str | None = None
    min_nodes: int = Field(default=0, ge=0)
    max_nodes: int = Field(default=1, ge=0)
    provisioning: Provisioning = "on-demand"
    reservation: str | None = None
    disk_size_gb: int = Field(default=200, ge=10)
    disk_type: Literal["pd-balanced", "pd-ssd", "hyperdisk-balanced"] = "pd-balanced"

    @model_validator(mode="after")
    def _consistent(self) -> GpuPoolConfig:
        problems = []
        if self.max_nodes < self.min_nodes:
            problems.append(f"@maxNodes: {self.max_nodes} is below minNodes {self.min_nodes}")
        if self.provisioning == "flex-start" and self.min_nodes:
            problems.append(
                "@minNodes: flex-start pools rest at 0 nodes and grow per provisioning "
                "request; set minNodes: 0"
            )
        problems += reservation_problems(self.provisioning, self.reservation)
        if problems:
            raise ValueError("\n".join(problems))
        return self

    @property
    def gpus(self) -> int:
        """GPUs the pool provides at its largest."""
        return self.max_nodes * self.accelerator_count


class GpuPoolArgs(WiringModel):
    project: str
    zone: str
    labels: dict[str, str]
    cluster_name: SkipValidation[pulumi.Output[str]]
    cluster_location: str
    node_service_account: str
    auto_upgrade: bool
    image_streaming: bool
    config: GpuPoolConfig


class GpuPool(Component):
    """One autoscaled GPU node pool in one zone."""

    node_pool: gcp.container.NodePool

    def __init__(self, name: str, args: GpuPoolArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ai-infra:gpu:Pool", name, opts)
        config = args.config
        flex_start = config.provisioning == "flex-start"
        sizing: dict[str, Any] = {
            "initial_node_count": 0 if flex_start else config.min_nodes,
            "autoscaling": gcp.container.NodePoolAutoscalingArgs(
                total_min_node_count=config.min_nodes,
                total_max_node_count=config.max_nodes,
                location_policy="ANY",
            ),
        }
        if flex_start:
            sizing["queued_provisioning"] = gcp.container.NodePoolQueuedProvisioningArgs(
                enabled=True
            )
        self.node_pool = gcp.container.NodePool(
            f"{name}-pool",
            project=args.project,
            cluster=args.cluster_name,
            location=args.cluster_location,
            name=config.name,
            node_locations=[args.zone],
            management=gcp.container.NodePoolManagementArgs(
                auto_repair=not flex_start, auto_upgrade=args.auto_upgrade
            ),
            node_config=node_config(
                service_account=args.node_service_account,
                machine_type=config.machine_type,
                disk_size_gb=config.disk_size_gb,
                disk_type=config.disk_type,
                labels={"ai-infra/pool": config.name},
                resource_labels=args.labels,
                image_streaming=args.image_streaming,
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
            opts=self.child_opts(ignore_changes=["initialNodeCount"]),
            **sizing,
        )
        self.register_outputs({"nodePool": self.node_pool.name})
