"""The partitionConf grammar against a table of values drawn from Slurm 25.11.4's own parsers
(tag slurm-25-11-4-1; each row names the function that decides it): what slurmctld refuses to
start with, or reads as something other than what is written, is refused; what it reads as
written is taken."""

from __future__ import annotations

import pytest

from components.slurm.slurm_conf import (
    PARTITION_OPTIONS,
    PROGRAM_OPTIONS,
    conf_problems,
    time_seconds,
    value_problem,
)
from graph.engine import record_program
from stacks.messages import ConfigError
from tests.slurm.test_config import partition

TAKEN = [
    # parse_time.c time_str2secs: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS.
    ("MaxTime", "60"),
    ("MaxTime", "90:30"),
    ("MaxTime", "24:00:00"),
    ("MaxTime", "1-0"),
    ("MaxTime", "2-"),
    ("MaxTime", "1-12:30"),
    ("MaxTime", "7-00:00:00"),
    ("MaxTime", "0"),
    # ... and "-1", INFINITE or UNLIMITED in any case (xstrcasecmp).
    ("MaxTime", "INFINITE"),
    ("MaxTime", "infinite"),
    ("MaxTime", "UNLIMITED"),
    ("DefaultTime", "Unlimited"),
    ("DefaultTime", "-1"),
    # parse_value.c s_p_handle_uint16/32/64: strtoul base 0, k on 32/64 bits, UNLIMITED.
    ("ResumeTimeout", "900"),
    ("ResumeTimeout", "65535"),
    ("ResumeTimeout", "0x384"),
    ("ResumeTimeout", "INFINITE"),
    ("GraceTime", "30"),
    ("GraceTime", "+30"),
    ("MaxMemPerNode", "64k"),
    ("MaxNodes", "UNLIMITED"),
    ("MaxNodes", "010"),
    ("DefMemPerCPU", "18446744073709551615"),
    # parse_value.c s_p_handle_boolean.
    ("Hidden", "yes"),
    ("Hidden", "UP"),
    ("LLN", "0"),
    ("ExclusiveUser", "True"),
    # read_config.c _parse_partitionname: OverTimeLimit INFINITE/UNLIMITED or minutes.
    ("OverTimeLimit", "10"),
    ("OverTimeLimit", "unlimited"),
    # ... SuspendTime INFINITE, -1, or seconds up to UINT32_MAX.
    ("SuspendTime", "600"),
    ("SuspendTime", "INFINITE"),
    ("SuspendTime", "-1"),
    ("SuspendTime", "4294967295"),
    # ... SelectTypeParameters: the four partition ones.
    ("SelectTypeParameters", "CR_Core_Memory"),
    ("SelectTypeParameters", "cr_socket"),
    # slurm_protocol_defs.c preempt_mode_num: one mode, optionally WITHIN or PRIORITY.
    ("PreemptMode", "REQUEUE"),
    ("PreemptMode", "cancel,within"),
    ("PreemptMode", "OFF"),
    ("PreemptMode", "suspend,priority"),
    ("PreemptMode", "within,priority"),
    # slurm_resource_info.c xlate_cpu_bind_str: one type, verbose, split at ',' or ';'.
    ("CpuBind", "cores"),
    ("CpuBind", "verbose,threads"),
    ("CpuBind", "none"),
    # slurm_protocol_api.c _tres_weight_item: TYPE[/NAME]=number[KMGTP].
    ("TRESBillingWeights", "CPU=1.0,Mem=0.25G"),
    ("TRESBillingWeights", "billing=2,fs/disk=0.5"),
    ("AllowGroups", "ml,infra"),
    ("QOS", "normal"),
]

