"""GPU clusters as the stack sees them: their build (a managed instance group each), checks at
stack paths, the accounts, tags, subnets and Filestore names they claim, their mounts, plan
section, VMs in the stack's VPC and stack outputs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from catalog import gpu as gpu_catalog
from components.base import PathPart, Problem, Source, under
from components.context import StackContext
from components.footing import Footing, entry_mounts, footing
from components.gpu_clusters.checks import account_id, group_name
from components.gpu_clusters.checks import problems as entry_problems
from components.gpu_clusters.checks import warnings as cluster_warnings
from components.gpu_clusters.cluster import GpuCluster, GpuClusterArgs, network_tag
from components.gpu_clusters.config import GpuClusterConfig
from components.logins import describe_logins
from components.storage import SCRATCH_PATH
from components.system import Claim, ClaimKind, Handles, Mounted, Section, StackView

if TYPE_CHECKING:
    from stacks.config import StackConfig


def build(
    entries: list[GpuClusterConfig], footing: Footing, source: Source
) -> dict[str, GpuCluster]:
    f = footing
    return {
        entry.name: GpuCluster(
            source(f"gpucluster-{entry.name}", "gpuClusters", i),
            GpuClusterArgs(
                context=f.context,
                config=entry,
                network=f.network,
                buckets=f.buckets,
                storage=f.storage,
            ),
            f.services,
        )
        for i, entry in enumerate(entries)
    }


def network_tags(clusters: list[GpuClusterConfig], context: StackContext) -> list[str]:
    """The network tags of the clusters whose VMs join the stack's network."""
    return [network_tag(group_name(context, c.name)) for c in clusters if c.network == "default"]


def account_claims(
    entries: list[GpuClusterConfig], context: StackContext
) -> list[tuple[tuple[PathPart, ...], str]]:
    return [(("gpuClusters", i), account_id(context, c.name)) for i, c in enumerate(entries)]


def _placement(c: GpuClusterConfig) -> str:
    if c.placement == "workload":
        distance = gpu_catalog.topology_distance(c.machine_type, c.placement_max_distance)
        capacity = gpu_catalog.series_capacity(c.machine_type)
        topology = capacity.accelerator_topology if capacity else None
        return f"workload policy ({f'maxTopologyDistance {distance}' if distance else topology})"
    if c.placement == "compact":
        distance = c.placement_max_distance
        return "compact" + (f" (max distance {distance})" if distance else "")
    return "none"


def describe(
    entries: list[GpuClusterConfig], context: StackContext, bucket_names: dict[str, str]
) -> list[tuple[str, list[str]]]:
    """The plan's section: each cluster's VMs, GPUs, networks, mounts and orchestrator.
    `bucket_names` maps `ai-infra:buckets` names to GCS names."""
    lines = []
    for c in entries:
        mounts = [
            f"gs://{bucket_names.get(m.bucket, m.bucket)} -> {m.mount_path}"
            + (" (read-only)" if m.read_only else "")
            for m in c.gcs_mounts
        ]
        mounts += [f"{s.tier} {s.size_gb}GiB -> {s.mount_path}" for s in c.nfs_shares]
        if c.data_disk is not None:
            mounts.insert(0, f"data disk {c.data_disk.size_gb}GiB -> {c.data_disk.mount_path}")
        mounts += [
            f"storage {m.volume} -> {m.mount_path}" + (" (read-only)" if m.read_only else "")
            for m in c.storage
        ]
        if c.scratch_disks:
            mounts.insert(0, f"local SSD RAID0 {c.scratch_disks} x 375GiB -> {SCRATCH_PATH}")
        capacity = c.provisioning
        if c.provisioning == "reservation":
            capacity += f" {c.reservation or '(any)'}" + (" bound" if c.bound else "")
        if c.provisioning == "flex-start":
            capacity += (
                f" for {c.run_seconds // 3600}h, kept at {c.instance_count} VM(s) by resize "
                "requests (each `pulumi up` asks again for what a finished run took)"
            )
        layout = c.nic_layout
        transport = f", NCCL over {layout.transport}" if c.gpu_direct and layout is not None else ""
        lines.append(
            f"  {c.name}: {c.instance_count} x {c.machine_type} with {c.gpu_count} x "
            f"{c.gpu_type} = {c.gpus} GPUs in {context.zone_of(c.zone)}, {capacity}, "
            f"placement {_placement(c)}, network {c.network} ({c.nics} NIC(s)"
            f"{transport}), mounts: {', '.join(mounts) or 'none'}, orchestrator "
            f"{c.orchestrator}"
        )
        if c.provisioning == "flex-start":
            ready = "  startup: not waited for (flex-start VMs come when capacity does)"
        elif c.startup_timeout_minutes:
            ready = (
                f"  startup: `pulumi up` waits up to {c.startup_timeout_minutes} min for every "
                "VM's startup script to report done, and fails naming a failed step"
            )
        else:
            ready = "  startup: not waited for (startupTimeoutMinutes: 0)"
        lines.append(f"  {ready}")
        lines += describe_logins(c.logins, f"on its VMs {group_name(context, c.name)}-* only")
    return [("GPU clusters", lines or ["  none"])]


