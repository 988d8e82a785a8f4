"""The problems that span the cluster: names, the accounts nodes run as, the controller and
login VMs, the bucket, the job scripts, the GPU networks' names and ranges, and shared
reservations.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence

from components.base import PathPart, Problem, duplicate_names
from components.context import StackContext
from components.identity import service_account_email
from components.locations import zone_problem
from components.network import subnet_name
from components.ranges import Blocks
from components.slurm.checks.cpu_nodesets import cpu_nodeset_problems, image_problems
from components.slurm.checks.storage import (
    bucket_write_problems,
    home_problems,
    storage_problems,
    volume_problems,
)
from components.slurm.checks.tpu_nodesets import tpu_nodeset_problems
from components.slurm.config import UNKILLABLE_PER_MESSAGE, SlurmConfig, account_id
from components.slurm.fields import JobScript
from components.slurm.jobscripts import partition_prefix
from components.slurm.nodesets import CpuNodesetConfig, TpuNodesetConfig, cpu_zones
from components.slurm.partitions import PartitionConfig
from components.slurm.slurm_conf import DEFAULTS_PARTITION
from components.storage import Storage
from components.types import reservation_parts


def _account_problems(
    path: tuple[PathPart, ...], email: str | None, own: dict[str, str]
) -> list[Problem]:
    if email in own:
        return [
            Problem(
                (*path, "serviceAccountEmail"),
                f"is the cluster's {own[email]} account; nodes running as it could act as the "
                "controller (the controller may attach every node account); remove it or name "
                "an account of the nodes' own",
            )
        ]
    return []


def name_problems(config: SlurmConfig) -> list[Problem]:
    """Nodeset, partition and login group names: unique, and not taken by one another or by
    the debug partition's."""
    found = [
        p.under("tpuNodesets")
        for p in duplicate_names([n.name for n in config.tpu_nodesets], "tpuNodesets")
    ]
    found += [
        p.under("cpuNodesets")
        for p in duplicate_names([n.name for n in config.cpu_nodesets], "cpuNodesets")
    ]
    cpu_names = {n.name for n in config.cpu_nodesets}
    for i, nodeset in enumerate(config.tpu_nodesets):
        if nodeset.name in cpu_names:
            found.append(
                Problem(
                    ("tpuNodesets", i, "name"),
                    f"'{nodeset.name}' is also a CPU nodeset; nodeset names are unique across "
                    "cpuNodesets and tpuNodesets (Slurm-GCP names nodes by them)",
                )
            )
    found += [
        p.under("partitions")
        for p in duplicate_names([p.name for p in config.partitions], "partitions")
    ]
    found += [
        # read_config.c `_parse_partitionname`: a line named DEFAULT (xstrcasecmp) sets
        # every later partition's defaults and is no partition itself.
        Problem(
            ("partitions", i, "name"),
            f"'{p.name}' is Slurm's name for the defaults of every partition, not a "
            "partition: slurm.conf would have no such queue and the later partitions would "
            "take its options; rename it (to mark the default queue, set default: true)",
        )
        for i, p in enumerate(config.partitions)
        if p.name.lower() == DEFAULTS_PARTITION
    ]
    found += [
        p.under("loginGroups")
        for p in duplicate_names([g.name for g in config.login_groups], "loginGroups")
    ]
    if config.debug_partition:
        for key, names in (
            ("cpuNodesets", [n.name for n in config.cpu_nodesets]),
            ("tpuNodesets", [n.name for n in config.tpu_nodesets]),
            ("partitions", [p.name for p in config.partitions]),
        ):
            if "debug" in names:
                found.append(
                    Problem(
                        (key, names.index("debug"), "name"),
                        "debugPartition adds a nodeset and partition named debug; rename "
                        "this one or remove debugPartition",
                    )
                )
    node_names = cpu_names | {n.name for n in config.tpu_nodesets}
    for i, group in enumerate(config.login_groups):
        if group.name in node_names | ({"debug"} if config.debug_partition else set()):
            # Login VMs `<cluster>-<group>-<i>` would be named like the nodeset's nodes, and
            # conf.py would take them for its nodes.
            found.append(
                Problem(
                    ("loginGroups", i, "name"),
                    f"'{group.name}' is also a nodeset, whose nodes are named like this "
                    "group's VMs; rename the group",
                )
            )
        found += [
            p.under("loginGroups", i, "networkStorage")
            for p in storage_problems(group.network_storage)
        ]
    return found


