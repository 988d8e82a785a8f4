"""Composes one stack from a validated `StackConfig`: the project services, the network and
buckets every system shares, then each system from its own keys. This is the only place
systems meet; each receives the stack context and handles on what it builds upon, and
`Environment.sources` records which config key each top-level component comes from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pulumi

from components import gke, gpu_clusters, network, slurm, storage, tpu_vms
from components.base import under
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
    storage: storage.StorageHandle
    team_volumes: dict[str, storage.TeamVolumes]
    """Each granted team's volumes on GKE."""
    sources: dict[str, str]
    """Top-level component name -> the config key it comes from (`ai-infra:tpuSlices[2]`)."""


def build(config: StackConfig) -> Environment:
    for line in warnings(config):
        pulumi.log.warn(line)
    sources: dict[str, str] = {}

    def source(name: str, *path: str | int) -> str:
        sources[name] = render_path(path)
        return name

    ctx = config.context
    apis = REQUIRED_SERVICES
    if config.cluster.image_streaming:
        apis += (IMAGE_STREAMING_SERVICE,)
    stored = config.resolved_storage
    if stored.needs_service_access:
        apis += storage.STORAGE_SERVICES
    services = ProjectServices(
        source("services", "project"), ProjectServicesArgs(project=ctx.project, services=apis)
    )
    after_services = pulumi.ResourceOptions(depends_on=services.services)
    network = Network(
        source("network", "network"),
        NetworkArgs(
            context=ctx,
            config=config.network,
            gke=config.cluster.enabled,
            system_tags=system_tags(config),
        ),
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
    volumes = storage.build(
        stored,
        network=network,
        clients=storage_clients(config),
        services=after_services,
        source=source,
    )
    gke_env = gke.build(
        config.gke,
        network_config=config.network,
        network=network,
        buckets=buckets,
        services=after_services,
        source=source,
    )
    team_volumes = {}
    if gke_env is not None:
        team_volumes = storage.build_team_volumes(
            volumes,
            namespaces={name: team.namespace for name, team in gke_env.teams.items()},
            members={name: team.identity.member for name, team in gke_env.teams.items()},
            buckets=buckets,
            kubernetes=gke_env.kubernetes,
            source=source,
        )
    return Environment(
        config=config,
        services=services,
        network=network,
        buckets=buckets,
        gke=gke_env,
        tpu_vms=tpu_vms.build(
            config.tpu_vms,
            context=ctx,
            network=network,
            buckets=buckets,
            storage=volumes,
            services=after_services,
            source=source,
        ),
        gpu_clusters=gpu_clusters.build(
            config.gpu_clusters,
            context=ctx,
            network=network,
            buckets=buckets,
            storage=volumes,
            services=after_services,
            source=source,
        ),
        slurm=(
            slurm.build(
                config.slurm,
                context=ctx,
                network=network,
                storage=volumes,
                buckets=buckets,
                services=after_services,
                source=source,
            )
            if config.slurm is not None
            else None
        ),
        storage=volumes,
        team_volumes=team_volumes,
        sources=sources,
    )


def system_tags(config: StackConfig) -> dict[str, list[str]]:
    """The network tags of every system's VMs on the stack's network besides GKE's, by the
    `network.allow` name that opens them; systems the stack lacks are left out."""
    ctx = config.context
    tags = slurm.network_tags(config.slurm) if config.slurm is not None else {}
    tags["gpuClusters"] = gpu_clusters.network_tags(config.gpu_clusters, ctx)
    tags["tpuVms"] = tpu_vms.network_tags(config.tpu_vms, ctx)
    return {system: found for system, found in tags.items() if found}


def warnings(config: StackConfig) -> list[str]:
    """What a valid config may say but probably does not mean, as `path: message`; `pulumi
    up` logs them and the plan lists them."""
    found = gke.warnings(config.gke)
    found += under(
        "storage",
        storage.warnings(
            config.resolved_storage, {b.name: b.hierarchical_namespace for b in config.buckets}
        ),
    )
    return [f"{render_path(w.path)}: {w.message}" for w in found]


def describe(config: StackConfig) -> list[tuple[str, list[str]]]:
    """The offline plan's sections, one or more per system, from the resolved config, and
    the warnings last."""
    sections = network.describe(config.network, config.prefix)
    sections += gke.describe(config.gke)
    sections += tpu_vms.describe(config.tpu_vms, config.context)
    sections += gpu_clusters.describe(config.gpu_clusters, config.context, config.bucket_names())
    if config.slurm is not None:
        sections += slurm.describe(
            config.slurm, config.context, config.resolved_storage.lustre_names
        )
    mounts = {
        name: [(m.who, m.mount) for m in found] for name, found in storage_mounts(config).items()
    }
    sections += storage.describe(config.resolved_storage, mounts)
    if found := warnings(config):
        sections.append(("Warnings", [f"  {line}" for line in found]))
    return sections


@dataclass(frozen=True)
class Mounted:
    """One mount of a storage volume by a system: who mounts it (for the plan), where, and the
    network tags of the VMs that do."""

    who: str
    mount: storage.StorageMount
    tags: tuple[str, ...]


def storage_mounts(config: StackConfig) -> dict[str, list[Mounted]]:
    """Volume name -> every system's mount of it, from their `storage` lists."""
    found: dict[str, list[Mounted]] = {}

    def add(who: str, mounts: list[storage.StorageMount], tags: list[str]) -> None:
        for mount in mounts:
            found.setdefault(mount.volume, []).append(Mounted(who, mount, tuple(tags)))

    if config.slurm is not None:
        cluster = config.slurm
        tags = slurm.network_tags(cluster)["slurm"]
        add(f"Slurm {cluster.cluster_name} (every VM)", cluster.storage, tags)
        for group in cluster.login_groups:
            add(f"Slurm login group {group.name}", group.storage, tags)
        for nodeset in [*cluster.cpu_nodesets, *cluster.tpu_nodesets]:
            add(f"Slurm nodeset {nodeset.name}", nodeset.storage, tags)
    ctx = config.context
    for cluster in config.gpu_clusters:
        tags = gpu_clusters.network_tags([cluster], ctx)
        add(f"GPU cluster {cluster.name}", cluster.storage, tags)
    for entry in config.tpu_vms:
        add(f"TPU VMs {entry.name}", entry.storage, tpu_vms.network_tags([entry], ctx))
    return found


def storage_clients(config: StackConfig) -> dict[str, list[str]]:
    """Volume name -> the network tags of the VMs that mount it: GKE's nodes for a volume
    granted to a team, and each system's VMs for one its `storage` lists mount."""
    found: dict[str, set[str]] = {}
    if config.cluster.enabled:
        for grants in config.resolved_storage.team_grants().values():
            for name in grants:
                found.setdefault(name, set()).add(network.gke_node_tag(config.prefix))
    for name, mounts in storage_mounts(config).items():
        for mounted in mounts:
            found.setdefault(name, set()).update(mounted.tags)
    return {name: sorted(tags) for name, tags in found.items()}


def diff_notices(after: StackConfig, mtus: Mapping[str, tuple[int, int]]) -> list[str]:
    """What the offline diff must add to the resources it lists, because the provider's update
    does not show it: VMs that keep a VPC's old MTU. `mtus` holds VPC name -> (old, new) MTU
    for each network of both plans whose MTU moves."""
    notices = []
    vpc = after.network.vpc_name(after.prefix)
    if vpc in mtus:
        notice = network.mtu_change_notice(*mtus[vpc], [vpc], vms_in_vpc(after))
        notices += [notice] if notice else []
    # The node networks share one MTU, so they move together and are told in one notice.
    node_vpcs = [n for n in after.network.node_networks(after.prefix).values() if n.vpc in mtus]
    if node_vpcs:
        notice = network.mtu_change_notice(
            *mtus[node_vpcs[0].vpc],
            [n.vpc for n in node_vpcs],
            [f"the slice pools attached to {', '.join(n.name for n in node_vpcs)}"],
        )
        notices += [notice] if notice else []
    return notices


def vms_in_vpc(config: StackConfig) -> list[str]:
    """The VMs of one stack that boot into its VPC, by who creates them."""
    gke_config = config.gke
    found = [f"GKE node pools {', '.join(gke_config.pool_names)}"]
    if gke_config.tpu_provisioner.enabled:
        found.append("the node pools the TPU provisioner creates")
    found += [
        f"TPU VMs {', '.join(vm.node_names)} (tpuVms[{i}])"
        for i, vm in enumerate(config.tpu_vms)
        if vm.network is None
    ]
    found += [
        f"GPU cluster {c.name}'s VMs (gpuClusters[{i}])"
        for i, c in enumerate(config.gpu_clusters)
        if c.network == "default"
    ]
    if config.slurm is not None:
        found.append(
            f"Slurm cluster {config.slurm.cluster_name}'s controller, login VMs and the TPU VMs "
            "it creates"
        )
    return found


def export(env: Environment) -> None:
    if env.gke is not None:
        cluster = env.gke.cluster
        pulumi.export("clusterName", cluster.name)
        pulumi.export("clusterLocation", env.config.gke.location)
        pulumi.export("kubeconfig", cluster.kubeconfig)
        pulumi.export("nodeServiceAccount", cluster.node_service_account)
    pulumi.export("tpuChips", env.config.tpu_chips)
    pulumi.export("buckets", {k: b.bucket.url for k, b in env.buckets.buckets.items()})
    pulumi.export(
        "workloadIdentities",
        {k: i.email for k, i in env.gke.identities.items()} if env.gke is not None else {},
    )
    pulumi.export(
        "tpuVms",
        {
            name: {
                "nodeNames": vms.node_names,
                "sshCommands": vms.ssh_commands,
                "iapSshCommands": vms.iap_ssh_commands,
            }
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
                "errors": cluster.errors_command,
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
    pulumi.export(
        "storage",
        {
            name: endpoint.apply(lambda e: {"kind": e.kind, "source": e.source})
            for name, endpoint in env.storage.endpoints.items()
        },
    )
    if env.slurm is not None:
        pulumi.export("slurm", env.slurm.exports)