def warnings(view: StackView) -> list[Problem]:
    """Each cluster's warnings (`checks.warnings`) at its entry's path; the plan lists them
    and `pulumi up` logs them."""
    return [
        p.under("gpuClusters", i)
        for i, c in enumerate(view.config.gpu_clusters)
        for p in cluster_warnings(c)
    ]


def problems(view: StackView) -> list[Problem]:
    config = view.config
    slurm_bucket = next((c.value for c in view.claimed(ClaimKind.BUCKET, system="slurm")), None)
    return under(
        "gpuClusters",
        entry_problems(
            config.gpu_clusters,
            config.context,
            buckets=config.bucket_names(),
            storage=config.resolved_storage,
            slurm_bucket=slurm_bucket,
            slurm_cluster=config.slurm.cluster_name if config.slurm else None,
            accounts=[(c.path, c.value) for c in view.claimed(ClaimKind.ACCOUNT)],
        ),
    )


def claims(config: StackConfig) -> list[Claim]:
    """Each cluster's account, the tag of its VMs on the stack's network, the subnets of its
    own network's NICs and its Filestore shares' names."""
    ctx = config.context
    found = [
        Claim(ClaimKind.ACCOUNT, value, path)
        for path, value in account_claims(config.gpu_clusters, ctx)
    ]
    for i, cluster in enumerate(config.gpu_clusters):
        found += [
            Claim(ClaimKind.TAG, tag, ("gpuClusters", i), "gpuClusters", opens=True)
            for tag in network_tags([cluster], ctx)
        ]
        if cluster.network != "default":
            try:
                cidrs = cluster.nic_cidrs()
            except ValueError:
                cidrs = []  # the cluster's own problem
            found += [
                Claim(ClaimKind.RANGE, cidr, ("gpuClusters", i), f"gpuClusters[{i}] subnet {k}")
                for k, cidr in enumerate(cidrs)
            ]
        found += [
            Claim(
                ClaimKind.FILESTORE,
                f"{ctx.name(cluster.name)}-nfs{k}",
                ("gpuClusters", i, "nfsShares", k),
            )
            for k in range(len(cluster.nfs_shares))
        ]
        found += _firewalls(ctx, cluster, i)
    return found


def _firewalls(ctx: StackContext, cluster: GpuClusterConfig, i: int) -> list[Claim]:
    """Its VMs' rule on the stack's network, or its own networks' IAP SSH and internal rules
    (components/gpu_clusters/networks.py; every NIC's, a superset of the VPCs it creates), and
    each share's pair (components/nfs.py)."""
    base = group_name(ctx, cluster.name)
    if cluster.network == "default":
        rules = [f"{network_tag(base)}-internal"]
    else:
        try:
            vpcs = range(len(cluster.nic_cidrs()))
        except ValueError:
            vpcs = range(0)  # the cluster's own problem
        rules = [f"{base}-iap-ssh", *(f"{base}-internal{k}" for k in vpcs)]
    rules += [
        f"{base}-nfs{k}-{side}"
        for k in range(len(cluster.nfs_shares))
        for side in ("deny", "clients")
    ]
    what = f"GPU cluster {cluster.name}"
    return [
        Claim(ClaimKind.FIREWALL, rule, ("gpuClusters", i, "name"), what, chosen=True)
        for rule in rules
    ]


def mounts(config: StackConfig) -> list[Mounted]:
    return entry_mounts(
        config.gpu_clusters,
        lambda cluster: f"GPU cluster {cluster.name}",
        lambda cluster: cluster.storage,
        lambda cluster: network_tags([cluster], config.context),
    )


def build_step(view: StackView, handles: Handles, source: Source) -> dict[str, GpuCluster]:
    return build(view.config.gpu_clusters, footing(view, handles), source)


def sections(view: StackView) -> list[Section]:
    config = view.config
    return describe(config.gpu_clusters, config.context, config.bucket_names())


def outputs(config: StackConfig, handles: Handles) -> dict[str, Any]:
    """Each cluster's group, Filestore addresses and the commands that read its state."""
    built: dict[str, GpuCluster] = handles["gpu_clusters"]
    return {
        "gpuClusters": {
            name: {
                "instanceGroup": cluster.instance_group,
                "filestoreIps": cluster.filestore_ips,
                "jupyterUrls": cluster.jupyter_urls_command,
                "errors": cluster.errors_command,
            }
            for name, cluster in built.items()
        }
    }


def vms_in_vpc(config: StackConfig) -> list[str]:
    return [
        f"GPU cluster {c.name}'s VMs (gpuClusters[{i}])"
        for i, c in enumerate(config.gpu_clusters)
        if c.network == "default"
    ]
