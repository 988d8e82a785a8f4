"""GPU clusters as managed instance groups (`ai-infra:gpuClusters`). This face declares the
registry entry (`SYSTEM`) and what other packages may use; the code is in the modules named for
what they do (`system.py` for how the stack composes, checks and describes it).
"""

from components.gpu_clusters import system
from components.gpu_clusters.checks import group_name, problems
from components.gpu_clusters.cluster import GpuCluster
from components.gpu_clusters.config import GpuClusterConfig
from components.gpu_clusters.system import account_claims, build, describe, network_tags
from components.system import Stage, Step, System

SYSTEM = System(
    name="gpu-clusters",
    title="GPU clusters",
    keys=("gpuClusters",),
    problems=system.problems,
    warnings=system.warnings,
    claims=system.claims,
    mounts=system.mounts,
    builds=(Step(Stage.MACHINES, "gpu_clusters", system.build_step),),
    describe=system.sections,
    outputs=system.outputs,
    vms_in_vpc=system.vms_in_vpc,
    reachable=True,
    hosts=True,
)

__all__ = [
    "SYSTEM",
    "GpuCluster",
    "GpuClusterConfig",
    "account_claims",
    "build",
    "describe",
    "group_name",
    "network_tags",
    "problems",
]
