"""TPU slice node pools. A slice entry names an accelerator type; the catalog decides machine
type, topology and host count. Each multi-host slice is its own node pool (a slice is the unit
GKE provisions, repairs and upgrades); identical single-host slices share one pool. Every pool
carries its host maintenance interval, and the additional node networks its hosts take a NIC
in for DCN traffic.
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp
from pydantic import Field, InstanceOf

from catalog import tpu as tpu_catalog
from components.base import Component, WiringModel
from components.context import StackContext
from components.gke.cluster import ClusterHandle
from components.gke.config import TpuSliceConfig
from components.gke.node_pools import (
    HOLD_REPLACES,
    hold_kept,
    hold_upgrades,
    node_config,
    pool_sizing,
)
from components.gke.quota import CAPACITY_LABEL, DEDICATED_KEY
from components.network import NodeNetworkHandle
from components.placement import workload_policy


class TpuSliceArgs(WiringModel):
    context: InstanceOf[StackContext]
    cluster: InstanceOf[ClusterHandle]
    config: TpuSliceConfig
    node_networks: list[InstanceOf[NodeNetworkHandle]] = Field(default_factory=list)
    """The additional node networks the slice's hosts attach to, in NIC order."""
    network_tags: list[str] = Field(default_factory=list)
    """Network tags beyond the cluster's: the tag its node networks' rules admit by."""


