"""slurm.conf partition options as Slurm 25.11.4 reads them: each option's kind of value (the
grammar, as data) and a validator that says why slurmctld would refuse a value, or read it as
something else than what was written. The rules are ported from the C source at tag
slurm-25-11-4-1, cited per kind; `tests/slurm/test_slurm_conf.py` holds a table of values
drawn from those functions.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Literal

Kind = Literal[
    "boolean",
    "uint16",
    "uint32",
    "uint64",
    "minutes",
    "over_time_limit",
    "suspend_time",
    "preempt_mode",
    "select_type",
    "cpu_bind",
    "tres_weights",
    "names",
    "name",
    "hostlist",
    "program",
]
PARTITION_OPTIONS: dict[str, Kind] = {
    "AllocNodes": "hostlist",
    "AllowAccounts": "names",
    "AllowGroups": "names",
    "AllowQos": "names",
    "Alternate": "name",
    "CpuBind": "cpu_bind",
    "DefCPUPerGPU": "uint64",
    "DefMemPerCPU": "uint64",
    "DefMemPerGPU": "uint64",
    "DefMemPerNode": "uint64",
    "Default": "program",
    "DefaultTime": "minutes",
    "DenyAccounts": "names",
    "DenyQos": "names",
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
    "MaxTime": "minutes",
    "MaxNodes": "uint32",
    "MinNodes": "uint32",
    "Nodes": "program",
    "OverSubscribe": "program",
    "OverTimeLimit": "over_time_limit",
    "PowerDownOnIdle": "program",
    "PreemptMode": "preempt_mode",
    "Priority": "uint16",
    "PriorityJobFactor": "uint16",
    "PriorityTier": "uint16",
    "QOS": "name",
    "RootOnly": "boolean",
    "ReqResv": "boolean",
    "ResumeTimeout": "uint16",
    "SelectTypeParameters": "select_type",
    "Shared": "program",
    "State": "program",
    "SuspendTime": "suspend_time",
    "SuspendTimeout": "uint16",
    "Topology": "program",
    "TRESBillingWeights": "tres_weights",
}
"""Every option of a slurm.conf partition line in Slurm 25.11.4 (read_config.c
`_partition_options`, and how `_parse_partitionname` reads each): slurmctld stops at any
other key. `program` options are written by Slurm-GCP's conf.py from the partition's nodesets
and flags. Slurm reads the keys without case (s_p_hashtbl, `xstrcasecmp`)."""
NODE_OPTIONS: dict[str, Kind] = {
    "Boards": "uint16",
    "CoreSpecCount": "uint16",
    "CoresPerSocket": "uint16",
    "CPUs": "uint16",
    "Features": "names",
    "MemSpecLimit": "uint64",
    "RealMemory": "uint64",
    "Sockets": "uint16",
    "SocketsPerBoard": "uint16",
    "ThreadsPerCore": "uint16",
    "TmpDisk": "uint32",
    "Weight": "uint32",
}
"""The options of a slurm.conf node line a nodeset's `nodeConf` may set, with how Slurm
reads each (read_config.c `_nodename_options`): the node's hardware and scheduling weight.
conf.py writes these from the nodeset's template and then the nodeset's `node_conf` over
them (`nodeset_lines`); the rest (NodeName, NodeAddr, State, Gres, Port, ...) are
Slurm-GCP's."""
PROGRAM_OPTIONS = ("PartitionName", *(k for k, v in PARTITION_OPTIONS.items() if v == "program"))

