"""Composes one training environment from a validated `StackConfig`.

This is the only place components are wired together; each config key maps to one component
here (`tpuSlices` -> `TpuSlice`, `buckets` -> `Bucket`, ...), and `Environment.sources` records
which key each top-level component comes from.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components import tpu_provisioner
from components.buckets import Bucket, BucketArgs
from components.gke import GkeCluster, GkeClusterArgs
from components.gpu_clusters import GpuCluster, GpuClusterArgs
from components.gpu_pools import GpuPool, GpuPoolArgs
from components.kueue import BatchSystem, BatchSystemArgs, Queues, QueuesArgs
from components.network import Network, NetworkArgs
from components.quota import allocate, derive_flavors
from components.services import (
    IMAGE_STREAMING_SERVICE,
    REQUIRED_SERVICES,
    ProjectServices,
    ProjectServicesArgs,
)
from components.slurm import SlurmCluster, SlurmClusterArgs
from components.teams import GroupAccess, GroupAccessArgs, Team, TeamArgs
from components.tpu_provisioner import TpuProvisioner, TpuProvisionerArgs
from components.tpu_slices import TpuSlice, TpuSliceArgs
from components.tpu_vms import TpuVms, TpuVmsArgs
from components.workload_identity import WorkloadIdentity, workload_identity_args
from stacks.config import StackConfig, render_path


@dataclass(frozen=True)
class Environment:
    """Handles on what was built, for exports and for whoever reads the program's graph."""

    config: StackConfig
    services: ProjectServices
    network: Network
    gke: GkeCluster
    slices: dict[str, TpuSlice]
    gpu_pools: dict[str, GpuPool]
    gpu_clusters: dict[str, GpuCluster]
    buckets: dict[str, Bucket]
    identities: dict[str, WorkloadIdentity]
    batch: BatchSystem
    queues: Queues
    teams: dict[str, Team]
    slurm: SlurmCluster | None
    sources: dict[str, str]
    """Top-level component name -> the config key it comes from (`ai-infra:tpuSlices[2]`)."""
    tpu_provisioner: TpuProvisioner | None
    """None unless `tpuProvisioner.enabled`."""
    tpu_vms: dict[str, TpuVms]


