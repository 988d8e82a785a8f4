"""The problems of the partitions: the nodesets they name, their slurm.conf options, and how
they keep a job's nodes to itself.
"""

from __future__ import annotations

import difflib
from collections import Counter

from components.base import Problem
from components.slurm.config import SlurmConfig
from components.slurm.fields import SLURM_RELEASE
from components.slurm.nodesets import CpuNodesetConfig, TpuNodesetConfig
from components.slurm.partitions import PartitionConfig
from components.slurm.slurm_conf import (
    PARTITION_OPTIONS,
    PROGRAM_OPTIONS,
    conf_problems,
    partition_option,
    unsigned_value,
    value_problem,
)


def _partition_conf_problems(conf: dict[str, str]) -> list[Problem]:
    """Each key a partition option of the pinned Slurm that the program does not decide, once
    in any case, with a value Slurm's parser reads."""
    program = {k.lower(): k for k in PROGRAM_OPTIONS}
    found = []
    seen: dict[str, str] = {}
    for key, value in conf.items():
        lower = key.lower()
        option = partition_option(key)
        if lower in program:
            hint = "set default: true instead" if lower == "default" else "remove it"
            found.append(
                Problem(
                    ("partitionConf", key),
                    f"{program[lower]} is decided by the program from the partition's "
                    f"nodesets and flags (Slurm reads option names without case); {hint}",
                )
            )
        elif option is None:
            close = difflib.get_close_matches(lower, [k.lower() for k in PARTITION_OPTIONS], 1)
            hint = f"did you mean {partition_option(close[0])}? " if close else ""
            found.append(
                Problem(
                    ("partitionConf", key),
                    f"Slurm {SLURM_RELEASE} has no partition option '{key}', and slurmctld "
                    f"stops at an unknown one; {hint}options: https://slurm.schedmd.com/"
                    "slurm.conf.html#SECTION_PARTITION-CONFIGURATION",
                )
            )
        elif lower in seen:
            found.append(
                Problem(
                    ("partitionConf", key),
                    f"repeats {seen[lower]} (Slurm reads option names without case); keep one",
                )
            )
        elif problem := value_problem(option, value):
            found.append(
                Problem(
                    ("partitionConf", key),
                    f"{problem}; slurmctld stops at a {option} it cannot read",
                )
            )
        seen.setdefault(lower, key)
    if not found:
        written = {partition_option(k) or k: k for k in conf}
        spelled = {partition_option(k) or k: v for k, v in conf.items()}
        found += [
            Problem(("partitionConf", written[option]), message)
            for option, message in conf_problems(spelled).items()
        ]
    return found


def partition_problems(config: SlurmConfig, valid: dict[str, TpuNodesetConfig]) -> list[Problem]:
    cpu = {n.name: n for n in config.all_cpu_nodesets}
    tpu_names = {n.name for n in config.tpu_nodesets}
    names = set(cpu) | tpu_names
    used: set[str] = set()
    found: list[Problem] = []
    for i, partition in enumerate(config.partitions):
        for j, name in enumerate(partition.nodesets):
            used.add(name)
            if name not in names:
                found.append(
                    Problem(
                        ("partitions", i, "nodesets", j),
                        f"no CPU or TPU nodeset named '{name}'; known: "
                        f"{', '.join(sorted(names)) or 'none'}",
                    )
                )
        repeated = [n for n, c in Counter(partition.nodesets).items() if c > 1]
        if repeated:
            found.append(
                Problem(("partitions", i, "nodesets"), f"lists {', '.join(repeated)} twice")
            )
        kinds = {("cpu" if n in cpu else "tpu") for n in partition.nodesets if n in names}
        if len(kinds) > 1:
            found.append(
                Problem(
                    ("partitions", i, "nodesets"),
                    "mixes CPU and TPU nodesets; Slurm-GCP treats a partition with any TPU "
                    "nodeset as a TPU partition (exclusive, node counts in slices), so put "
                    "them in partitions of their own",
                )
            )
        found += [
            p.under("partitions", i) for p in _partition_conf_problems(partition.partition_conf)
        ]
        found += [p.under("partitions", i) for p in _exclusivity_problems(partition, valid, cpu)]
        found += [p.under("partitions", i) for p in _resume_problems(partition, valid, cpu)]
    found += _whole_slice_problems(config, valid)
    defaults = [i for i, p in enumerate(config.partitions) if p.default]
    for i in defaults[1:]:
        found.append(
            Problem(
                ("partitions", i, "default"),
                f"partitions[{defaults[0]}] is already the default; keep one",
            )
        )
    if config.debug_partition:
        used.add("debug")
    for key, entries in (
        ("tpuNodesets", config.tpu_nodesets),
        ("cpuNodesets", config.cpu_nodesets),
    ):
        for i, nodeset in enumerate(entries):
            if nodeset.name not in used:
                found.append(
                    Problem(
                        (key, i, "name"),
                        f"no partition lists '{nodeset.name}', so no job could reach it; add "
                        "it to a partition's nodesets",
                    )
                )
    if (config.tpu_nodesets or config.cpu_nodesets) and not config.partitions:
        found.append(Problem(("partitions",), "add a partition, e.g. {name: tpu, nodesets: [...]}"))
    return found