DEFAULTS_PARTITION = "default"
"""`PartitionName=DEFAULT` (any case) holds the defaults of the partition lines after it
(read_config.c `_parse_partitionname`, `xstrcasecmp(value, "DEFAULT")`)."""
INFINITE = ("infinite", "unlimited")
"""What every number and time parser takes for no limit, in any case."""
BOOLEANS = {"yes": True, "up": True, "true": True, "1": True}
BOOLEANS |= {"no": False, "down": False, "false": False, "0": False}
"""parse_value.c `s_p_handle_boolean`, in any case."""
UNSIGNED_MAX = {"uint16": 0xFFFF, "uint32": 0xFFFFFFFF, "uint64": 0xFFFFFFFFFFFFFFFF}
"""parse_value.c `s_p_handle_uint16/32/64`: the largest each takes."""
PREEMPT_MODES = ("off", "cluster", "cancel", "requeue", "on", "suspend")
"""slurm_protocol_defs.c `preempt_mode_num`: one of these (OFF and CLUSTER are one mode, ON
and SUSPEND another) ..."""
PREEMPT_FLAGS = ("within", "priority")
"""... optionally with WITHIN or PRIORITY; GANG is cluster-wide, and a partition's is dropped
(read_config.c `_parse_partitionname`)."""
SELECT_TYPES = ("CR_Core_Memory", "CR_Core", "CR_Socket_Memory", "CR_Socket")
"""read_config.c `_parse_partitionname`: the four a partition takes (it compares prefixes,
so only the exact names are taken here)."""
CPU_BIND_TYPES = (
    "no",
    "none",
    "socket",
    "sockets",
    "ldom",
    "ldoms",
    "core",
    "cores",
    "thread",
    "threads",
    "off",
)
"""slurm_resource_info.c `xlate_cpu_bind_str`: at most one of these, with `v`/`verbose`, split
at ',' or ';'; anything else makes slurmctld ignore the option."""
DEFAULT_TRES = ("cpu", "mem", "energy", "node", "billing", "fs/disk", "vmem", "pages")
"""The TRES Slurm tracks without AccountingStorageTRES (slurm.conf(5)
"AccountingStorageTRES"), which the rendered slurm.conf does not set: a TRESBillingWeights
entry of any other is "not a configured TRES type" and fatal (slurm_protocol_api.c
`_tres_weight_item`, `slurm_get_tres_weight_array` with fail=true)."""
INT_MAX = 0x7FFFFFFF
NAME = r"[A-Za-z0-9_.-]+"


STRTOUL = r"0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*"
"""What strtoul with base 0 reads whole: hex after 0x, octal after 0, else decimal."""


def _number(kind: str, value: str) -> int | None:
    """The number parse_value.c `s_p_handle_uint16/32/64` reads before its range check
    (strtoul with base 0, a `k` suffix times 1024 on 32 and 64 bits), None if not one."""
    text = value.removeprefix("+")
    scale = 1
    if kind != "uint16" and text[-1:] in ("k", "K"):
        text, scale = text[:-1], 1024
    if not re.fullmatch(STRTOUL, text):
        return None
    base = 16 if text[:2] in ("0x", "0X") else 8 if text.startswith("0") else 10
    return int(text, base) * scale


def unsigned_value(kind: str, value: str) -> int | None:
    """The number Slurm reads for an option of `kind`, or None for UNLIMITED/INFINITE and
    for what it refuses (`_unsigned` says why)."""
    number = _number(kind, value)
    return number if number is not None and number <= UNSIGNED_MAX[kind] else None


def _unsigned(kind: str, value: str) -> str | None:
    if value.lower() in INFINITE or unsigned_value(kind, value) is not None:
        return None
    if _number(kind, value) is not None:
        return f"{value} is more than {UNSIGNED_MAX[kind]}, the largest this option holds"
    return f"'{value}' is not a whole number or UNLIMITED"


def _boolean(value: str) -> str | None:
    if value.lower() in BOOLEANS:
        return None
    return f"'{value}' is not YES or NO (Slurm also reads UP, DOWN, TRUE, FALSE, 1, 0)"


def _scanf_ints(text: str, separators: str) -> list[int]:
    """What `sscanf(text, "%d<s0>%d<s1>%d...")` assigns, left to right, until a conversion or
    a separator fails (a `%d` takes an optional sign and at least one digit)."""
    found: list[int] = []
    pos = 0
    for i in range(len(separators) + 1):
        match = re.match(r"[-+]?[0-9]+", text[pos:])
        if match is None:
            break
        found.append(int(match.group()))
        pos += match.end()
        if i == len(separators) or text[pos : pos + 1] != separators[i]:
            break
        pos += 1
    return found


def _valid_timespec(text: str) -> bool:
    """parse_time.c `_is_valid_timespec`: digits, '-' and ':' only; at most one '-', which no
    ':' precedes, and two ':'; enough digit runs for the separators."""
    if not re.fullmatch(r"[0-9:-]*", text):
        return False
    runs = len(re.findall(r"[0-9]+", text))
    dashes, colons = text.count("-"), text.count(":")
    if not runs or dashes > 1 or colons > 2:
        return False
    if dashes and ":" in text.split("-", 1)[0]:
        return False
    return runs >= {0: 1, 1: 2 + dashes, 2: 3 + dashes}[colons]


