"""The problems of `ai-infra:slurm`, with paths relative to it: each nodeset's machine or TPU
type, runtime, image, zones, disks and counts against what Slurm-GCP v6 can create, the
cluster's name and bucket, the accounts nodes run as, shared storage, and how partitions use
the nodesets.
"""

from __future__ import annotations

from components.base import Problem
from components.context import StackContext
from components.slurm.checks.cluster import (
    cluster_problems,
    gpu_subnets,
    name_problems,
    nodeset_problems,
    stack_range_problems,
)
from components.slurm.checks.partitions import partition_problems
from components.slurm.checks.storage import bucket_grant_problems
from components.slurm.config import SlurmConfig
from components.storage import Storage

__all__ = ["bucket_grant_problems", "gpu_subnets", "problems", "stack_range_problems"]


def problems(
    config: SlurmConfig, ctx: StackContext, *, buckets: list[str], storage: Storage
) -> list[Problem]:
    """Cross-checks of `ai-infra:slurm`, with paths relative to it; `storage` holds the
    volumes its `storage` lists mount."""
    found = name_problems(config)
    nodeset_found, valid = nodeset_problems(config, ctx, storage)
    found += nodeset_found
    found += cluster_problems(config, ctx, buckets, storage)
    found += partition_problems(config, valid)
    return found
