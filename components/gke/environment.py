"""The GKE environment as one build: the private cluster and its CPU pool, TPU slice and GPU node
pools, workload identities, JobSet and Kueue with queues derived from the slices, teams, and the
TPU provisioner, each a top-level component named for the config key it comes from.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.base import Source
from components.buckets import BucketsHandle
from components.gke.cluster import ClusterHandle, GkeCluster, GkeClusterArgs
from components.gke.config import (
    GkeConfig,
)
from components.gke.dcn import DcnRules, DcnRulesArgs
from components.gke.gpu_direct import (
    GpuDirect,
    GpuDirectArgs,
)
from components.gke.gpu_pools import GpuPool, GpuPoolArgs
from components.gke.kueue import (
    BatchSystem,
    BatchSystemArgs,
    Queues,
    QueuesArgs,
)
from components.gke.pod_networks import PodNetworks, PodNetworksArgs
from components.gke.teams import (
    GroupAccess,
    GroupAccessArgs,
    Team,
    TeamArgs,
    Tenancy,
    TenancyArgs,
)
from components.gke.tpu_provisioner import TpuProvisioner, TpuProvisionerArgs
from components.gke.tpu_slices import TpuSlice, TpuSliceArgs
from components.gke.workload_identity import (
    KubernetesSide,
    WorkloadIdentity,
    WorkloadIdentityArgs,
)
from components.network import PODS, NetworkConfig, NetworkHandle


@dataclass(frozen=True)
class GkeEnvironment:
    """Handles on what `build()` made, for exports and tests."""

    config: GkeConfig
    cluster: ClusterHandle
    slices: dict[str, TpuSlice]
    gpu_pools: dict[str, GpuPool]
    identities: dict[str, WorkloadIdentity]
    batch: BatchSystem
    queues: Queues
    teams: dict[str, Team]
    tpu_provisioner: TpuProvisioner | None
    """None unless `tpuProvisioner.enabled`."""
    kubernetes: k8s.Provider
    """The cluster's Kubernetes provider, for objects other packages put on it."""


def build(
    config: GkeConfig,
    *,
    network_config: NetworkConfig,
    network: NetworkHandle,
    buckets: BucketsHandle,
    services: pulumi.ResourceOptions,
    source: Source,
) -> GkeEnvironment | None:
    """The cluster and everything on it, or nothing with `cluster.enabled: false`. `services`
    holds the dependency on the project's APIs; `source` records the config key of each
    top-level component."""
    if not config.cluster.enabled:
        return None
    if network.webhook_firewall is None:
        raise ValueError("the network made no webhook rule for the GKE cluster")
    cluster = GkeCluster(
        source("gke", "cluster"),
        GkeClusterArgs(config=config, network_config=network_config, network=network),
        services,
    ).handle
    slices, gpu_pools = _accelerator_pools(config, cluster, network, services, source)
    kubernetes = k8s.Provider(
        "gke-kubernetes",
        kubeconfig=cluster.kubeconfig,
        enable_server_side_apply=True,
        opts=pulumi.ResourceOptions(depends_on=[cluster.system_pool]),
    )
    # The identity pool PROJECT.svc.id.goog exists only once the cluster does.
    after_cluster = pulumi.ResourceOptions.merge(
        services, pulumi.ResourceOptions(depends_on=[cluster.cluster], providers=[kubernetes])
    )
    on_cluster = pulumi.ResourceOptions(providers=[kubernetes])
    identities = _identities(config, buckets, after_cluster, source)
    groups = config.dcn_groups()
    if groups:
        DcnRules(
            source("dcn", "network", "additionalNodeNetworks"),
            DcnRulesArgs(
                project=config.context.project,
                prefix=config.context.prefix,
                groups=groups,
                networks=dict(network.node_networks),
            ),
            services,
        )
    used = set(config.node_network_users())
    if used:
        PodNetworks(
            source("pod-networks", "network", "additionalNodeNetworks"),
            PodNetworksArgs(
                networks=[h for name, h in network.node_networks.items() if name in used]
            ),
            # GKE serves the networking.gke.io kinds once multi-networking is on.
            after_cluster,
        )
    transports = sorted({p.fast_path.transport for p in config.gpu_pools if p.fast_path})
    if transports:
        GpuDirect(
            source("gpu-direct", "gpuPools"),
            GpuDirectArgs(
                transports=transports,
                networks=[n for pool in gpu_pools.values() for n in pool.networks],
            ),
            # GKE serves the networking.gke.io kinds once multi-networking is on.
            after_cluster,
        )
    batch = BatchSystem(
        source("batch", "kueue"),
        BatchSystemArgs(system_pool=cluster.system_pool, webhook_firewall=network.webhook_firewall),
        on_cluster,
    )
    provisioner = None
    if config.tpu_provisioner.enabled:
        # Pools the provisioner creates on the stack's node networks need their subnets.
        after_networks = [network.component] if config.provisioner_node_networks else []
        provisioner = TpuProvisioner(
            source("tpu-provisioner", "tpuProvisioner"),
            TpuProvisionerArgs(config=config, cluster=cluster, jobset_release=batch.jobset),
            pulumi.ResourceOptions.merge(
                after_cluster, pulumi.ResourceOptions(depends_on=after_networks)
            ),
        )
        identities["tpu-provisioner"] = provisioner.identity
    queues = Queues(
        source("queues", "kueue"),
        QueuesArgs(
            config=config.kueue,
            flavors=config.flavors,
            allocation=config.allocation,
            cohort_cpu=config.host_quota(),
            kueue_release=batch.kueue,
        ),
        on_cluster,
    )
    teams = _teams(config, cluster, buckets, batch, queues, on_cluster, services, source)
    return GkeEnvironment(
        config=config,
        cluster=cluster,
        slices=slices,
        gpu_pools=gpu_pools,
        identities=identities,
        batch=batch,
        queues=queues,
        teams=teams,
        tpu_provisioner=provisioner,
        kubernetes=kubernetes,
    )