class TpuSlice(Component):
    """The node pools of one `tpuSlices` entry, and its workload policy where tpu7x needs one."""

    shape: tpu_catalog.TpuShape
    node_pools: list[gcp.container.NodePool]

    def __init__(self, name: str, args: TpuSliceArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ai-infra:gke:TpuSlice", name, opts)
        config = args.config
        shape = self.shape = config.shape
        placement = self._placement(name, args)
        if shape.multi_host:
            pools = [(f"{name}-{i}", pool, shape.hosts) for i, pool in enumerate(config.pool_names)]
        else:
            pools = [(f"{name}-pool", pool, config.count) for pool in config.pool_names]
        self.node_pools = [
            self._node_pool(resource_name, pool_name, nodes, args, placement)
            for resource_name, pool_name, nodes in pools
        ]
        self.register_outputs(
            {
                "accelerator": shape.accelerator,
                "topology": shape.topology,
                "chips": config.chips,
                "nodePools": [p.name for p in self.node_pools],
            }
        )

    def _placement(
        self, name: str, args: TpuSliceArgs
    ) -> gcp.container.NodePoolPlacementPolicyArgs | None:
        """Compact placement: by a workload policy where the shape needs one (tpu7x), by the
        topology for other multi-host slices, none for single-host ones."""
        ctx, config, shape = args.context, args.config, args.config.shape
        if shape.needs_workload_policy and config.count > 0:
            policy = workload_policy(
                self,
                f"{name}-workload-policy",
                project=ctx.project,
                region=ctx.region,
                name=ctx.name(config.name),
                topology=shape.topology,
            )
            return gcp.container.NodePoolPlacementPolicyArgs(
                type="COMPACT", policy_name=policy.name
            )
        if shape.multi_host:
            return gcp.container.NodePoolPlacementPolicyArgs(
                type="COMPACT", tpu_topology=shape.topology
            )
        return None

    def _pool_opts(
        self, args: TpuSliceArgs, after: list[pulumi.Resource]
    ) -> pulumi.ResourceOptions:
        """A multi-host slice cannot change shape in place: GKE adds no nodes to such a pool
        once it exists ("About TPUs in GKE"), and the provider updates neither its topology
        nor its machine type. A resize replaces the pool, deleting first: the new pool takes
        the same name. A shared single-host pool keeps its name too, so what the provider
        replaces it on (its NICs, its host maintenance) must delete first."""
        auto_upgrade = args.cluster.auto_upgrade
        replace_on = [*HOLD_REPLACES]
        if args.config.shape.multi_host:
            replace_on = ["placementPolicy", "nodeConfig.machineType", "nodeCount", *replace_on]
        return self.child_opts(
            depends_on=after,
            replace_on_changes=replace_on,
            delete_before_replace=True,
            ignore_changes=hold_kept(auto_upgrade),
        )

    def _node_pool(
        self,
        resource_name: str,
        pool_name: str,
        nodes: int,
        args: TpuSliceArgs,
        placement: gcp.container.NodePoolPlacementPolicyArgs | None,
    ) -> gcp.container.NodePool:
        cluster, config = args.cluster, args.config
        flex_start = config.provisioning == "flex-start"
        # Additional node networks are ForceNew on a pool (terraform-provider-google
        # node_pool `additional_node_network_configs`; GKE: "interfaces cannot be added or
        # removed after a node pool is created"); the provider takes names, not self links.
        network_config = None
        if args.node_networks:
            network_config = gcp.container.NodePoolNetworkConfigArgs(
                additional_node_network_configs=[
                    gcp.container.NodePoolNetworkConfigAdditionalNodeNetworkConfigArgs(
                        network=n.vpc_name, subnetwork=n.subnet_name
                    )
                    for n in args.node_networks
                ]
            )
        # A team's own slice: its account, a label its flavor selects and a taint only that
        # flavor tolerates (quota.py). Both the account and the taints are ForceNew on a pool
        # (terraform-provider-google node_config.go), so setting `team` replaces the slice.
        account, taints, after = cluster.node_service_account, None, []
        labels = {
            "ai-infra/pool": pool_name,
            "ai-infra/slice": config.name,
            CAPACITY_LABEL: config.provisioning,
        }
        if config.team is not None:
            identity = cluster.team_node_identities[config.team]
            account, after = identity.email, identity.ready
            labels[DEDICATED_KEY] = config.team
            taints = [
                gcp.container.NodePoolNodeConfigTaintArgs(
                    key=DEDICATED_KEY, value=config.team, effect="NO_SCHEDULE"
                )
            ]
        # Dynamic Workload Scheduler creates flex-start nodes when a ProvisioningRequest asks
        # for them; such a pool rests at zero and must not be auto-repaired. Its bound is per
        # zone: GKE checks a multi-host slice against the per-zone maximum, which is 0 when
        # only total limits are set (cluster-toolkit gke-node-pool works around the same; the
        # API refuses "Maximum node count 0 ... TPU pod slice").
        sizing = pool_sizing(nodes, flex_start=flex_start, per_zone=True)
        return gcp.container.NodePool(
            resource_name,
            project=cluster.project,
            cluster=cluster.name,
            location=cluster.location,
            name=pool_name,
            node_locations=[args.context.zone_of(config.zone)],
            placement_policy=placement,
            management=gcp.container.NodePoolManagementArgs(
                auto_repair=not flex_start, auto_upgrade=cluster.auto_upgrade
            ),
            # No surge: there is no spare TPU capacity to surge into.
            upgrade_settings=gcp.container.NodePoolUpgradeSettingsArgs(
                strategy="SURGE", max_surge=0, max_unavailable=1
            ),
            maintenance_policies=hold_upgrades(cluster.auto_upgrade),
            max_pods_per_node=config.max_pods_per_node,
            node_config=node_config(
                service_account=account,
                machine_type=config.shape.machine_type,
                disk_size_gb=100,
                disk_type=config.shape.family.boot_disk_type,
                labels=labels,
                resource_labels=cluster.resource_labels,
                tags=[*cluster.node_tags, *args.network_tags],
                taints=taints,
                image_streaming=cluster.image_streaming,
                provisioning=config.provisioning,
                reservation=config.reservation,
                # ForceNew (terraform-provider-google node_config.go): a change replaces the
                # pool, and with it the slice.
                host_maintenance_interval=config.host_maintenance_interval,
            ),
            network_config=network_config,
            node_count=sizing.node_count,
            initial_node_count=sizing.initial_node_count,
            autoscaling=sizing.autoscaling,
            queued_provisioning=sizing.queued_provisioning,
            opts=self._pool_opts(args, after),
        )
