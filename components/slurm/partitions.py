"""The partitions of `ai-infra:slurm`: which nodesets a queue schedules, whether its jobs
have nodes of their own, and the slurm.conf partition options Slurm 25.11 reads.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from components.base import ConfigModel
from components.slurm.fields import NodesetName, PartitionName, pattern_of

TPU_PARTITION_CONF = {"SuspendTime": "300", "SuspendTimeout": "240", "ResumeTimeout": "600"}
"""Partition defaults for TPU partitions: TPU VMs take minutes to create and delete, longer
than Slurm's default timeouts (Toolkit's schedmd-slurm-gcp-v6-partition)."""
CPU_PARTITION_CONF = {"SuspendTime": "300", "SuspendTimeout": "120", "ResumeTimeout": "300"}
"""The same module's defaults for partitions of Compute Engine VMs."""
PartitionValue = Literal["text", "boolean", "uint16", "uint32", "uint64"]
PARTITION_OPTIONS: dict[str, PartitionValue] = {
    "AllocNodes": "text",
    "AllowAccounts": "text",
    "AllowGroups": "text",
    "AllowQos": "text",
    "Alternate": "text",
    "CpuBind": "text",
    "DefCPUPerGPU": "uint64",
    "DefMemPerCPU": "uint64",
    "DefMemPerGPU": "uint64",
    "DefMemPerNode": "uint64",
    "Default": "boolean",
    "DefaultTime": "text",
    "DenyAccounts": "text",
    "DenyQos": "text",
    "DisableRootJobs": "boolean",
    "ExclusiveUser": "boolean",
    "ExclusiveTopo": "boolean",
    "GraceTime": "uint32",
    "Hidden": "boolean",
    "LLN": "boolean",
    "MaxCPUsPerNode": "uint32",
    "MaxCPUsPerSocket": "uint32",
    "MaxMemPerCPU": "uint64",
    "MaxMemPerNode": "uint64",
    "MaxTime": "text",
    "MaxNodes": "uint32",
    "MinNodes": "uint32",
    "Nodes": "text",
    "OverSubscribe": "text",
    "OverTimeLimit": "text",
    "PowerDownOnIdle": "boolean",
    "PreemptMode": "text",
    "Priority": "uint16",
    "PriorityJobFactor": "uint16",
    "PriorityTier": "uint16",
    "QOS": "text",
    "RootOnly": "boolean",
    "ReqResv": "boolean",
    "ResumeTimeout": "uint16",
    "SelectTypeParameters": "text",
    "Shared": "text",
    "State": "text",
    "SuspendTime": "text",
    "SuspendTimeout": "uint16",
    "Topology": "text",
    "TRESBillingWeights": "text",
}
"""The options a slurm.conf partition line takes in Slurm 25.11.4, each with how its value
is read (src/common/read_config.c `_partition_options` and src/common/parse_value.c at tag
slurm-25-11-4-1): slurmctld refuses to start on any other key, or a value the parser
refuses. Slurm reads the keys without case."""
PROGRAM_PARTITION_KEYS = (
    "PartitionName",
    "Nodes",
    "State",
    "Default",
    "OverSubscribe",
    "Shared",
    "PowerDownOnIdle",
    "Topology",
)
"""Partition options the program decides (Slurm-GCP conf.py `partitionlines` writes them, and
`partitionConf` would be spread over them); `Shared` is Slurm's older name of
`OverSubscribe`."""


def partition_option(key: str) -> str | None:
    """The option `key` names, as Slurm spells it, or None when Slurm has none of that name."""
    return _PARTITION_OPTIONS_BY_LOWER.get(key.lower())


_PARTITION_OPTIONS_BY_LOWER = {key.lower(): key for key in PARTITION_OPTIONS}

ConfKey = Annotated[
    str, pattern_of(r"[A-Za-z]{2,40}", "a slurm.conf partition option such as MaxTime")
]
ConfValue = Annotated[
    str,
    pattern_of(
        r"[A-Za-z0-9_.:,/*+-]{1,200}",
        "a slurm.conf value: letters, digits and _.:,/*+- only, no spaces or newlines",
    ),
]
"""One slurm.conf value: no spaces, quotes or newlines, so a value cannot add a line."""


class PartitionConfig(ConfigModel):
    """One entry of `ai-infra:slurm.partitions`: a queue jobs submit to with `sbatch -p`."""

    name: PartitionName
    """The partition's name, `sbatch -p <name>`."""
    nodesets: list[NodesetName] = Field(min_length=1, max_length=32)
    """Nodesets (by name) whose nodes the partition schedules: all CPU or all TPU."""
    exclusive: bool = True
    """Each job gets nodes of its own, which Slurm-GCP powers down when it ends
    (`enable_job_exclusive`). Partitions of multi-host TPU slices are always exclusive, so
    that a slice holds one job's workers; on any TPU partition a job has whole nodes."""
    default: bool = False
    """The partition jobs go to without `-p`."""
    partition_conf: dict[ConfKey, ConfValue] = Field(default_factory=dict, max_length=50)
    """Extra partition options for slurm.conf (e.g. `MaxTime`), over the defaults
    SuspendTime=300 and, for TPU partitions, SuspendTimeout=240, ResumeTimeout=600 (CPU:
    120, 300): any partition option of Slurm 25.11 in any case, with a value of its type.
    The options the program decides (PartitionName, Nodes, State, Default, OverSubscribe,
    Shared, PowerDownOnIdle, Topology) are refused."""

    def conf(self, *, tpu: bool) -> dict[str, str]:
        """The partition's options, each key as Slurm spells it, so that an option written in
        another case replaces the default rather than repeating it."""
        found = dict(TPU_PARTITION_CONF if tpu else CPU_PARTITION_CONF)
        found.update({partition_option(k) or k: v for k, v in self.partition_conf.items()})
        if self.default:
            found["Default"] = "YES"
        return found