def nodeset_problems(
    config: SlurmConfig, ctx: StackContext, storage: Storage
) -> tuple[list[Problem], dict[str, TpuNodesetConfig]]:
    """Each nodeset's own checks, what spans nodesets, and the TPU nodesets found valid."""
    stack_subnet = subnet_name(ctx.prefix)
    own = {
        service_account_email(account_id(ctx, role), ctx.project): title
        for role, title in (("ctl", "controller"), ("lgn", "login"))
    }
    found: list[Problem] = []
    valid: dict[str, TpuNodesetConfig] = {}
    for i, nodeset in enumerate(config.tpu_nodesets):
        own_problems = tpu_nodeset_problems(
            nodeset, zone=ctx.zone_of(nodeset.zone), region=ctx.region, stack_subnet=stack_subnet
        )
        own_problems += _account_problems((), nodeset.service_account_email, own)
        found += [p.under("tpuNodesets", i) for p in own_problems]
        if not own_problems:
            valid[nodeset.name] = nodeset
    for i, nodeset in enumerate(config.cpu_nodesets):
        own_problems = cpu_nodeset_problems(
            nodeset,
            zones=cpu_zones(nodeset, ctx),
            region=ctx.region,
            cluster_lustre=config.mounts_lustre(storage.lustre_names),
            lustre=storage.lustre_names,
        )
        own_problems += _account_problems((), nodeset.service_account_email, own)
        found += [p.under("cpuNodesets", i) for p in own_problems]
    found += _shared_reservation_problems(config, ctx)
    found += _gpu_network_name_problems(config, ctx)
    found += _placement_name_problems(config)
    if not config.all_cpu_nodesets:
        for i, nodeset in enumerate(config.tpu_nodesets):
            if nodeset.name in valid and nodeset.workers_per_slice > 1:
                found.append(
                    Problem(
                        (
                            "tpuNodesets",
                            i,
                            "nodeType" if nodeset.node_type else "acceleratorConfig",
                        ),
                        f"multi-host TPU nodeset {nodeset.name} ({nodeset.workers_per_slice} "
                        "workers per slice) needs at least one CPU nodeset: Slurm-GCP writes "
                        "the network topology that keeps a slice's workers together only when "
                        "one exists (conf.py); add one under cpuNodesets, or set "
                        "debugPartition: true",
                    )
                )
    return found, valid


def cluster_problems(
    config: SlurmConfig, ctx: StackContext, buckets: list[str], storage: Storage
) -> list[Problem]:
    """The controller and login VMs' zone and images, the bucket's name, /home, the shared
    storage and the job scripts."""
    found = []
    if problem := zone_problem(ctx.zone_of(config.controller.zone), ctx.region):
        found.append(Problem(("controller", "zone"), problem))
    found += [p.under("controller") for p in image_problems(config.controller.image)]
    for i, group in enumerate(config.login_groups):
        found += [p.under("loginGroups", i) for p in image_problems(group.image)]
    bucket = config.bucket_name(ctx.project, ctx.prefix)
    # GCS "Bucket naming guidelines": at most 63 characters, no "google".
    if len(bucket) > 63 or "google" in bucket:
        found.append(
            Problem(
                ("clusterName",),
                f"the Slurm bucket '{bucket}' is longer than 63 characters or contains "
                "'google'; shorten clusterName (or ai-infra:prefix)",
            )
        )
    if config.bucket_key in buckets:
        found.append(
            Problem(
                ("clusterName",),
                f"the Slurm bucket takes the name of ai-infra:buckets entry "
                f"'{config.bucket_key}'; rename one",
            )
        )
    found += home_problems(config, subnet_name(ctx.prefix))
    found += volume_problems(config, storage)
    found += bucket_write_problems(config, storage)
    found += [p.under("networkStorage") for p in storage_problems(config.network_storage)]
    for key, scripts in (
        ("prologScripts", config.prolog_scripts),
        ("epilogScripts", config.epilog_scripts),
    ):
        found += [p.under(key) for p in duplicate_names([s.name for s in scripts], key)]
        found += [p.under(key) for p in _script_name_problems(scripts)]
    for i, partition in enumerate(config.partitions):
        found += [p.under("partitions", i) for p in _partition_script_problems(partition)]
    found += _timeout_problems(config)
    return found


