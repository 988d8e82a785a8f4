"""Slurm on Compute Engine and Cloud TPUs (`ai-infra:slurm`): a Slurm-GCP v6 cluster whose
controller creates CPU and TPU VMs for jobs. `stacks/` builds it with `build()`, checks it with
`problems()`, and the offline plan shows it with `describe()`.
"""

from __future__ import annotations

import pulumi

from components.base import PathPart, Source
from components.buckets import BucketsHandle
from components.context import StackContext
from components.network import NetworkHandle, system_tag
from components.slurm.checks import (
    bucket_grant_problems,
    gpu_subnets,
    problems,
    stack_range_problems,
)
from components.slurm.cluster import SlurmCluster, SlurmClusterArgs
from components.slurm.config import SlurmConfig, account_id
from components.slurm.fields import ACCOUNT_ROLES
from components.slurm.running import edit_notices
from components.slurm.summary import describe
from components.storage import StorageHandle

__all__ = [
    "SlurmCluster",
    "SlurmConfig",
    "account_claims",
    "bucket_grant_problems",
    "build",
    "describe",
    "edit_notices",
    "gpu_subnets",
    "network_tags",
    "node_accounts",
    "problems",
    "stack_range_problems",
]


def build(
    config: SlurmConfig,
    *,
    context: StackContext,
    network: NetworkHandle,
    storage: StorageHandle,
    buckets: BucketsHandle,
    services: pulumi.ResourceOptions,
    source: Source,
) -> SlurmCluster:
    return SlurmCluster(
        source("slurm", "slurm"),
        SlurmClusterArgs(
            context=context, network=network, storage=storage, buckets=buckets, config=config
        ),
        services,
    )


def account_claims(context: StackContext) -> list[tuple[tuple[PathPart, ...], str]]:
    """The cluster's controller, TPU node, login and CPU node account ids."""
    return [(("slurm",), account_id(context, role)) for role in ACCOUNT_ROLES]


def network_tags(config: SlurmConfig) -> dict[str, list[str]]:
    """The tags `network.allow` opens the cluster by: all its VMs, the controller, the login
    VMs (`vms.slurm_tags`)."""
    cluster = config.cluster_name
    return {
        "slurm": [cluster],
        "slurmController": [system_tag(cluster, "controller")],
        "slurmLogin": [system_tag(cluster, "login")],
    }


def node_accounts(config: SlurmConfig) -> list[tuple[tuple[PathPart, ...], str]]:
    """The accounts nodesets name to run as, by the path of their `serviceAccountEmail`; the
    controller may act as each, so none may be another system's."""
    found: list[tuple[tuple[PathPart, ...], str]] = []
    for key, nodesets in (
        ("tpuNodesets", config.tpu_nodesets),
        ("cpuNodesets", config.cpu_nodesets),
    ):
        for i, nodeset in enumerate(nodesets):
            if nodeset.service_account_email is not None:
                found.append(
                    (("slurm", key, i, "serviceAccountEmail"), nodeset.service_account_email)
                )
    return found
