"""Composes one training environment from a validated `StackConfig`.

This is the only place components are wired together; each config key maps to one component
here (`tpuSlices` -> `TpuSlice`, `buckets` -> `Bucket`, ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from components.buckets import Bucket, BucketArgs
from components.gke import GkeCluster, GkeClusterArgs
from components.gpu_pools import GpuPool, GpuPoolArgs
from components.kueue import BatchSystem, BatchSystemArgs, Queues, QueuesArgs
from components.network import Network, NetworkArgs
from components.quota import allocate, derive_flavors
from components.services import ProjectServices, ProjectServicesArgs
from components.teams import GroupAccess, GroupAccessArgs, Team, TeamArgs
from components.tpu_slices import TpuSlice, TpuSliceArgs
from components.workload_identity import (
    WorkloadIdentity,
    WorkloadIdentityArgs,
    workload_identity_args,
)
from stacks.config import TPU_PROVISIONER_KSA, TPU_PROVISIONER_NAMESPACE, StackConfig


@dataclass
class Environment:
    """Handles on what was built, for exports and for the components that come after."""

    config: StackConfig
    services: ProjectServices
    network: Network
    gke: GkeCluster
    slices: dict[str, TpuSlice] = field(default_factory=dict)
    gpu_pools: dict[str, GpuPool] = field(default_factory=dict)
    buckets: dict[str, Bucket] = field(default_factory=dict)
    identities: dict[str, WorkloadIdentity] = field(default_factory=dict)
    teams: dict[str, Team] = field(default_factory=dict)
    batch: BatchSystem | None = None
    queues: Queues | None = None


def build(config: StackConfig) -> Environment:
    labels = {"managed-by": "pulumi", "ai-infra-stack": config.prefix, **config.labels}
    services = ProjectServices("services", ProjectServicesArgs(project=config.project))
    after_services = pulumi.ResourceOptions(depends_on=services.services)

    network = Network(
        "network",
        NetworkArgs(
            project=config.project,
            region=config.region,
            prefix=config.prefix,
            config=config.network,
        ),
        after_services,
    )
    gke = GkeCluster(
        "gke",
        GkeClusterArgs(
            project=config.project,
            region=config.region,
            zone=config.zone,
            prefix=config.prefix,
            protect=config.protect,
            labels=labels,
            config=config.cluster,
            network=config.network,
            network_self_link=network.network_self_link,
            subnet_self_link=network.subnet_self_link,
            pods_range_name=network.pods_range_name,
            services_range_name=network.services_range_name,
        ),
        after_services,
    )
    env = Environment(config=config, services=services, network=network, gke=gke)
    location = gke.args.location
    # Accelerator pools wait for the CPU pool: GKE serialises node pool operations per cluster,
    # and the controllers the slices serve run on the CPU pool.
    after_cpu_pool = pulumi.ResourceOptions(depends_on=[gke.cpu_pool])

    for slice_config in config.tpu_slices:
        env.slices[slice_config.name] = TpuSlice(
            f"tpu-{slice_config.name}",
            TpuSliceArgs(
                project=config.project,
                region=config.region,
                zone=config.slice_zone(slice_config),
                prefix=config.prefix,
                labels=labels,
                cluster_name=gke.cluster.name,
                cluster_location=location,
                node_service_account=gke.node_service_account_email,
                auto_upgrade=gke.auto_upgrade,
                image_streaming=config.cluster.image_streaming,
                config=slice_config,
            ),
            after_cpu_pool,
        )
    for gpu_config in config.gpu_pools:
        env.gpu_pools[gpu_config.name] = GpuPool(
            f"gpu-{gpu_config.name}",
            GpuPoolArgs(
                project=config.project,
                zone=config.slice_zone(gpu_config),
                labels=labels,
                cluster_name=gke.cluster.name,
                cluster_location=location,
                node_service_account=gke.node_service_account_email,
                auto_upgrade=gke.auto_upgrade,
                image_streaming=config.cluster.image_streaming,
                config=gpu_config,
            ),
            after_cpu_pool,
        )
    for bucket_config in config.buckets:
        env.buckets[bucket_config.name] = Bucket(
            f"bucket-{bucket_config.name}",
            BucketArgs(
                project=config.project,
                region=config.region,
                prefix=config.prefix,
                protect=config.protect,
                labels=labels,
                config=bucket_config,
            ),
            after_services,
        )
    kubernetes = k8s.Provider(
        "gke-kubernetes",
        kubeconfig=gke.kubeconfig,
        enable_server_side_apply=True,
        opts=pulumi.ResourceOptions(depends_on=[gke.cpu_pool]),
    )
    on_cluster: list[pulumi.ProviderResource] = [kubernetes]

    for identity in config.workload_identities:
        env.identities[identity.name] = WorkloadIdentity(
            f"wi-{identity.name}",
            workload_identity_args(
                project=config.project,
                account_id=f"{config.prefix}-{identity.name}",
                display_name=f"Workload {identity.namespace}/{identity.service_account}",
                namespace=identity.namespace,
                service_account=identity.service_account,
                roles=identity.roles,
                buckets=identity.buckets,
                bucket_components=env.buckets,
                create_namespace=identity.create_namespace,
            ),
            # The identity pool PROJECT.svc.id.goog exists only once the cluster does.
            pulumi.ResourceOptions(
                depends_on=[*services.services, gke.cluster], providers=on_cluster
            ),
        )
    if config.tpu_provisioner.enabled:
        env.identities["tpu-provisioner"] = WorkloadIdentity(
            "tpu-provisioner",
            WorkloadIdentityArgs(
                project=config.project,
                account_id=f"{config.prefix}-tpu-prov",
                display_name="GKE TPU provisioner",
                namespace=TPU_PROVISIONER_NAMESPACE,
                kubernetes_service_account=TPU_PROVISIONER_KSA,
                roles=["roles/container.clusterAdmin"],
            ),
            pulumi.ResourceOptions(depends_on=[*services.services, gke.cluster]),
        )
    build_queues(env, kubernetes)
    return env


def build_queues(env: Environment, kubernetes: k8s.Provider) -> None:
    """JobSet, Kueue, the queue objects derived from the slices, and the teams."""
    config = env.config
    on_cluster = pulumi.ResourceOptions(providers=[kubernetes])
    env.batch = BatchSystem(
        "batch",
        BatchSystemArgs(cpu_pool=env.gke.cpu_pool, webhook_firewall=env.network.webhook_firewall),
        on_cluster,
    )
    flavors = derive_flavors(config.tpu_slices, config.gpu_pools)
    allocation = allocate(flavors, {team.name: team.quota for team in config.teams})
    env.queues = Queues(
        "queues",
        QueuesArgs(
            config=config.kueue,
            flavors=flavors,
            allocation=allocation,
            kueue_release=env.batch.kueue,
        ),
        on_cluster,
    )
    for team in config.teams:
        env.teams[team.name] = Team(
            f"team-{team.name}",
            TeamArgs(
                project=config.project,
                prefix=config.prefix,
                cohort=config.kueue.cohort,
                config=team,
                flavors=flavors,
                quotas=allocation.teams[team.name],
                flex_start_checks=env.queues.flex_start_checks,
                kueue_release=env.batch.kueue,
                cluster=env.gke.cluster,
                buckets=env.buckets,
            ),
            # The team's cloud resources reach the project services through the cluster.
            on_cluster,
        )
    groups = sorted({group for team in config.teams for group in team.groups})
    if groups:
        GroupAccess(
            "team-groups",
            GroupAccessArgs(project=config.project, groups=groups),
            pulumi.ResourceOptions(depends_on=env.services.services),
        )


def export(env: Environment) -> None:
    pulumi.export("clusterName", env.gke.cluster.name)
    pulumi.export("clusterLocation", env.gke.args.location)
    pulumi.export("kubeconfig", env.gke.kubeconfig)
    pulumi.export("nodeServiceAccount", env.gke.node_service_account_email)
    pulumi.export("tpuChips", env.config.tpu_chips)
    pulumi.export("buckets", {k: b.bucket.url for k, b in env.buckets.items()})
    pulumi.export("workloadIdentities", {k: i.email for k, i in env.identities.items()})
    pulumi.export(
        "teams",
        {
            name: {"namespace": name, "queue": name, "serviceAccount": team.identity.email}
            for name, team in env.teams.items()
        },
    )