def _partition_script_problems(partition: PartitionConfig) -> list[Problem]:
    """A partition's own prologs and epilogs: unique names each installable, and a partition
    name that keeps them so (its files are `zz-<partition>-<name>`)."""
    found = []
    lists = (
        ("prologScripts", partition.prolog_scripts),
        ("epilogScripts", partition.epilog_scripts),
    )
    for key, scripts in lists:
        found += [p.under(key) for p in duplicate_names([s.name for s in scripts], key)]
        found += [p.under(key) for p in _script_name_problems(scripts)]
    if (
        any(scripts for _, scripts in lists)
        and "-script-" in f"-{partition_prefix(partition.name)}"
    ):
        found.append(
            Problem(
                ("name",),
                f"'{partition.name}' holds 'script' as a word, which Slurm-GCP's setup takes "
                "for the end of the folder it installs the partition's scripts in, so Slurm "
                "would never run them; rename the partition",
            )
        )
    return found


def _timeout_problems(config: SlurmConfig) -> list[Problem]:
    """An UnkillableStepTimeout of the user's below five times MessageTimeout, which takes
    nodes down with KillTaskFailed (read_config.c `_validate_and_set_defaults`)."""
    given = config.cloud_parameters.unkillable_step_timeout
    least = UNKILLABLE_PER_MESSAGE * config.timeouts.message_timeout
    if given is None or given >= least:
        return []
    return [
        Problem(
            ("cloudParameters", "unkillableStepTimeout"),
            f"{given} s is under five times timeouts.messageTimeout "
            f"({config.timeouts.message_timeout} s), and Slurm then takes nodes down with "
            f"KillTaskFailed; set at least {least} or remove it (it then follows "
            "messageTimeout)",
        )
    ]


def _script_name_problems(scripts: Sequence[JobScript]) -> list[Problem]:
    """Setup finds a script's folder in its object name `slurm-<kind>-script-<name>` up to the
    last `-script-` (util.py install_custom_scripts, `^slurm-(?P<path>\\S+)-script-`), so a
    name holding one more is installed under a folder Slurm never runs."""
    found = []
    for i, script in enumerate(scripts):
        stem = script.name.rsplit(".", 1)[0]
        if "-script-" in f"-{stem}":
            found.append(
                Problem(
                    (i, "name"),
                    f"'{script.name}' holds '-script-' (or starts with 'script-'), which "
                    "Slurm-GCP's setup takes for the end of the folder it installs a script in, "
                    "so Slurm would never run it; rename it, e.g. "
                    f"{stem.replace('script', 'check')}.{script.name.rsplit('.', 1)[1]}",
                )
            )
    return found


GCE_NAME_MAX = 63
MAX_JOB_ID = 67108863
"""The largest local job id Slurm gives (slurm.conf(5) `MaxJobId`: 0x3FFFFFF)."""


def placement_policy_name(config: SlurmConfig, nodeset: CpuNodesetConfig) -> str:
    """The longest name resume.py gives a placement policy of the nodeset,
    `<cluster>-slurmgcp-managed-<nodeset>-<job id>-<chunk>` (`_allocate_nodes_to_placements`;
    a nodeset's nodes fit one compact policy, `_placement_problems`, so one chunk)."""
    return f"{config.cluster_name}-slurmgcp-managed-{nodeset.name}-{MAX_JOB_ID}-0"


def _placement_name_problems(config: SlurmConfig) -> list[Problem]:
    """Compact placement policies the controller names past Compute Engine's 63 characters:
    resourcePolicies.insert refuses them, and the job's nodes are never created."""
    found = []
    for i, nodeset in enumerate(config.cpu_nodesets):
        name = placement_policy_name(config, nodeset)
        if nodeset.enable_placement and len(name) > GCE_NAME_MAX:
            found.append(
                Problem(
                    ("cpuNodesets", i, "enablePlacement"),
                    f"Slurm-GCP names each job's placement policy like {name} ({len(name)} "
                    f"characters), past Compute Engine's {GCE_NAME_MAX}; shorten the nodeset's "
                    f"name or clusterName by {len(name) - GCE_NAME_MAX}",
                )
            )
    return found