def time_seconds(value: str) -> int | None:
    """parse_time.c `time_str2secs`: seconds, -1 for INFINITE ("-1", INFINITE or UNLIMITED),
    None where it returns NO_VAL. Formats: minutes, minutes:seconds, hours:minutes:seconds,
    days-hours, days-hours:minutes, days-hours:minutes:seconds."""
    if value.lower() in ("-1", *INFINITE):
        return -1
    if not _valid_timespec(value):
        return None
    if "-" in value:
        d, h, m, s = [*_scanf_ints(value, "-::"), 0, 0, 0, 0][:4]
        return d * 86400 + h * 3600 + m * 60 + s
    parts = _scanf_ints(value, "::")
    if len(parts) == 3:
        return parts[0] * 3600 + parts[1] * 60 + parts[2]
    minutes, seconds = [*parts, 0, 0][:2]
    return minutes * 60 + seconds


def _minutes(value: str) -> str | None:
    """read_config.c `_parse_partitionname` for MaxTime and DefaultTime: `time_str2mins`, and
    slurmctld stops at a value below 0 other than INFINITE."""
    seconds = time_seconds(value)
    if seconds is None:
        return (
            f"'{value}' is not a Slurm time: write minutes (60), MM:SS, HH:MM:SS, "
            "DAYS-HH[:MM[:SS]] (1-00), or INFINITE; no unit letters"
        )
    if seconds == -1 and value.lower() in ("-1", *INFINITE):
        return None
    if seconds < 0:
        return f"'{value}' is a negative time"
    if seconds > INT_MAX:
        return f"'{value}' is more time than Slurm's int holds ({INT_MAX} seconds)"
    return None


def _over_time_limit(value: str) -> str | None:
    """read_config.c: INFINITE/UNLIMITED, else strtol; a negative value is ignored and one
    above 65534 read as UNLIMITED, and strtol reads text as 0, so only 0..65534 is taken."""
    if value.lower() in INFINITE:
        return None
    if re.fullmatch(r"[0-9]{1,5}", value) and int(value) <= 0xFFFE:
        return None
    return f"'{value}' is not minutes from 0 to 65534, or UNLIMITED"


def _suspend_time(value: str) -> str | None:
    """read_config.c: INFINITE or -1, else strtoul up to UINT32_MAX (strtoul reads text as 0,
    so only digits are taken)."""
    if value.lower() in ("-1", "infinite"):
        return None
    if re.fullmatch(r"[0-9]{1,10}", value) and int(value) <= 0xFFFFFFFF:
        return None
    return f"'{value}' is not seconds (0 to 4294967295), INFINITE or -1"


def _preempt_mode(value: str) -> str | None:
    """slurm_protocol_defs.c `preempt_mode_num` (tokens split at ',', any case)."""
    tokens = [t.lower() for t in value.split(",") if t]
    unknown = [t for t in tokens if t not in (*PREEMPT_MODES, *PREEMPT_FLAGS, "gang")]
    modes = [t for t in tokens if t in PREEMPT_MODES]
    if not tokens or unknown:
        return (
            f"'{value}' is not a PreemptMode: one of OFF, CANCEL, REQUEUE, SUSPEND, "
            "optionally with WITHIN or PRIORITY (e.g. REQUEUE or CANCEL,WITHIN)"
        )
    if "gang" in tokens:
        return "GANG is a cluster-wide PreemptMode; Slurm drops it from a partition"
    if len(modes) > 1:
        return f"'{value}' names more than one mode; keep one of {', '.join(modes)}"
    return None


def _select_type(value: str) -> str | None:
    if value.lower() in (s.lower() for s in SELECT_TYPES):
        return None
    return f"'{value}' is not one of {', '.join(SELECT_TYPES)}"


def _cpu_bind(value: str) -> str | None:
    tokens = [t.lower() for t in re.split(r"[,;]", value) if t]
    types = [t for t in tokens if t in CPU_BIND_TYPES]
    if (
        not tokens
        or len(types) > 1
        or any(t not in (*CPU_BIND_TYPES, "v", "verbose") for t in tokens)
    ):
        return (
            f"'{value}' is not a CpuBind: one of none, socket, ldom, core, thread, off, "
            "optionally with verbose; Slurm ignores the option otherwise"
        )
    return None


