"""Composes one stack from a validated `StackConfig`: the project services, the network and
buckets every system shares, then each system from its own keys. This is the only place
systems meet; each receives the stack context and handles on what it builds upon, and
`Environment.sources` records which config key each top-level component comes from.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from components import gke, gpu_clusters, slurm, tpu_vms
from components.buckets import Bucket, BucketArgs, BucketsHandle
from components.network import Network, NetworkArgs, NetworkHandle
from components.services import (
    IMAGE_STREAMING_SERVICE,
    REQUIRED_SERVICES,
    ProjectServices,
    ProjectServicesArgs,
)
from stacks.config import StackConfig
from stacks.messages import render_path


@dataclass(frozen=True)
class Environment:
    """Handles on what was built, for exports and for whoever reads the program's graph."""

    config: StackConfig
    services: ProjectServices
    network: NetworkHandle
    buckets: BucketsHandle
    gke: gke.GkeEnvironment | None
    """None with `cluster.enabled: false`."""
    gpu_clusters: dict[str, gpu_clusters.GpuCluster]
    tpu_vms: dict[str, tpu_vms.TpuVms]
    slurm: slurm.SlurmCluster | None
    sources: dict[str, str]
    """Top-level component name -> the config key it comes from (`ai-infra:tpuSlices[2]`)."""


def build(config: StackConfig) -> Environment:
    sources: dict[str, str] = {}

    def source(name: str, *path: str | int) -> str:
        sources[name] = render_path(path)
        return name

    ctx = config.context
    apis = REQUIRED_SERVICES
    if config.cluster.image_streaming:
        apis += (IMAGE_STREAMING_SERVICE,)
    services = ProjectServices(
        source("services", "project"), ProjectServicesArgs(project=ctx.project, services=apis)
    )
    after_services = pulumi.ResourceOptions(depends_on=services.services)
    network = Network(
        source("network", "network"),
        NetworkArgs(context=ctx, config=config.network),
        after_services,
    ).handle
    buckets = BucketsHandle(
        {
            entry.name: Bucket(
                source(f"bucket-{entry.name}", "buckets", i),
                BucketArgs(context=ctx, config=entry),
                after_services,
            )
            for i, entry in enumerate(config.buckets)
        }
    )
    return Environment(
        config=config,
        services=services,
        network=network,
        buckets=buckets,
        gke=gke.build(
            config.gke,
            network_config=config.network,
            network=network,
            buckets=buckets,
            services=after_services,
            source=source,
        ),
        tpu_vms=tpu_vms.build(
            config.tpu_vms,
            context=ctx,
            network=network,
            buckets=buckets,
            services=after_services,
            source=source,
        ),
        gpu_clusters=gpu_clusters.build(
            config.gpu_clusters,
            context=ctx,
            network=network,
            buckets=buckets,
            services=after_services,
            source=source,
        ),
        slurm=(
            slurm.build(
                config.slurm, context=ctx, network=network, services=after_services, source=source
            )
            if config.slurm is not None
            else None
        ),
        sources=sources,
    )


def describe(config: StackConfig) -> list[tuple[str, list[str]]]:
    """The offline plan's sections, one or more per system, from the resolved config."""
    sections = gke.describe(config.gke)
    sections += tpu_vms.describe(config.tpu_vms, config.context)
    sections += gpu_clusters.describe(config.gpu_clusters, config.context, config.bucket_names())
    if config.slurm is not None:
        sections += slurm.describe(config.slurm, config.context)
    return sections


def export(env: Environment) -> None:
    if env.gke is not None:
        cluster = env.gke.cluster
        pulumi.export("clusterName", cluster.name)
        pulumi.export("clusterLocation", env.config.gke.location)
        pulumi.export("kubeconfig", cluster.kubeconfig)
        pulumi.export("nodeServiceAccount", cluster.node_service_account)
        pulumi.export("tpuChips", env.config.gke.tpu_chips)
    pulumi.export("buckets", {k: b.bucket.url for k, b in env.buckets.buckets.items()})
    pulumi.export(
        "workloadIdentities",
        {k: i.email for k, i in env.gke.identities.items()} if env.gke is not None else {},
    )
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
            for name, team in (env.gke.teams.items() if env.gke is not None else [])
        },
    )
    if env.slurm is not None:
        pulumi.export("slurm", env.slurm.exports)
