"""The partitions of `ai-infra:slurm`: which nodesets a queue schedules, whether its jobs
have nodes of their own, and the slurm.conf partition options Slurm 25.11 reads.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from components.base import ConfigModel, at_most
from components.slurm.fields import (
    MAX_JOB_SCRIPTS,
    MAX_NODESETS,
    ConfKey,
    ConfValue,
    JobScript,
    NodesetName,
    PartitionName,
)
from components.slurm.slurm_conf import PARTITION_OPTIONS, partition_option

SUSPEND_TIME = "300"
SUSPEND_TIMEOUTS = {"tpu": "240", "cpu": "120"}
"""Toolkit's SuspendTime and SuspendTimeout of TPU and other partitions
(schedmd-slurm-gcp-v6-partition main.tf): TPU VMs take minutes to delete."""


class PartitionConfig(ConfigModel):
    """One entry of `ai-infra:slurm.partitions`: a queue jobs submit to with `sbatch -p`."""

    name: PartitionName
    """The partition's name, `sbatch -p <name>`."""
    nodesets: list[NodesetName] = Field(min_length=1, max_length=MAX_NODESETS)
    """Nodesets (by name) whose nodes the partition schedules: all CPU or all TPU."""
    exclusive: bool = True
    """Each job gets nodes of its own (`OverSubscribe=EXCLUSIVE`), which Slurm-GCP powers
    down when it ends (`enable_job_exclusive`), unless a nodeset of the partition has static
    nodes: those stay up between jobs (`PowerDownOnIdle=NO`), as Toolkit's A3 blueprints
    keep theirs. Partitions of multi-host TPU slices are always exclusive, so that a slice
    holds one job's workers; on any TPU partition a job has whole nodes."""
    default: bool = False
    """The partition jobs go to without `-p`."""
    prolog_scripts: list[JobScript] = Field(default_factory=list, max_length=MAX_JOB_SCRIPTS)
    """Scripts slurmd runs before each job of this partition only, after the cluster's
    `prologScripts` (Toolkit's external prolog's `partition-<name>-prolog_slurmd.d`)."""
    epilog_scripts: list[JobScript] = Field(default_factory=list, max_length=MAX_JOB_SCRIPTS)
    """Scripts slurmd runs after each job of this partition only, after the cluster's
    `epilogScripts` (e.g. the GPU health check Toolkit's A3 blueprints run after jobs)."""
    partition_conf: Annotated[
        dict[ConfKey, ConfValue],
        at_most(len(PARTITION_OPTIONS), "each partition option of Slurm 25.11 once"),
    ] = Field(default_factory=dict, max_length=len(PARTITION_OPTIONS))
    """Extra partition options for slurm.conf (e.g. `MaxTime: 1-00:00:00`), over the defaults
    SuspendTime=300 and, for TPU partitions, SuspendTimeout=240, ResumeTimeout=600 (CPU:
    120, 300): any partition option of Slurm 25.11 in any case, each value as Slurm's own
    parsers read it (times as minutes, HH:MM:SS or DAYS-HH:MM:SS or INFINITE, no unit letters;
    numbers; the option's own words). The options the program decides (PartitionName, Nodes,
    State, Default, OverSubscribe, Shared, PowerDownOnIdle, Topology) are refused."""

    def conf(self, *, tpu: bool, resume_timeout: int, flex: bool, static: bool) -> dict[str, str]:
        """The partition's options, each key as Slurm spells it, so that an option written in
        another case replaces the default rather than repeating it. `resume_timeout` is what
        its nodesets need, which a flex-start one forces (`flex`), as Toolkit does. With
        `static` nodes an exclusive partition does not power nodes down after a job: conf.py
        writes `PowerDownOnIdle=YES` for `enable_job_exclusive` and then the partition's
        options over it (`partitionlines`), and power_save.c suspends a node flagged so
        whether or not SuspendExcNodes lists it."""
        found = {
            "SuspendTime": SUSPEND_TIME,
            "SuspendTimeout": SUSPEND_TIMEOUTS["tpu" if tpu else "cpu"],
            "ResumeTimeout": str(resume_timeout),
        }
        found.update({partition_option(k) or k: v for k, v in self.partition_conf.items()})
        if flex:
            found["ResumeTimeout"] = str(resume_timeout)
        if self.exclusive and static:
            found["PowerDownOnIdle"] = "NO"
        if self.default:
            found["Default"] = "YES"
        return found