def _tres_weights(value: str) -> str | None:
    """slurm_protocol_api.c `_tres_weight_item`: TYPE[/NAME]=<number>[KMGTP] per item."""
    items = [i for i in value.split(",") if i]
    pattern = r"([A-Za-z]+(?:/[A-Za-z]+)?)=([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)([KMGTPkmgtp]?)"
    for item in items or [value]:
        match = re.fullmatch(pattern, item)
        if match is None:
            return f"'{item}' is not a TRES weight TYPE=NUMBER (e.g. CPU=1.0,Mem=0.25G)"
        if match[1].lower() not in DEFAULT_TRES:
            return (
                f"{match[1]} is not a TRES the cluster tracks ({', '.join(DEFAULT_TRES)}); "
                "slurmctld stops at it"
            )
    return None


def _names(value: str) -> str | None:
    if re.fullmatch(rf"{NAME}(,{NAME})*", value):
        return None
    return f"'{value}' is not a comma-separated list of names"


def _name(value: str) -> str | None:
    if re.fullmatch(NAME, value):
        return None
    return f"'{value}' is not one name"


def _hostlist(value: str) -> str | None:
    if re.fullmatch(r"[A-Za-z0-9_.,-]+", value):
        return None
    return f"'{value}' is not a list of host names"


VALIDATORS: Mapping[Kind, Callable[[str], str | None]] = {
    "boolean": _boolean,
    "uint16": lambda v: _unsigned("uint16", v),
    "uint32": lambda v: _unsigned("uint32", v),
    "uint64": lambda v: _unsigned("uint64", v),
    "minutes": _minutes,
    "over_time_limit": _over_time_limit,
    "suspend_time": _suspend_time,
    "preempt_mode": _preempt_mode,
    "select_type": _select_type,
    "cpu_bind": _cpu_bind,
    "tres_weights": _tres_weights,
    "names": _names,
    "name": _name,
    "hostlist": _hostlist,
    "program": lambda v: None,
}


def partition_option(key: str) -> str | None:
    """The option `key` names, as Slurm spells it, or None when Slurm has none of that name."""
    return _BY_LOWER.get(key.lower())


_BY_LOWER = {key.lower(): key for key in PARTITION_OPTIONS}


def value_problem(option: str, value: str) -> str | None:
    """Why Slurm 25.11 refuses `value` for the partition option `option` (as Slurm spells
    it), or reads it as something other than what it says; None when it takes it."""
    return VALIDATORS[PARTITION_OPTIONS[option]](value)


def node_option(key: str) -> str | None:
    """The node option `key` names, as Slurm spells it, if a nodeset may set it."""
    return _NODE_BY_LOWER.get(key.lower())


_NODE_BY_LOWER = {key.lower(): key for key in NODE_OPTIONS}


def node_value_problem(option: str, value: str) -> str | None:
    """Why a node option's value is refused: what Slurm's parser refuses, and for a count,
    UNLIMITED, which it reads as 65535 CPUs or cores (`s_p_handle_uint16`)."""
    kind = NODE_OPTIONS[option]
    if kind == "names":
        return _names(value)
    if unsigned_value(kind, value) is None:
        return _unsigned(kind, value) or f"'{value}' is not a count; write a whole number"
    return None


def conf_problems(conf: Mapping[str, str]) -> dict[str, str]:
    """What spans options of one partition line: a DefaultTime above MaxTime, which slurmctld
    drops (slurmctld/read_config.c `_build_single_partitionline_info`). Keys are options as
    Slurm spells them; the answer maps an offending key to why."""
    found = {}
    times = {k: time_seconds(v) for k, v in conf.items() if k in ("MaxTime", "DefaultTime")}
    default, limit = times.get("DefaultTime"), times.get("MaxTime")
    if (
        default is not None
        and limit is not None
        and limit != -1
        and (default == -1 or -(-default // 60) > -(-limit // 60))
    ):
        found["DefaultTime"] = (
            f"DefaultTime {conf['DefaultTime']} is above MaxTime {conf['MaxTime']}, and "
            "slurmctld then drops DefaultTime; lower it"
        )
    return found
