"""Slurm on Cloud TPUs (`ai-infra:slurm`): a Slurm-GCP v6 cluster whose controller creates TPU
VMs for jobs. `stacks/` builds it with `build()`, checks it with `problems()`, and the offline
plan shows it with `describe()`.
"""

from __future__ import annotations

import pulumi

from components.base import PathPart, Source
from components.context import StackContext
from components.network import NetworkHandle
from components.slurm.checks import problems
from components.slurm.cluster import SlurmCluster, SlurmClusterArgs, account_id
from components.slurm.config import ACCOUNT_ROLES, SlurmConfig

__all__ = [
    "SlurmCluster",
    "SlurmConfig",
    "account_claims",
    "build",
    "describe",
    "problems",
]


def build(
    config: SlurmConfig,
    *,
    context: StackContext,
    network: NetworkHandle,
    services: pulumi.ResourceOptions,
    source: Source,
) -> SlurmCluster:
    return SlurmCluster(
        source("slurm", "slurm"),
        SlurmClusterArgs(context=context, network=network, config=config),
        services,
    )


def account_claims(context: StackContext) -> list[tuple[tuple[PathPart, ...], str]]:
    """The cluster's controller, TPU node and login account ids."""
    return [(("slurm",), account_id(context, role)) for role in ACCOUNT_ROLES]


def describe(config: SlurmConfig, context: StackContext) -> list[tuple[str, list[str]]]:
    """The plan's section: nodesets with their workers per slice, and partitions."""
    lines = [
        f"  cluster {config.cluster_name}: controller {config.controller.machine_type}, "
        f"{config.login.count} x {config.login.machine_type} login"
    ]
    for n in config.tpu_nodesets:
        shape = n.node_type or (
            f"{n.accelerator_config.version} {n.accelerator_config.topology}"
            if n.accelerator_config
            else "?"
        )
        flags = [f for f, on in (("preemptible", n.preemptible), ("reserved", n.reserved)) if on]
        lines.append(
            f"  nodeset {n.name}: {shape} in {context.zone_of(n.zone)}, {n.workers_per_slice} "
            f"worker(s) per slice, {n.node_count_static} static + up to "
            f"{n.node_count_dynamic_max} dynamic nodes, runtime tpu-vm-tf-{n.tf}"
            f"{''.join(f', {f}' for f in flags)}"
        )
    for p in config.partitions:
        lines.append(
            f"  partition {p.name}{' (default)' if p.default else ''}: "
            f"{', '.join(p.nodesets)}{', exclusive' if p.exclusive else ''}"
        )
    return [("Slurm (TPU nodesets, workers per slice, partitions)", lines)]