REFUSED = [
    # time_str2secs: _is_valid_timespec takes digits, '-' and ':' only, so no unit letters
    # (issue 37: MaxTime 24h, DefaultTime 1h) and no words (issue 41: forever).
    ("MaxTime", "24h", "not a Slurm time"),
    ("DefaultTime", "1h", "not a Slurm time"),
    ("MaxTime", "forever", "not a Slurm time"),
    ("DefaultTime", "never", "not a Slurm time"),
    ("MaxTime", "1:", "not a Slurm time"),  # a ':' wants a digit run after it
    ("MaxTime", "1-:30", "not a Slurm time"),  # D-HH:MM wants three digit runs
    ("MaxTime", "1:2-3", "not a Slurm time"),  # no '-' after a ':'
    ("MaxTime", "1-2-3", "not a Slurm time"),  # one '-' at most
    ("MaxTime", "1:2:3:4", "not a Slurm time"),  # two ':' at most
    # _parse_partitionname: a time below 0 other than INFINITE stops slurmctld.
    ("MaxTime", "-5", "negative"),
    # sscanf %d into an int: past INT_MAX the value wraps.
    ("MaxTime", "99999-0", "int holds"),
    # s_p_handle_uint16: no k suffix, nothing above 65535, no sign, no words.
    ("ResumeTimeout", "70000", "more than 65535"),
    ("ResumeTimeout", "1k", "whole number"),
    ("SuspendTimeout", "-5", "whole number"),
    ("PriorityTier", "high", "whole number"),
    ("MaxNodes", "08", "whole number"),  # base 0: '8' is not octal
    ("MaxNodes", "4294967296", "more than 4294967295"),
    ("MaxNodes", "4194304k", "more than 4294967295"),
    ("DefMemPerCPU", "18446744073709551616", "more than"),
    # s_p_handle_boolean.
    ("Hidden", "maybe", "YES or NO"),
    ("LLN", "2", "YES or NO"),
    # OverTimeLimit: strtol reads a word as 0 and above 65534 as UNLIMITED.
    ("OverTimeLimit", "soon", "0 to 65534"),
    ("OverTimeLimit", "70000", "0 to 65534"),
    # SuspendTime: strtoul reads a word (UNLIMITED included) as 0, and above UINT32_MAX stops.
    ("SuspendTime", "soon", "INFINITE or -1"),
    ("SuspendTime", "UNLIMITED", "INFINITE or -1"),
    ("SuspendTime", "4294967296", "INFINITE or -1"),
    # SelectTypeParameters: anything else stops slurmctld; CR_CPU is not a partition's.
    ("SelectTypeParameters", "bogus", "not one of"),
    ("SelectTypeParameters", "CR_CPU", "not one of"),
    ("SelectTypeParameters", "CR_Core_Memoryx", "not one of"),
    # preempt_mode_num: unknown words and two modes give NO_VAL16, which stops slurmctld;
    # GANG is cluster-wide (dropped from a partition).
    ("PreemptMode", "bogus", "not a PreemptMode"),
    ("PreemptMode", "requeue,cancel", "more than one mode"),
    ("PreemptMode", "gang", "cluster-wide"),
    ("PreemptMode", "suspend,gang", "cluster-wide"),
    # xlate_cpu_bind_str: two types, or another word, and the option is ignored.
    ("CpuBind", "cores,threads", "not a CpuBind"),
    ("CpuBind", "rank", "not a CpuBind"),
    # _tres_weight_item: only configured TRES; a number after '='.
    ("TRESBillingWeights", "gres/gpu=2", "not a TRES the cluster tracks"),
    ("TRESBillingWeights", "CPU=lots", "not a TRES weight"),
    ("TRESBillingWeights", "CPU", "not a TRES weight"),
    ("AllowGroups", "ml:infra", "names"),
    ("QOS", "a,b", "one name"),
]


@pytest.mark.parametrize(("option", "value"), TAKEN)
def test_values_slurm_reads_as_written_are_taken(option: str, value: str):
    assert value_problem(option, value) is None


@pytest.mark.parametrize(("option", "value", "why"), REFUSED)
def test_values_slurm_refuses_or_misreads_are_refused(option: str, value: str, why: str):
    problem = value_problem(option, value)
    assert problem is not None and why in problem, (value, problem)


def test_every_option_has_a_kind_and_every_kind_is_tabled():
    tabled = {option for option, *_ in [*TAKEN, *REFUSED]}
    kinds = {PARTITION_OPTIONS[o] for o in tabled}
    assert kinds == set(PARTITION_OPTIONS.values()) - {"program", "hostlist"}
    assert set(PROGRAM_OPTIONS) == {
        "PartitionName",
        "Default",
        "Nodes",
        "OverSubscribe",
        "PowerDownOnIdle",
        "Shared",
        "State",
        "Topology",
    }


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("60", 3600), ("1:30", 90), ("1:00:00", 3600), ("1-", 86400), ("1-2:03:04", 93784)],
)
def test_times_read_as_time_str2secs_reads_them(value: str, seconds: int):
    assert time_seconds(value) == seconds


def test_a_default_time_above_the_max_time_is_refused_as_slurmctld_drops_it():
    assert (
        "above MaxTime" in conf_problems({"MaxTime": "60", "DefaultTime": "2:00:00"})["DefaultTime"]
    )
    assert conf_problems({"MaxTime": "60", "DefaultTime": "60"}) == {}
    assert conf_problems({"MaxTime": "UNLIMITED", "DefaultTime": "7-0"}) == {}
    assert "DefaultTime" in conf_problems({"MaxTime": "60", "DefaultTime": "INFINITE"})


@pytest.mark.parametrize(
    ("conf", "key", "why"),
    [
        ({"MaxTime": "24h"}, "MaxTime", "not a Slurm time"),
        ({"preemptmode": "bogus"}, "preemptmode", "slurmctld stops at a PreemptMode"),
        ({"SuspendTime": "soon"}, "SuspendTime", "INFINITE or -1"),
        ({"maxtime": "60", "DefaultTime": "90"}, "DefaultTime", "above MaxTime"),
    ],
)
def test_a_partition_s_values_are_refused_at_their_key(conf: dict[str, str], key: str, why: str):
    graph, error = record_program(partition(partitionConf=conf))
    assert isinstance(error, ConfigError)
    found = dict(error.rendered)
    path = f"ai-infra:slurm.partitions[0].partitionConf.{key}"
    assert why in found[path], found
    assert graph.resources == []