def _accelerator_pools(
    config: GkeConfig,
    cluster: ClusterHandle,
    network: NetworkHandle,
    services: pulumi.ResourceOptions,
    source: Source,
) -> tuple[dict[str, TpuSlice], dict[str, GpuPool]]:
    """The TPU slices' and GPU pools' node pools. They wait for the cluster only (through its
    name), not for the CPU or system pool: GKE runs operations on different node pools
    concurrently and the provider locks per pool ("Add and manage node pools";
    terraform-provider-google nodePoolLockKey), so slices come up beside them, and the queues
    never wait for them. The slices' workload policies need the Compute API (`services`)."""
    ctx = config.context
    slices = {
        entry.name: TpuSlice(
            source(f"tpu-{entry.name}", "tpuSlices", i),
            TpuSliceArgs(
                context=ctx,
                cluster=cluster,
                config=entry,
                node_networks=[
                    network.node_networks[n.name] for n in config.slice_node_networks(entry)
                ],
                network_tags=config.slice_dcn_tags(entry),
            ),
            services,
        )
        for i, entry in enumerate(config.tpu_slices)
    }
    gpu_pools = {
        entry.name: GpuPool(
            source(f"gpu-{entry.name}", "gpuPools", i),
            GpuPoolArgs(context=ctx, cluster=cluster, config=entry),
            services,
        )
        for i, entry in enumerate(config.gpu_pools)
    }
    return slices, gpu_pools


def _identities(
    config: GkeConfig,
    buckets: BucketsHandle,
    after_cluster: pulumi.ResourceOptions,
    source: Source,
) -> dict[str, WorkloadIdentity]:
    """`workloadIdentities`: a Google service account bound to a Kubernetes one each."""
    ctx = config.context
    return {
        entry.name: WorkloadIdentity(
            source(f"wi-{entry.name}", "workloadIdentities", i),
            WorkloadIdentityArgs(
                context=ctx,
                account_id=ctx.name(entry.name),
                display_name=f"Workload {entry.namespace}/{entry.service_account}",
                namespace=entry.namespace,
                kubernetes_service_account=entry.service_account,
                roles=entry.roles,
                buckets=entry.buckets,
                bucket_handle=buckets,
                kubernetes=KubernetesSide(create_namespace=entry.create_namespace),
            ),
            after_cluster,
        )
        for i, entry in enumerate(config.workload_identities)
    }


def _teams(
    config: GkeConfig,
    cluster: ClusterHandle,
    buckets: BucketsHandle,
    batch: BatchSystem,
    queues: Queues,
    on_cluster: pulumi.ResourceOptions,
    services: pulumi.ResourceOptions,
    source: Source,
) -> dict[str, Team]:
    """The member role and admission policies every team namespace shares, each team, and
    its groups' cluster access."""
    ctx = config.context
    tenancy = Tenancy(
        source("tenancy", "teams"),
        TenancyArgs(
            image_repositories={
                team.name: list(team.image_repositories)
                for team in config.teams
                if team.image_repositories
            },
            gpu_direct_pools=[p.name for p in config.gpu_pools if p.fast_path],
        ),
        on_cluster,
    )
    teams = {
        team.name: Team(
            source(f"team-{team.name}", "teams", i),
            TeamArgs(
                context=ctx,
                cohort=config.kueue.cohort,
                config=team,
                flavors=config.flavors,
                quotas=config.allocation.teams[team.name],
                cpu=config.cpu_quota(team),
                provisioned_cpu=config.host_quota(team.name, provisioned=True).quantities,
                flex_start_checks=queues.flex_start_checks,
                kueue_release=batch.kueue,
                cluster=cluster.cluster,
                buckets=buckets,
                tenancy=tenancy,
                openings=[
                    (config.network.subnet_cidr, list(o.ports))
                    for o in config.network.allow
                    if PODS in o.sources
                ],
                priority_classes=config.priority_classes(team),
            ),
            # The team's cloud resources reach the project services through the cluster.
            on_cluster,
        )
        for i, team in enumerate(config.teams)
    }
    groups = sorted({group for team in config.teams for group in team.groups})
    if groups:
        GroupAccess(
            source("team-groups", "teams"),
            GroupAccessArgs(project=ctx.project, groups=groups),
            services,
        )
    return teams
