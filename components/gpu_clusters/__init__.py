"""GPU clusters as managed instance groups (`ai-infra:gpuClusters`). `stacks/` builds them with
`build()`, checks them with `problems()`, and the offline plan shows them with `describe()`.
"""

from __future__ import annotations

import pulumi

from components import gpu_catalog
from components.base import PathPart, Source
from components.buckets import BucketsHandle
from components.context import StackContext
from components.gpu_clusters.checks import account_id, group_name, problems, warnings
from components.gpu_clusters.cluster import GpuCluster, GpuClusterArgs, network_tag
from components.gpu_clusters.config import GpuClusterConfig
from components.logins import describe_logins
from components.network import NetworkHandle
from components.storage import StorageHandle
from components.storage.boot import SCRATCH_PATH

__all__ = [
    "GpuCluster",
    "GpuClusterConfig",
    "account_claims",
    "build",
    "describe",
    "network_tags",
    "problems",
]


def build(
    entries: list[GpuClusterConfig],
    *,
    context: StackContext,
    network: NetworkHandle,
    buckets: BucketsHandle,
    storage: StorageHandle,
    services: pulumi.ResourceOptions,
    source: Source,
) -> dict[str, GpuCluster]:
    return {
        entry.name: GpuCluster(
            source(f"gpucluster-{entry.name}", "gpuClusters", i),
            GpuClusterArgs(
                context=context, config=entry, network=network, buckets=buckets, storage=storage
            ),
            services,
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
        lines += [f"    warning: {warning}" for warning in warnings(c)]
    return [("GPU clusters", lines or ["  none"])]
