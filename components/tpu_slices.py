"""TPU slice node pools. A slice entry names an accelerator type; the catalog decides machine
type, topology and host count. Each multi-host slice is its own node pool (a slice is the unit
GKE provisions, repairs and upgrades); identical single-host slices share one pool.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_gcp as gcp
from pydantic import Field, SkipValidation, field_validator, model_validator

from components import tpu_catalog
from components.base import (
    Component,
    ConfigModel,
    DnsLabel,
    Provisioning,
    WiringModel,
    reservation_problems,
)
from components.gke import node_config

GKE_NODE_POOL_NAME_MAX = 40
CAPACITY_LABEL = "ai-infra/capacity"
"""Node label with the slice's provisioning; flex-start flavors select on it so that they
never claim nodes of the same shape that are not flex-start."""


class TpuSliceConfig(ConfigModel):
    """One entry of `ai-infra:tpuSlices`."""

    name: DnsLabel
    """Names the node pools (`<name>-0`, `<name>-1`, ...) and the Kueue flavor's slices."""
    accelerator: str
    """Cloud TPU accelerator type, e.g. `v5p-32`, `v5litepod-16`, `v6e-8`, `tpu7x-64`."""
    count: int = Field(default=1, ge=0)
    """Identical slices to create; 0 keeps the entry (and its queue flavor) with no nodes."""
    zone: str | None = None
    """Defaults to `gcp:zone`; must be in `gcp:region`."""
    provisioning: Provisioning = "on-demand"
    reservation: str | None = None
    """Reservation name (or `projects/P/reservations/R` for a shared one) when
    `provisioning: reservation`."""
    topology: str | None = None
    """Only where a size has several topologies (e.g. v5p-512: 4x8x8 or 4x4x16)."""

    @field_validator("accelerator")
    @classmethod
    def _known_accelerator(cls, value: str) -> str:
        tpu_catalog.resolve(value)
        return value

    @model_validator(mode="after")
    def _consistent(self) -> TpuSliceConfig:
        problems = []
        if self.topology is not None:
            try:
                tpu_catalog.resolve(self.accelerator, self.topology)
            except tpu_catalog.CatalogError as error:
                problems.append(f"@topology: {error}")
        problems += reservation_problems(self.provisioning, self.reservation)
        longest = f"{self.name}-{max(self.count - 1, 0)}"
        if len(longest) > GKE_NODE_POOL_NAME_MAX:
            problems.append(
                f"@name: node pool name '{longest}' is longer than GKE's "
                f"{GKE_NODE_POOL_NAME_MAX} characters; shorten the slice name"
            )
        if problems:
            raise ValueError("\n".join(problems))
        return self

    @property
    def shape(self) -> tpu_catalog.TpuShape:
        return tpu_catalog.resolve(self.accelerator, self.topology)

    @property
    def nodes(self) -> int:
        """Nodes all `count` slices of this entry run on."""
        return self.shape.hosts * self.count

    @property
    def chips(self) -> int:
        """Chips all `count` slices of this entry provide."""
        return self.shape.chips * self.count

    @property
    def pool_names(self) -> list[str]:
        """GKE node pool names: one per multi-host slice, one shared by single-host slices."""
        if self.shape.multi_host:
            return [f"{self.name}-{i}" for i in range(self.count)]
        return [self.name] if self.count else []


class TpuSliceArgs(WiringModel):
    project: str
    region: str
    zone: str
    prefix: str
    labels: dict[str, str]
    cluster_name: SkipValidation[pulumi.Output[str]]
    cluster_location: str
    node_service_account: str
    auto_upgrade: bool
    image_streaming: bool
    config: TpuSliceConfig


class TpuSlice(Component):
    """The node pools of one `tpuSlices` entry, and its workload policy where tpu7x needs one."""

    shape: tpu_catalog.TpuShape
    node_pools: list[gcp.container.NodePool]

    def __init__(self, name: str, args: TpuSliceArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ai-infra:tpu:Slice", name, opts)
        config = args.config
        shape = self.shape = config.shape
        flex_start = config.provisioning == "flex-start"

        placement = None
        if shape.needs_workload_policy and config.count > 0:
            policy = gcp.compute.ResourcePolicy(
                f"{name}-workload-policy",
                project=args.project,
                region=args.region,
                name=f"{args.prefix}-{config.name}",
                workload_policy=gcp.compute.ResourcePolicyWorkloadPolicyArgs(
                    type="HIGH_THROUGHPUT", accelerator_topology=shape.topology
                ),
                opts=self.child_opts(),
            )
            placement = gcp.container.NodePoolPlacementPolicyArgs(
                type="COMPACT", policy_name=policy.name
            )
        elif shape.multi_host:
            placement = gcp.container.NodePoolPlacementPolicyArgs(
                type="COMPACT", tpu_topology=shape.topology
            )

        if shape.multi_host:
            pools = [(f"{name}-{i}", pool, shape.hosts) for i, pool in enumerate(config.pool_names)]
        else:
            pools = [(f"{name}-pool", pool, config.count) for pool in config.pool_names]

        self.node_pools = []
        for resource_name, pool_name, nodes in pools:
            labels = {
                "ai-infra/pool": pool_name,
                "ai-infra/slice": config.name,
                CAPACITY_LABEL: config.provisioning,
            }
            if flex_start:
                # Dynamic Workload Scheduler creates the nodes when a ProvisioningRequest asks
                # for them; the pool rests at zero and must not be auto-repaired.
                sizing: dict[str, Any] = {
                    "initial_node_count": 0,
                    "autoscaling": gcp.container.NodePoolAutoscalingArgs(
                        total_min_node_count=0, total_max_node_count=nodes, location_policy="ANY"
                    ),
                    "queued_provisioning": gcp.container.NodePoolQueuedProvisioningArgs(
                        enabled=True
                    ),
                }
            else:
                sizing = {"node_count": nodes}
            self.node_pools.append(
                gcp.container.NodePool(
                    resource_name,
                    project=args.project,
                    cluster=args.cluster_name,
                    location=args.cluster_location,
                    name=pool_name,
                    node_locations=[args.zone],
                    placement_policy=placement,
                    management=gcp.container.NodePoolManagementArgs(
                        auto_repair=not flex_start, auto_upgrade=args.auto_upgrade
                    ),
                    # No surge: there is no spare TPU capacity to surge into.
                    upgrade_settings=gcp.container.NodePoolUpgradeSettingsArgs(
                        strategy="SURGE", max_surge=0, max_unavailable=1
                    ),
                    node_config=node_config(
                        service_account=args.node_service_account,
                        machine_type=shape.machine_type,
                        disk_size_gb=100,
                        disk_type=shape.family.boot_disk_type,
                        labels=labels,
                        resource_labels=args.labels,
                        image_streaming=args.image_streaming,
                        provisioning=config.provisioning,
                        reservation=config.reservation,
                    ),
                    opts=self.child_opts(),
                    **sizing,
                )
            )
        self.register_outputs(
            {
                "accelerator": shape.accelerator,
                "topology": shape.topology,
                "chips": config.chips,
                "nodePools": [p.name for p in self.node_pools],
            }
        )