def _exclusivity_problems(
    partition: PartitionConfig,
    valid: dict[str, TpuNodesetConfig],
    cpu: dict[str, CpuNodesetConfig],
) -> list[Problem]:
    """Exclusive partitions of multi-host slices, and slices of one size per partition."""
    found = []
    members = [valid[n] for n in partition.nodesets if n in valid]
    multi_host = [n.name for n in members if n.workers_per_slice > 1]
    if multi_host and not partition.exclusive:
        # resume.py group_nodes_bulk cuts the nodes of every non-exclusive job it resumes
        # together into slices: two jobs' workers would share one TPU slice.
        found.append(
            Problem(
                ("exclusive",),
                f"a partition of multi-host TPU slices ({', '.join(multi_host)}) is always "
                "exclusive: Slurm-GCP cuts the nodes of all non-exclusive jobs it resumes "
                "into slices together, so two jobs would share a slice; remove "
                "exclusive: false",
            )
        )
    if len({n.workers_per_slice for n in members}) > 1:
        found.append(
            Problem(
                ("nodesets",),
                "its nodesets differ in workers per slice; a job's node count must mean "
                "whole slices in every nodeset, so split them into partitions",
            )
        )
    return found


def _resume_problems(
    partition: PartitionConfig,
    valid: dict[str, TpuNodesetConfig],
    cpu: dict[str, CpuNodesetConfig],
) -> list[Problem]:
    """A ResumeTimeout of the partition's own that a flex-start nodeset overrides, or that is
    shorter than its nodesets need: Slurm marks a node down at ResumeTimeout and requeues
    its job (power_save.c), and for flex-start Slurm-GCP then deletes the waiting group."""
    written = next(
        (k for k in partition.partition_conf if partition_option(k) == "ResumeTimeout"), None
    )
    if written is None:
        return []
    value = partition.partition_conf[written]
    nodesets = [*(valid[n] for n in partition.nodesets if n in valid)]
    nodesets += [cpu[n] for n in partition.nodesets if n in cpu]
    flex = [n.name for n in nodesets if isinstance(n, CpuNodesetConfig) and n.flex]
    if flex:
        return [
            Problem(
                ("partitionConf", written),
                f"{', '.join(flex)} is flex-start: its nodes come when the resize request gets "
                "capacity, so the partition's ResumeTimeout is 65535 (as Toolkit forces it) "
                "and one of its own would cancel jobs still waiting; remove it",
            )
        ]
    need = max((n.resume_timeout for n in nodesets), default=0)
    seconds = unsigned_value("uint16", value)
    if seconds is None or seconds >= need:
        return []
    slowest = max(nodesets, key=lambda n: n.resume_timeout)
    return [
        Problem(
            ("partitionConf", written),
            f"{value} s is shorter than the {need} s {slowest.name}'s nodes may take to be "
            "created and register; Slurm would mark them down and requeue the job; raise it "
            f"to at least {need} or remove it",
        )
    ]


def _whole_slice_problems(config: SlurmConfig, valid: dict[str, TpuNodesetConfig]) -> list[Problem]:
    """What would split a slice of more than one TPU VM: a max_switch_wait of the user's
    (files.cloud_parameters_document sets it), or a resume rate. power_save.c `_do_resume`
    spends one token of ResumeRate per node, so a job's nodes may reach resume.py over two
    calls; each call's chunk of a slice is then short of `vmcount` and tpu.py `create_node`
    refuses it: no TPU is created for either part, and the job waits out ResumeTimeout."""
    rate = config.cloud_parameters.resume_rate
    multi_host = sorted(n.name for n in valid.values() if n.workers_per_slice > 1)
    if not multi_host:
        return []
    found = [
        Problem(
            ("cloudParameters", "schedulerParameters", i),
            "max_switch_wait is the program's while multi-host TPU nodesets exist: it keeps "
            "a job waiting for whole slices (a shorter wait gives nodes of two slices, for "
            "which no TPU is created); remove it",
        )
        for i, option in enumerate(config.cloud_parameters.scheduler_parameters or [])
        if option.split("=", 1)[0] == "max_switch_wait"
    ]
    if not rate:
        return found
    return [
        *found,
        Problem(
            ("cloudParameters", "resumeRate"),
            f"{rate} nodes a minute would hand the workers of one slice of "
            f"{', '.join(multi_host)} to Slurm-GCP's resume in parts, and it creates no TPU "
            "for a part of a slice; remove resumeRate (or set 0) while multi-host TPU "
            "nodesets exist",
        ),
    ]
