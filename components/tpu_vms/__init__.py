"""TPU VM slices through Cloud TPU queued resources (`ai-infra:tpuVms`). This face declares the
registry entry (`SYSTEM`) and what other packages may use; the code is in the modules named for
what they do (`system.py` for how the stack composes, checks and describes it).
"""

from components.system import Stage, Step, System
from components.tpu_vms import system
from components.tpu_vms.checks import problems, stack_problems, subnet_problems
from components.tpu_vms.config import TpuVmConfig
from components.tpu_vms.provider import node_names
from components.tpu_vms.system import account_claims, build, describe, network_tags
from components.tpu_vms.vms import TpuVms

SYSTEM = System(
    name="tpu-vms",
    title="TPU VMs",
    keys=("tpuVms",),
    problems=system.problems,
    warnings=system.warnings,
    claims=system.claims,
    mounts=system.mounts,
    builds=(Step(Stage.MACHINES, "tpu_vms", system.build_step),),
    describe=system.sections,
    outputs=system.outputs,
    tpu_chips=system.tpu_chips,
    vms_in_vpc=system.vms_in_vpc,
    reachable=True,
    hosts=True,
)

__all__ = [
    "SYSTEM",
    "TpuVmConfig",
    "TpuVms",
    "account_claims",
    "build",
    "describe",
    "network_tags",
    "node_names",
    "problems",
    "stack_problems",
    "subnet_problems",
]