def _gpu_network_name_problems(config: SlurmConfig, ctx: StackContext) -> list[Problem]:
    """Each nodeset's GPU networks fit Compute Engine's 63 characters and own their ranges."""
    found = []
    taken = Blocks()
    for i, nodeset in enumerate(config.cpu_nodesets):
        if nodeset.nic_layout is None:
            continue
        base = ctx.name("slurm", config.cluster_name, nodeset.name)
        layout = nodeset.nic_layout
        longest = (
            f"{base}-rdma-subnet{layout.gpu_nics - 1}"
            if layout.rdma
            else f"{base}-net{layout.nics - 1}"
        )
        if len(longest) > GCE_NAME_MAX:
            found.append(
                Problem(
                    ("cpuNodesets", i, "gpuNetworks"),
                    f"the nodeset's networks would be named like {longest}, past Compute "
                    f"Engine's {GCE_NAME_MAX} characters; shorten the nodeset's name or "
                    "clusterName",
                )
            )
        try:
            cidrs = nodeset.gpu_network_cidrs()
        except ValueError:
            continue
        for cidr in map(ipaddress.IPv4Network, cidrs):
            if (clash := taken.first_overlap(cidr)) is not None:
                found.append(
                    Problem(
                        ("cpuNodesets", i, "gpuNetworks", "subnetCidr"),
                        f"its range {cidr} overlaps {clash}'s; give each nodeset ranges of its own",
                    )
                )
                break
            taken.add(cidr, f"cpuNodesets[{i}]")
    return found


def stack_range_problems(config: SlurmConfig, ranges: Mapping[str, str]) -> list[Problem]:
    """A nodeset's GPU subnets against the stack network's ranges (`ranges`: where each is
    written -> range), which its nodes' first NIC routes to: an overlap would shadow them."""
    found = []
    for i, nodeset in enumerate(config.cpu_nodesets):
        try:
            cidrs = [ipaddress.IPv4Network(c) for c in nodeset.gpu_network_cidrs()]
        except ValueError:
            continue
        for where, other in ranges.items():
            if any(c.overlaps(ipaddress.IPv4Network(other)) for c in cidrs):
                found.append(
                    Problem(
                        ("cpuNodesets", i, "gpuNetworks", "subnetCidr"),
                        f"the nodeset's GPU subnets overlap {where} {other}, which its nodes' "
                        "first NIC reaches; pick a free range (e.g. 10.200.0.0/20)",
                    )
                )
    return found


def gpu_subnets(config: SlurmConfig) -> dict[str, str]:
    """The subnets nodesets create for their GPU NICs, by where they come from, for the
    stack's overlap check; a nodeset whose ranges run past the address space is its own
    problem."""
    found = {}
    for i, nodeset in enumerate(config.cpu_nodesets):
        try:
            cidrs = nodeset.gpu_network_cidrs()
        except ValueError:
            continue
        found |= {f"slurm.cpuNodesets[{i}] GPU subnet {k}": c for k, c in enumerate(cidrs)}
    return found


def _shared_reservation_problems(config: SlurmConfig, ctx: StackContext) -> list[Problem]:
    """A reservation is in one zone: nodesets naming it are all in that zone."""
    zone_of: dict[tuple[str, str], tuple[int, str]] = {}
    found = []
    for i, nodeset in enumerate(config.cpu_nodesets):
        if nodeset.reservation is None:
            continue
        key = reservation_parts(nodeset.reservation, ctx.project)
        zones = cpu_zones(nodeset, ctx)
        first = zone_of.setdefault(key, (i, zones[0]))
        if zones[0] != first[1]:
            found.append(
                Problem(
                    ("cpuNodesets", i, "reservation"),
                    f"cpuNodesets[{first[0]}] takes this reservation in {first[1]}, and a "
                    f"reservation is in one zone, not also {zones[0]}; use one zone or "
                    "another reservation",
                )
            )
    return found
