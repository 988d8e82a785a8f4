"""TPU slice node pools. A slice entry names an accelerator type; the catalog decides machine
type, topology and host count. Each multi-host slice is its own node pool (a slice is the unit
GKE provisions, repairs and upgrades); identical single-host slices share one pool.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import pulumi
import pulumi_gcp as gcp
from pydantic import AfterValidator, Field

from components import tpu_catalog
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
from components.gke import ClusterHandle, hold_upgrades, node_config, pool_sizing

GKE_NODE_POOL_NAME_MAX = 40
MAX_SLICES_PER_ENTRY = 256
"""A bound of this program's, so that a typo in `count` is refused before anything is
enumerated; more identical slices belong in several entries."""
TPU_MAX_PODS_PER_NODE = 16
"""A TPU host runs one workload pod plus GKE's daemonsets; 16 pods take a /27 of the pods
range instead of the /24 of GKE's default 110 (xpk uses 15 for multi-host TPU pools)."""
CAPACITY_LABEL = "ai-infra/capacity"
"""Node label with the slice's provisioning; flex-start flavors select on it so that they
never claim nodes of the same shape that are not flex-start."""


def _accelerator(value: str) -> str:
    if not tpu_catalog.resolve(value).family.gke:
        raise ValueError(
            f"'{value}' has no GKE node pools here (GKE never offered v2, and v3's GKE machine "
            "types are not in the catalog); create it as a TPU VM in ai-infra:tpuVms"
        )
    return value


Accelerator = Annotated[str, AfterValidator(_accelerator)]
"""A Cloud TPU accelerator type the catalog knows, e.g. `v5p-32`."""


class TpuSliceConfig(ConfigModel):
    """One entry of `ai-infra:tpuSlices`."""

    name: DnsLabel
    """Names the node pools: `<name>-0`, `<name>-1`, ... for multi-host slices; single-host
    slices share one pool `<name>`."""
    accelerator: Accelerator
    """Cloud TPU accelerator type, e.g. `v5p-32`, `v5litepod-16`, `v6e-8`, `tpu7x-64`. The
    suffix counts TensorCores for v4, v5p and tpu7x, chips for v5e (`v5litepod`) and v6e."""
    count: int = Field(default=1, ge=0, le=MAX_SLICES_PER_ENTRY)
    """Identical slices to create; 0 keeps the entry (and its queue flavor) with no nodes."""
    zone: str | None = None
    """Defaults to `gcp:zone`; must be in `gcp:region` and a zone Cloud TPU documents for the
    family (the README lists them under "How TPU sizes resolve")."""
    allow_unlisted_zone: bool = False
    """Accept a zone the catalog does not list for the family (one Google added since)."""
    max_pods_per_node: int = Field(default=TPU_MAX_PODS_PER_NODE, ge=8, le=256)
    """Pods per TPU host (one workload pod plus daemonsets); sizes each node's block of
    `network.podsCidr`: a /27 at 16, where the cluster's default of 110 takes a /24."""
    provisioning: Provisioning = "on-demand"
    """`on-demand`, `spot`, `reservation` (naming `reservation`), or `flex-start` (Dynamic
    Workload Scheduler queued provisioning: the pool rests at zero nodes until a job asks)."""
    reservation: Reservation | None = None
    """Reservation name (or `projects/P/reservations/R` for a shared one) when
    `provisioning: reservation`."""
    topology: str | None = None
    """Only where a size has several topologies, e.g. v5p-512: `4x8x8` (the default, closest
    to a cube) or `4x4x16`. Unset means the size's default."""

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


def problems(slices: list[TpuSliceConfig], zones: list[str]) -> list[Problem]:
    """Per-entry checks of `ai-infra:tpuSlices`, each at `[i].<field>`; `zones` are the
    entries' resolved zones."""
    found = []
    for i, (config, zone) in enumerate(zip(slices, zones, strict=True)):
        family = tpu_catalog.resolve(config.accelerator).family
        if config.topology is not None:
            try:
                tpu_catalog.resolve(config.accelerator, config.topology)
            except tpu_catalog.CatalogError as error:
                found.append(Problem((i, "topology"), str(error)))
        found += [p.under(i) for p in reservation_problems(config.provisioning, config.reservation)]
        longest = f"{config.name}-{max(config.count - 1, 0)}"
        if len(longest) > GKE_NODE_POOL_NAME_MAX:
            found.append(
                Problem(
                    (i, "name"),
                    f"node pool name '{longest}' is longer than GKE's "
                    f"{GKE_NODE_POOL_NAME_MAX} characters; shorten the slice name",
                )
            )
        if not config.allow_unlisted_zone and (problem := tpu_catalog.zone_problem(family, zone)):
            inherited = "" if config.zone else f"the slice inherits gcp:zone {zone}: "
            found.append(Problem((i, "zone"), inherited + problem))
        if config.provisioning == "flex-start" and not family.flex_start:
            found.append(
                Problem(
                    (i, "provisioning"),
                    f"GKE offers no flex-start for {family.prefix}; use on-demand, spot or a "
                    "reservation, or a family that has it (v5e, v5p, v6e, tpu7x)",
                )
            )
    return found


