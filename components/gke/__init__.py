"""The GKE training environment: the private cluster and its CPU pool, TPU slice and GPU node
pools, workload identities, JobSet and Kueue with queues derived from the slices, teams, and
the TPU provisioner. `stacks/` builds it with `build()`, checks it with `problems()`, and the
offline plan shows it with `describe()`; nothing else here is for other packages.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.base import PathPart, Source
from components.buckets import BucketsHandle
from components.gke.checks import max_nodes, namespace_owner, problems
from components.gke.cluster import ClusterHandle, GkeCluster, GkeClusterArgs
from components.gke.config import (
    PROVISIONER_KSA,
    PROVISIONER_NAMESPACE,
    ClusterConfig,
    GkeConfig,
    GpuPoolConfig,
    KueueConfig,
    TeamConfig,
    TpuProvisionerConfig,
    TpuSliceConfig,
    WorkloadIdentityConfig,
)
from components.gke.gpu_pools import GpuPool, GpuPoolArgs
from components.gke.kueue import BatchSystem, BatchSystemArgs, Queues, QueuesArgs
from components.gke.teams import GroupAccess, GroupAccessArgs, Team, TeamArgs
from components.gke.tpu_provisioner import TpuProvisioner, TpuProvisionerArgs
from components.gke.tpu_slices import TpuSlice, TpuSliceArgs
from components.gke.workload_identity import (
    KubernetesSide,
    WorkloadIdentity,
    WorkloadIdentityArgs,
)
from components.network import NetworkConfig, NetworkHandle

__all__ = [
    "ClusterConfig",
    "GkeConfig",
    "GkeEnvironment",
    "GpuPoolConfig",
    "KueueConfig",
    "TeamConfig",
    "TpuProvisionerConfig",
    "TpuSliceConfig",
    "WorkloadIdentityConfig",
    "account_claims",
    "build",
    "describe",
    "kubernetes_account_claims",
    "max_nodes",
    "namespace_owner",
    "problems",
]


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
    ctx = config.context
    cluster = GkeCluster(
        source("gke", "cluster"),
        GkeClusterArgs(config=config, network_config=network_config, network=network),
        services,
    ).handle
    # Accelerator pools wait for the cluster only (through its name), not for the CPU pool:
    # GKE runs operations on different node pools concurrently and the provider locks per
    # pool ("Add and manage node pools"; terraform-provider-google nodePoolLockKey), so
    # slices come up beside the CPU pool, and the queues never wait for them.
    slices = {
        entry.name: TpuSlice(
            source(f"tpu-{entry.name}", "tpuSlices", i),
            TpuSliceArgs(context=ctx, cluster=cluster, config=entry),
            # The workload policy needs the Compute API; the pools wait for the cluster.
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
    kubernetes = k8s.Provider(
        "gke-kubernetes",
        kubeconfig=cluster.kubeconfig,
        enable_server_side_apply=True,
        opts=pulumi.ResourceOptions(depends_on=[cluster.cpu_pool]),
    )
    # The identity pool PROJECT.svc.id.goog exists only once the cluster does.
    after_cluster = pulumi.ResourceOptions.merge(
        services, pulumi.ResourceOptions(depends_on=[cluster.cluster], providers=[kubernetes])
    )
    identities = {
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
    on_cluster = pulumi.ResourceOptions(providers=[kubernetes])
    batch = BatchSystem(
        source("batch", "kueue"),
        BatchSystemArgs(cpu_pool=cluster.cpu_pool, webhook_firewall=network.webhook_firewall),
        on_cluster,
    )
    provisioner = None
    if config.tpu_provisioner.enabled:
        provisioner = TpuProvisioner(
            source("tpu-provisioner", "tpuProvisioner"),
            TpuProvisionerArgs(config=config, cluster=cluster, jobset_release=batch.jobset),
            after_cluster,
        )
        identities["tpu-provisioner"] = provisioner.identity
    queues = Queues(
        source("queues", "kueue"),
        QueuesArgs(
            config=config.kueue,
            flavors=config.flavors,
            allocation=config.allocation,
            kueue_release=batch.kueue,
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
                flex_start_checks=queues.flex_start_checks,
                kueue_release=batch.kueue,
                cluster=cluster.cluster,
                buckets=buckets,
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
    )


Claims = list[tuple[tuple[PathPart, ...], str]]


def account_claims(config: GkeConfig) -> Claims:
    """The Google service account ids the GKE keys would create, by config path."""
    ctx = config.context
    claims: Claims = [
        (("cluster",), config.node_account_id),
        (("tpuProvisioner",), config.provisioner_account_id),
    ]
    claims += [(("teams", i), ctx.name(t.name)) for i, t in enumerate(config.teams)]
    claims += [
        (("workloadIdentities", i), ctx.name(w.name))
        for i, w in enumerate(config.workload_identities)
    ]
    return claims


def kubernetes_account_claims(config: GkeConfig) -> Claims:
    """The Kubernetes service accounts (`namespace/name`) bound to Google ones."""
    claims: Claims = [(("tpuProvisioner",), f"{PROVISIONER_NAMESPACE}/{PROVISIONER_KSA}")]
    claims += [(("teams", i), f"{t.name}/{t.service_account}") for i, t in enumerate(config.teams)]
    claims += [
        (("workloadIdentities", i), f"{w.namespace}/{w.service_account}")
        for i, w in enumerate(config.workload_identities)
    ]
    return claims


def describe(config: GkeConfig) -> list[tuple[str, list[str]]]:
    """The plan's sections for the GKE keys: the slices with their chips, and the teams with
    their quota and identity."""
    if not config.cluster.enabled:
        return [("GKE", ["  not built (cluster.enabled: false)"])]
    slices = []
    for s in config.tpu_slices:
        shape = s.shape
        slices.append(
            f"  {s.name}: {s.count} x {shape.accelerator} topology {shape.topology}, "
            f"{shape.hosts} x {shape.machine_type} ({shape.chips_per_host} chips each) = "
            f"{shape.chips} chips per slice, {s.chips} chips, {s.provisioning}"
        )
    if not slices:
        slices.append("  none")
    slices.append(f"  total: {config.tpu_chips} TPU chips")
    resources = {f.name: f.resource for f in config.flavors}
    teams = []
    for team in sorted(config.teams, key=lambda t: t.name):
        quotas = [
            f"{flavor}={quota} {resources[flavor]}"
            for flavor, quota in config.allocation.teams[team.name].items()
        ]
        email = f"{config.context.name(team.name)}@{config.context.project}.iam.gserviceaccount.com"
        teams.append(f"  {team.name}/{team.name}: {', '.join(quotas) or 'no accelerator quota'}")
        teams.append(f"    runs as {team.name}/{team.service_account} -> {email}")
    return [
        ("TPU slices", slices),
        ("Teams (namespace/queue, nominal quota, Google service account)", teams or ["  none"]),
    ]
