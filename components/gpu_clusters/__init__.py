"""GPU clusters as managed instance groups (`ai-infra:gpuClusters`). `stacks/` builds them with
`build()`, checks them with `problems()`, and the offline plan shows them with `describe()`.
"""

from __future__ import annotations

import pulumi

from components.base import PathPart, Source
from components.buckets import BucketsHandle
from components.context import StackContext
from components.gpu_clusters.checks import account_id, problems
from components.gpu_clusters.cluster import GpuCluster, GpuClusterArgs
from components.gpu_clusters.config import GpuClusterConfig
from components.network import NetworkHandle

__all__ = [
    "GpuCluster",
    "GpuClusterConfig",
    "account_claims",
    "build",
    "describe",
    "problems",
]


def build(
    entries: list[GpuClusterConfig],
    *,
    context: StackContext,
    network: NetworkHandle,
    buckets: BucketsHandle,
    services: pulumi.ResourceOptions,
    source: Source,
) -> dict[str, GpuCluster]:
    return {
        entry.name: GpuCluster(
            source(f"gpucluster-{entry.name}", "gpuClusters", i),
            GpuClusterArgs(context=context, config=entry, network=network, buckets=buckets),
            services,
        )
        for i, entry in enumerate(entries)
    }


def account_claims(
    entries: list[GpuClusterConfig], context: StackContext
) -> list[tuple[tuple[PathPart, ...], str]]:
    return [(("gpuClusters", i), account_id(context, c.name)) for i, c in enumerate(entries)]


def describe(
    entries: list[GpuClusterConfig], context: StackContext, bucket_names: dict[str, str]
) -> list[tuple[str, list[str]]]:
    """The plan's section: each cluster's VMs, GPUs, networks, mounts and orchestrator.
    `bucket_names` maps `ai-infra:buckets` names to GCS names."""
    lines = []
    for c in entries:
        mounts = [
            f"gs://{bucket_names.get(m.bucket, m.bucket)} -> {m.mount_path}" for m in c.gcs_mounts
        ]
        mounts += [f"{s.tier} {s.size_gb}GiB -> {s.mount_path}" for s in c.nfs_shares]
        lines.append(
            f"  {c.name}: {c.instance_count} x {c.machine_type} with {c.gpu_count} x "
            f"{c.gpu_type} = {c.gpus} GPUs in {context.zone_of(c.zone)}, network {c.network} "
            f"({c.nics} NIC(s)), mounts: {', '.join(mounts) or 'none'}, orchestrator "
            f"{c.orchestrator}{', spot' if c.spot else ''}"
        )
    return [("GPU clusters", lines or ["  none"])]
