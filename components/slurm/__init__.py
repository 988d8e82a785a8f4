"""Slurm on Compute Engine and Cloud TPUs (`ai-infra:slurm`): a Slurm-GCP v6 cluster whose
controller creates CPU and TPU VMs for jobs. This face declares the registry entry (`SYSTEM`) and
what other packages may use; the code is in the modules named for what they do (`system.py` for
how the stack composes, checks and describes it).
"""

from components.slurm import system
from components.slurm.checks import (
    bucket_grant_problems,
    gpu_subnets,
    problems,
    stack_range_problems,
)
from components.slurm.cluster import SlurmCluster
from components.slurm.config import SlurmConfig
from components.slurm.running import edit_notices
from components.slurm.summary import describe
from components.slurm.system import (
    account_claims,
    build,
    network_tags,
    node_accounts,
)
from components.system import Stage, Step, System

SYSTEM = System(
    name="slurm",
    title="Slurm",
    keys=("slurm",),
    problems=system.problems,
    warnings=system.warnings,
    claims=system.claims,
    mounts=system.mounts,
    builds=(Step(Stage.MACHINES, "slurm", system.build_step),),
    describe=system.sections,
    outputs=system.outputs,
    edit_notices=system.edit_notices,
    tpu_chips=system.tpu_chips,
    vms_in_vpc=system.vms_in_vpc,
    reachable=True,
)

__all__ = [
    "SYSTEM",
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