def version_problems(
    slices: list[TpuSliceConfig], version: str | None, at_least: Callable[[str, str], bool]
) -> list[Problem]:
    """`[i].accelerator` problems when `cluster.version` is set below what a slice needs."""
    if version is None:
        return []
    found = []
    for i, config in enumerate(slices):
        family = tpu_catalog.resolve(config.accelerator).family
        needs = [(family.min_gke_version, f"{family.prefix} node pools")]
        if config.provisioning == "flex-start":
            needs.append((tpu_catalog.FLEX_START_MIN_GKE_VERSION, "flex-start TPU pools"))
        for minimum, what in needs:
            if minimum is not None and not at_least(version, minimum):
                found.append(
                    Problem(
                        (i, "accelerator"),
                        f"{what} need GKE {minimum} or later, but cluster.version is "
                        f"{version}; raise cluster.version",
                    )
                )
    return found


class TpuSliceArgs(WiringModel):
    cluster: ClusterHandle
    prefix: str
    region: str
    """Where a workload policy lives (the cluster's region)."""
    zone: str
    """The slice's zone, resolved from the entry or `gcp:zone`."""
    config: TpuSliceConfig


class TpuSlice(Component):
    """The node pools of one `tpuSlices` entry, and its workload policy where tpu7x needs one."""

    shape: tpu_catalog.TpuShape
    node_pools: list[gcp.container.NodePool]

    def __init__(self, name: str, args: TpuSliceArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ai-infra:tpu_slices:TpuSlice", name, opts)
        cluster = args.cluster
        config = args.config
        shape = self.shape = config.shape
        flex_start = config.provisioning == "flex-start"

        placement = None
        if shape.needs_workload_policy and config.count > 0:
            policy = gcp.compute.ResourcePolicy(
                f"{name}-workload-policy",
                project=cluster.project,
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

        # A multi-host slice cannot change shape in place: GKE adds no nodes to such a pool
        # once it exists ("About TPUs in GKE"), and the provider updates neither its topology
        # nor its machine type. A resize replaces the pool, deleting first: the new pool
        # takes the same name.
        replace_whole_slice = {
            "replace_on_changes": ["placementPolicy", "nodeConfig.machineType", "nodeCount"],
            "delete_before_replace": True,
        }
        self.node_pools = []
        for resource_name, pool_name, nodes in pools:
            labels = {
                "ai-infra/pool": pool_name,
                "ai-infra/slice": config.name,
                CAPACITY_LABEL: config.provisioning,
            }
            # Dynamic Workload Scheduler creates flex-start nodes when a ProvisioningRequest
            # asks for them; such a pool rests at zero and must not be auto-repaired. Its bound
            # is per zone: GKE checks a multi-host slice against the per-zone maximum, which
            # is 0 when only total limits are set (cluster-toolkit gke-node-pool works around
            # the same; the API refuses "Maximum node count 0 ... TPU pod slice").
            sizing = pool_sizing(nodes, flex_start=flex_start, per_zone=True)
            self.node_pools.append(
                gcp.container.NodePool(
                    resource_name,
                    project=cluster.project,
                    cluster=cluster.name,
                    location=cluster.location,
                    name=pool_name,
                    node_locations=[args.zone],
                    placement_policy=placement,
                    management=gcp.container.NodePoolManagementArgs(
                        auto_repair=not flex_start, auto_upgrade=cluster.auto_upgrade
                    ),
                    # No surge: there is no spare TPU capacity to surge into.
                    upgrade_settings=gcp.container.NodePoolUpgradeSettingsArgs(
                        strategy="SURGE", max_surge=0, max_unavailable=1
                    ),
                    maintenance_policies=hold_upgrades(cluster),
                    max_pods_per_node=config.max_pods_per_node,
                    node_config=node_config(
                        service_account=cluster.node_service_account,
                        machine_type=shape.machine_type,
                        disk_size_gb=100,
                        disk_type=shape.family.boot_disk_type,
                        labels=labels,
                        resource_labels=cluster.resource_labels,
                        image_streaming=cluster.image_streaming,
                        provisioning=config.provisioning,
                        reservation=config.reservation,
                    ),
                    node_count=sizing.node_count,
                    initial_node_count=sizing.initial_node_count,
                    autoscaling=sizing.autoscaling,
                    queued_provisioning=sizing.queued_provisioning,
                    opts=self.child_opts(**replace_whole_slice)
                    if shape.multi_host
                    else self.child_opts(),
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