def build(config: StackConfig) -> Environment:
    sources: dict[str, str] = {}

    def source(name: str, *path: str | int) -> str:
        sources[name] = render_path(path)
        return name

    apis = REQUIRED_SERVICES
    if config.cluster.image_streaming:
        apis += (IMAGE_STREAMING_SERVICE,)
    services = ProjectServices(
        source("services", "project"), ProjectServicesArgs(project=config.project, services=apis)
    )
    after_services = pulumi.ResourceOptions(depends_on=services.services)

    network = Network(
        source("network", "network"),
        NetworkArgs(
            project=config.project,
            region=config.region,
            prefix=config.prefix,
            config=config.network,
        ),
        after_services,
    )
    gke = GkeCluster(
        source("gke", "cluster"),
        GkeClusterArgs(
            project=config.project,
            prefix=config.prefix,
            name=config.cluster_name,
            location=config.cluster_location,
            protect=config.protect,
            deletion_protection=config.deletion_protection,
            labels=config.resource_labels,
            config=config.cluster,
            network=config.network,
            network_self_link=network.network_self_link,
            subnet_self_link=network.subnet_self_link,
            pods_range_name=network.pods_range_name,
            services_range_name=network.services_range_name,
        ),
        after_services,
    )
    # Accelerator pools wait for the cluster only (through its name), not for the CPU pool:
    # GKE runs operations on different node pools concurrently and the provider locks per
    # pool ("Add and manage node pools"; terraform-provider-google nodePoolLockKey), so
    # slices come up beside the CPU pool, and the queues never wait for them.

    slices = {
        slice_config.name: TpuSlice(
            source(f"tpu-{slice_config.name}", "tpuSlices", i),
            TpuSliceArgs(
                cluster=gke.handle,
                prefix=config.prefix,
                region=config.region,
                zone=config.zone_of(slice_config),
                config=slice_config,
            ),
            # The workload policy needs the Compute API; the pools wait for the cluster.
            after_services,
        )
        for i, slice_config in enumerate(config.tpu_slices)
    }
    gpu_pools = {
        gpu_config.name: GpuPool(
            source(f"gpu-{gpu_config.name}", "gpuPools", i),
            GpuPoolArgs(cluster=gke.handle, zone=config.zone_of(gpu_config), config=gpu_config),
            after_services,
        )
        for i, gpu_config in enumerate(config.gpu_pools)
    }
    buckets = {
        bucket_config.name: Bucket(
            source(f"bucket-{bucket_config.name}", "buckets", i),
            BucketArgs(
                project=config.project,
                prefix=config.prefix,
                location=config.bucket_location(bucket_config),
                protect=config.protect,
                labels=config.resource_labels,
                config=bucket_config,
            ),
            after_services,
        )
        for i, bucket_config in enumerate(config.buckets)
    }
    # TPU VMs boot into the stack's subnet and egress through its NAT, so the queued resource
    # waits for the network; nothing here needs the cluster.
    tpu_vms = {
        vm.name: TpuVms(
            source(f"tpuvm-{vm.name}", "tpuVms", i),
            TpuVmsArgs(
                project=config.project,
                prefix=config.prefix,
                zone=config.zone_of(vm),
                protect=config.protect,
                labels=config.resource_labels,
                network=vm.network.network if vm.network else network.network_self_link,
                subnetwork=vm.network.subnetwork if vm.network else network.subnet_self_link,
                buckets=buckets,
                network_ready=[network],
                config=vm,
            ),
            after_services,
        )
        for i, vm in enumerate(config.tpu_vms)
    }
    gpu_clusters = {
        cluster.name: GpuCluster(
            source(f"gpucluster-{cluster.name}", "gpuClusters", i),
            GpuClusterArgs(
                project=config.project,
                region=config.region,
                zone=config.zone_of(cluster),
                prefix=config.prefix,
                labels=config.resource_labels,
                protect=config.protect,
                config=cluster,
                stack_network=network.network_self_link,
                # A VPC's self link ends in its name; Filestore wants the name.
                stack_network_name=network.network_self_link.apply(
                    lambda link: link.rsplit("/", 1)[-1]
                ),
                stack_subnet=network.subnet_self_link,
                buckets={
                    b.name: b.bucket_name(config.project, config.prefix) for b in config.buckets
                },
                bucket_resources=[b.bucket for b in buckets.values()],
            ),
            after_services,
        )
        for i, cluster in enumerate(config.gpu_clusters)
    }
    kubernetes = k8s.Provider(
        "gke-kubernetes",
        kubeconfig=gke.kubeconfig,
        enable_server_side_apply=True,
        opts=pulumi.ResourceOptions(depends_on=[gke.cpu_pool]),
    )
    # The identity pool PROJECT.svc.id.goog exists only once the cluster does.
    after_cluster = [*services.services, gke.cluster]
    identities = {
        identity.name: WorkloadIdentity(
            source(f"wi-{identity.name}", "workloadIdentities", i),
            workload_identity_args(
                project=config.project,
                account_id=f"{config.prefix}-{identity.name}",
                display_name=f"Workload {identity.namespace}/{identity.service_account}",
                namespace=identity.namespace,
                service_account=identity.service_account,
                roles=identity.roles,
                buckets=identity.buckets,
                bucket_components=buckets,
                create_namespace=identity.create_namespace,
            ),
            pulumi.ResourceOptions(depends_on=after_cluster, providers=[kubernetes]),
        )
        for i, identity in enumerate(config.workload_identities)
    }
    # JobSet, Kueue, the queue objects derived from the slices, and the teams.
    on_cluster = pulumi.ResourceOptions(providers=[kubernetes])
    batch = BatchSystem(
        source("batch", "kueue"),
        BatchSystemArgs(cpu_pool=gke.cpu_pool, webhook_firewall=network.webhook_firewall),
        on_cluster,
    )
    provisioner = None
    if config.tpu_provisioner.enabled:
        provisioner = TpuProvisioner(
            source("tpu-provisioner", "tpuProvisioner"),
            TpuProvisionerArgs(
                project=config.project,
                prefix=config.prefix,
                region=config.region,
                cluster=gke.handle,
                zone=config.provisioner_zone,
                node_service_account=config.provisioner_node_service_account,
                node_service_account_resource=(
                    None
                    if config.tpu_provisioner.node_service_account
                    else gke.node_service_account
                ),
                config=config.tpu_provisioner,
                jobset_release=batch.jobset,
            ),
            pulumi.ResourceOptions(depends_on=after_cluster, providers=[kubernetes]),
        )
        identities["tpu-provisioner"] = provisioner.identity
    flavors = derive_flavors(
        config.tpu_slices, config.gpu_pools, tpu_provisioner.capacity(config.tpu_provisioner)
    )
    allocation = allocate(flavors, {team.name: team.quota for team in config.teams})
    queues = Queues(
        source("queues", "kueue"),
        QueuesArgs(
            config=config.kueue, flavors=flavors, allocation=allocation, kueue_release=batch.kueue
        ),
        on_cluster,
    )
    teams = {
        team.name: Team(
            source(f"team-{team.name}", "teams", i),
            TeamArgs(
                project=config.project,
                prefix=config.prefix,
                cohort=config.kueue.cohort,
                config=team,
                flavors=flavors,
                quotas=allocation.teams[team.name],
                flex_start_checks=queues.flex_start_checks,
                kueue_release=batch.kueue,
                cluster=gke.cluster,
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
            GroupAccessArgs(project=config.project, groups=groups),
            after_services,
        )
    slurm = None
    if config.slurm is not None:
        slurm = SlurmCluster(
            source("slurm", "slurm"),
            SlurmClusterArgs(
                project=config.project,
                region=config.region,
                zone=config.zone,
                prefix=config.prefix,
                protect=config.protect,
                labels=config.resource_labels,
                network_self_link=network.network_self_link,
                subnet_name=network.subnet_name,
                subnet_self_link=network.subnet_self_link,
                network=network,
                config=config.slurm,
            ),
            after_services,
        )
    return Environment(
        config=config,
        services=services,
        network=network,
        gke=gke,
        slices=slices,
        gpu_pools=gpu_pools,
        gpu_clusters=gpu_clusters,
        buckets=buckets,
        identities=identities,
        batch=batch,
        queues=queues,
        teams=teams,
        slurm=slurm,
        sources=sources,
        tpu_provisioner=provisioner,
        tpu_vms=tpu_vms,
    )


def export(env: Environment) -> None:
    pulumi.export("clusterName", env.gke.cluster.name)
    pulumi.export("clusterLocation", env.config.cluster_location)
    pulumi.export("kubeconfig", env.gke.kubeconfig)
    pulumi.export("nodeServiceAccount", env.gke.node_service_account_email)
    pulumi.export("tpuChips", env.config.tpu_chips)
    pulumi.export("buckets", {k: b.bucket.url for k, b in env.buckets.items()})
    pulumi.export("workloadIdentities", {k: i.email for k, i in env.identities.items()})
    pulumi.export(
        "tpuVms",
        {
            name: {"nodeNames": vms.node_names, "sshCommands": vms.ssh_commands}
            for name, vms in env.tpu_vms.items()
        },
    )
    pulumi.export(
        "gpuClusters",
        {
            name: {
                "instanceGroup": cluster.instance_group,
                "filestoreIps": cluster.filestore_ips,
                "jupyterUrls": cluster.jupyter_urls_command,
            }
            for name, cluster in env.gpu_clusters.items()
        },
    )
    pulumi.export(
        "teams",
        {
            name: {"namespace": name, "queue": name, "serviceAccount": team.identity.email}
            for name, team in env.teams.items()
        },
    )
