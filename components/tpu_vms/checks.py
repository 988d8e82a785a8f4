"""The problems of `ai-infra:tpuVms` entries, each at `[i].<field>`: the accelerator against
the catalog, runtime, zone, capacity type, names, networks, queueing, disks, metadata, labels
and grants; how many addresses the stack's subnet has for the VMs; and what other systems of
the stack own (their service accounts, the TPU VM names Slurm creates and deletes).
"""

from __future__ import annotations

import datetime
import ipaddress
import re
from collections import ChainMap
from collections.abc import Iterable, Sequence

from catalog import tpu as tpu_catalog
from components.base import PathPart, Problem, duplicate_names, relative_path, under
from components.buckets import unknown_buckets as unknown_bucket_problems
from components.context import StackContext, label_problems
from components.identity import account_id_problems, duplicate_roles, service_account_email
from components.locations import zone_problem
from components.logins import (
    TPU_HOST_PREFIX,
    login_problems,
    machine_account_problems,
    open_home_problem,
    viewer_role_id,
)
from components.startup import HEREDOC
from components.storage import Storage, mount_problems
from components.tpu_vms.config import (
    SUBNETWORK_PATH,
    TpuVmConfig,
    TpuVmNetworkConfig,
    duration_seconds,
)
from components.tpu_vms.vms import (
    METADATA_BYTES_MAX,
    NODE_ROLES,
    RESERVED_METADATA,
    STARTUP_SCRIPT_KEY,
    node_metadata,
)
from components.types import disk_zone


def _accelerator_problems(config: TpuVmConfig) -> list[Problem]:
    try:
        shape = config.shape
    except tpu_catalog.CatalogError as error:
        return [Problem(("accelerator",), str(error))]
    if spelling := tpu_catalog.spelling_problem(config.accelerator):
        return [Problem(("accelerator",), spelling)]
    family = shape.family
    if not family.tpu_vm_runtimes:
        return [
            Problem(
                ("accelerator",),
                f"the Cloud TPU API creates no {family.prefix} TPU VMs "
                "(tpu/docs/configure-networking-access); use ai-infra:tpuSlices",
            )
        ]
    found = []
    runtime = config.runtime_version
    if runtime is None and config.allow_unlisted_runtime:
        found.append(
            Problem(
                ("allowUnlistedRuntime",),
                "has no runtimeVersion to allow; set runtimeVersion or remove it",
            )
        )
    elif runtime is not None:
        why = tpu_catalog.runtime_problem(
            family, runtime, allow_unlisted=config.allow_unlisted_runtime
        )
        if why:
            found.append(Problem(("runtimeVersion",), why))
    if config.node_count > 1 and family.prefix in ("v2", "v3"):
        # tpu/docs/multislice-introduction: slices of a multislice are v4 or later.
        found.append(
            Problem(
                ("nodeCount",),
                f"multislice needs TPU v4 or later, not {family.prefix}; set nodeCount: 1 or "
                "use a larger slice",
            )
        )
    return found


def _names(config: TpuVmConfig) -> list[Problem]:
    longest = config.node_names[-1]
    if len(longest) <= 63:
        return []
    return [
        Problem(
            ("nodePrefix" if config.node_prefix else "name",),
            f"TPU VM name '{longest}' is longer than 63 characters; shorten it",
        )
    ]


def _capacity_problems(config: TpuVmConfig) -> list[Problem]:
    if config.provisioning == "flex-start":
        return [
            Problem(
                ("provisioning",),
                "flex-start TPU VMs need QueuedResource.provisioningModel and runDuration, "
                "which only the Cloud TPU v2alpha1 REST API has: google-cloud-tpu 1.28.0, the "
                "newest release, has neither. Use on-demand, reserved, spot or best-effort, "
                "or a flex-start ai-infra:tpuSlices entry",
            )
        ]
    if config.reservation is None:
        return []
    if config.provisioning != "reserved":
        return [
            Problem(
                ("reservation",),
                f"only used with provisioning 'reserved', not '{config.provisioning}'; remove "
                "it or set provisioning: reserved",
            )
        ]
    return []


def _network_path(path: str) -> str:
    """A network path without the self-link host, to compare two spellings."""
    return path.removeprefix("https://www.googleapis.com/compute/v1/")


def _network_problems(config: TpuVmConfig, ctx: StackContext, stack_vpc: str) -> list[Problem]:
    found = []
    interfaces: list[tuple[tuple[PathPart, ...], TpuVmNetworkConfig]] = [
        (("additionalNetworks", n), net) for n, net in enumerate(config.additional_networks)
    ]
    if config.network is not None:
        interfaces.insert(0, (("network",), config.network))
    for path, net in interfaces:
        subnet = SUBNETWORK_PATH.fullmatch(net.subnetwork)
        if subnet and subnet["region"] != ctx.region:
            found.append(
                Problem(
                    (*path, "subnetwork"),
                    f"the subnetwork is in {subnet['region']}, the TPU VMs in {ctx.region}; use "
                    "a subnetwork of the entry's region",
                )
            )
    first = f"projects/{ctx.project}/global/networks/{stack_vpc}"
    seen = {} if config.network else {first: "the stack's network, the first interface's"}
    for path, net in interfaces:
        network = _network_path(net.network)
        if network in seen:
            found.append(
                Problem(
                    (*path, "network"),
                    f"is also {seen[network]}; each network interface of a VM is in a VPC of "
                    "its own (vpc/docs/multiple-interfaces-concepts), so use another network",
                )
            )
        seen.setdefault(network, relative_path(path))
    return found


def _queueing_problems(config: TpuVmConfig) -> list[Problem]:
    q = config.queueing
    if q is None:
        return []
    found = []
    for bound in ("After", "Until"):
        if getattr(q, f"valid_{bound.lower()}_duration") and getattr(
            q, f"valid_{bound.lower()}_time"
        ):
            found.append(
                Problem(
                    ("queueing", f"valid{bound}Time"),
                    f"set valid{bound}Duration or valid{bound}Time, not both",
                )
            )
    wait = config.timeout_minutes * 60
    after = duration_seconds(q.valid_after_duration) if q.valid_after_duration else None
    until = duration_seconds(q.valid_until_duration) if q.valid_until_duration else None
    if after is not None and after >= wait:
        found.append(
            Problem(
                ("queueing", "validAfterDuration"),
                f"the request may not start before {q.valid_after_duration}, but `pulumi up` "
                f"waits {config.timeout_minutes} minutes for it (timeoutMinutes); raise "
                "timeoutMinutes above it or shorten validAfterDuration",
            )
        )
    if until is not None and until > wait:
        found.append(
            Problem(
                ("queueing", "validUntilDuration"),
                f"`pulumi up` deletes the request after {config.timeout_minutes} minutes "
                f"(timeoutMinutes), before {q.valid_until_duration}; raise timeoutMinutes to "
                "cover it or shorten validUntilDuration",
            )
        )
    if after is not None and until is not None and after >= until:
        found.append(
            Problem(
                ("queueing", "validUntilDuration"),
                "must be later than validAfterDuration, or the request can never start",
            )
        )
    if q.valid_after_time and q.valid_until_time:
        start = datetime.datetime.fromisoformat(q.valid_after_time)
        if start >= datetime.datetime.fromisoformat(q.valid_until_time):
            found.append(
                Problem(
                    ("queueing", "validUntilTime"),
                    "must be later than validAfterTime, or the request can never start",
                )
            )
    return found


def _disk_and_metadata_problems(config: TpuVmConfig, zone: str, storage: Storage) -> list[Problem]:
    found = []
    for d, disk in enumerate(config.data_disks):
        if (disk_at := disk_zone(disk.source_disk)) != zone:
            found.append(
                Problem(
                    ("dataDisks", d, "sourceDisk"),
                    f"the disk is in {disk_at}, the TPU VMs in {zone}; a disk attaches "
                    "only in its own zone",
                )
            )
        if disk.mode == "READ_WRITE" and (config.node_count > 1 or config.shape.multi_host):
            found.append(
                Problem(
                    ("dataDisks", d, "mode"),
                    "a READ_WRITE disk attaches to one VM only, and this entry has "
                    f"{config.node_count * config.shape.hosts}; use READ_ONLY",
                )
            )
    for key in config.metadata:
        if key.lower() == STARTUP_SCRIPT_KEY:
            found.append(
                Problem(("metadata", key), "set the startup script in startupScript instead")
            )
        elif key.lower() in RESERVED_METADATA:
            found.append(
                Problem(
                    ("metadata", key),
                    "is set by the program or runs outside what the plan shows (the startup "
                    "script's readiness signal needs guest attributes; TPU VMs take SSH through "
                    "OS Login only, with project SSH keys blocked, no serial console and no "
                    "cloud-init user data or script URL); remove it",
                )
            )
    if config.startup_script is not None and HEREDOC in config.startup_script.splitlines():
        found.append(
            Problem(
                ("startupScript",),
                f"has a line '{HEREDOC}', which ends the here-document the startup script "
                "writes it with; rename that word",
            )
        )
        return found
    size = sum(len(k) + len(v.encode()) for k, v in node_metadata(config, storage).items())
    if size > METADATA_BYTES_MAX:
        found.append(
            Problem(
                ("metadata",),
                f"metadata and startupScript take {size} bytes, over Compute Engine's "
                f"{METADATA_BYTES_MAX // 1024} KiB; fetch large scripts from a bucket instead",
            )
        )
    return found


def _label_problems(config: TpuVmConfig, ctx: StackContext) -> list[Problem]:
    found = [
        Problem(
            (key,),
            f"is set stack-wide by ai-infra:labels ('{ctx.stack_labels[key]}'); change it there "
            "or choose another key",
        )
        for key in config.labels
        if key in ctx.stack_labels
    ]
    return found + label_problems(
        {k: v for k, v in config.labels.items() if k not in ctx.stack_labels},
        beside=len(ctx.stack_labels),
        # The queued resource is the TPU API client's, not pulumi-gcp's.
        by_pulumi_gcp=False,
    )


def _overlapping_prefixes(entries: list[TpuVmConfig]) -> list[Problem]:
    """MaxText's multihost_runner takes the VM named `--TPU_PREFIX`, or else every VM matching
    `<prefix>-[0-9]+`: no entry's VMs may answer another entry's prefix. A name answers two
    prefixes at most (itself and its stem), so one index of them serves every entry."""
    answers: dict[str, dict[int, str]] = {}
    for j, entry in enumerate(entries):
        for name in entry.node_names:
            for prefix in (name, _stem(name)):
                if prefix is not None:
                    answers.setdefault(prefix, {}).setdefault(j, name)
    found = []
    for i, entry in enumerate(entries):
        clash = next(((j, n) for j, n in answers.get(entry.prefix, {}).items() if j != i), None)
        if clash is not None:
            found.append(
                Problem(
                    (i, "nodePrefix" if entry.node_prefix else "name"),
                    f"TPU VM {clash[1]} of tpuVms[{clash[0]}] would also answer "
                    f"--TPU_PREFIX={entry.prefix}; give the entries distinct prefixes",
                )
            )
    return found


_NUMBERED = re.compile(r"(.*)-[0-9]+")


def _stem(name: str) -> str | None:
    """The prefix `<prefix>-[0-9]+` names `name` under, if it is so numbered."""
    numbered = _NUMBERED.fullmatch(name)
    return numbered[1] if numbered else None


IMAGE_DIRS = ("/opt", "/snap")
"""Where TPU VM images keep software on root's PATH (Ubuntu keeps gcloud in /snap), beside the
OS's (`types.SYSTEM_DIRS`): no mount at or under these."""


def _storage_problems(config: TpuVmConfig, storage: Storage) -> list[Problem]:
    """The `storage` list: known volumes at paths of their own, outside the system's
    directories, buckets only (shares and Lustre are not mounted on TPU VMs yet), and none
    that every user can write over the homes."""
    found = under("storage", mount_problems(config.storage, storage, reserved=IMAGE_DIRS))
    for i, mount in enumerate(config.storage):
        volume = storage.volumes.get(mount.volume)
        if volume is not None and volume.kind != "gcs":
            found.append(
                Problem(
                    ("storage", i, "volume"),
                    f"'{mount.volume}' is a {volume.kind} volume; TPU VMs mount buckets of "
                    "ai-infra:storage only so far: mount it from startupScript",
                )
            )
        elif (
            volume is not None
            and not mount.read_only
            and (bad := open_home_problem(mount.mount_path, f"bucket volume {mount.volume}"))
        ):
            found.append(Problem(("storage", i, "mountPath"), bad))
    return found


def problems(
    entries: list[TpuVmConfig],
    ctx: StackContext,
    *,
    buckets: Iterable[str],
    stack_vpc: str,
    storage: Storage,
) -> list[Problem]:
    """Checks of `ai-infra:tpuVms` that need the stack: zones, buckets, names, labels, and
    networks beside `stack_vpc` (the VPC the stack's systems join). The stack root checks
    that each entry's service account id has no other owner."""
    region = ctx.region
    found = duplicate_names([e.name for e in entries], "tpuVms")
    known_buckets = set(buckets)
    for i, entry in enumerate(entries):
        zone = ctx.zone_of(entry.zone)
        own: list[Problem] = []
        if entry.zone is not None and (problem := zone_problem(entry.zone, region)):
            own.append(Problem(("zone",), problem))
        own += _network_problems(entry, ctx, stack_vpc)
        accelerator = _accelerator_problems(entry)
        own += accelerator
        zone_ok = not any(p.path == ("zone",) for p in own)
        checks_zone = not accelerator and zone_ok and not entry.allow_unlisted_zone
        if checks_zone and (problem := tpu_catalog.tpu_vm_zone_problem(entry.shape, zone)):
            inherited = "" if entry.zone else f"the entry inherits gcp:zone {zone}: "
            own.append(Problem(("zone",), inherited + problem))
        own += _capacity_problems(entry)
        own += _queueing_problems(entry)
        if not accelerator:
            own += _names(entry)
            own += _disk_and_metadata_problems(entry, zone, storage)
        if entry.service_account is None:
            own += account_id_problems(ctx.name(entry.name))
        elif entry.roles or entry.buckets or entry.storage:
            key = "roles" if entry.roles else "buckets" if entry.buckets else "storage"
            own.append(
                Problem(
                    (key,),
                    "grants go to the dedicated account only; grant them to "
                    f"{entry.service_account} yourself, or unset serviceAccount",
                )
            )
        own += under("labels", _label_problems(entry, ctx))
        # The account already holds NODE_ROLES; listing one again would grant it twice
        # under one resource name.
        own += duplicate_roles(entry.roles, granted=NODE_ROLES)
        own += unknown_bucket_problems(entry.buckets, known_buckets)
        own += login_problems(entry.logins, viewer_role_id(ctx.name(entry.name), "tpu"))
        own += _storage_problems(entry, storage)
        found += [p.under(i) for p in own]
    if not found:
        found += _overlapping_prefixes(entries)
    return found


def stack_problems(
    entries: list[TpuVmConfig],
    ctx: StackContext,
    *,
    accounts: Sequence[tuple[tuple[PathPart, ...], str]],
    slurm_nodesets: Sequence[str] = (),
    slurm_cluster: str | None = None,
) -> list[Problem]:
    """Checks against what other systems of the stack own. `accounts`: every service account
    id the program creates, with the config path that claims it. `slurm_nodesets`: the
    `<clusterName>-<nodeset>` prefixes under which Slurm's controller creates TPU VMs
    `<prefix>-<index>` and deletes them when it suspends them (Slurm-GCP names its TPU nodes
    so; see `components/slurm/config.py` NODESET_NAME). `slurm_cluster` starts the names of
    every Slurm VM: logins, whose OS Login holds on instances named like TPU VM hosts
    (`logins.tpu_host_condition`), must not meet Slurm's VMs there."""
    found = []
    machines = {
        service_account_email(account, ctx.project): f"the service account of ai-infra:"
        f"{relative_path(path)}"
        for path, account in accounts
    }
    for i, entry in enumerate(entries):
        # The entry's own account before the program's, without copying theirs per entry.
        own: dict[str, str] = {}
        if entry.service_account is not None:
            own[entry.service_account.lower()] = "the TPU VMs' own service account"
        found += [
            p.under(i) for p in machine_account_problems(entry.logins, ChainMap(own, machines))
        ]
    if slurm_cluster is not None and f"{slurm_cluster}-".startswith(TPU_HOST_PREFIX):
        found += [
            Problem(
                (i, "logins"),
                f"OS Login for these logins holds on the instances named {TPU_HOST_PREFIX}* "
                f"(TPU VM hosts), which include the Slurm cluster {slurm_cluster}'s VMs; "
                "rename the Slurm cluster",
            )
            for i, entry in enumerate(entries)
            if entry.logins
        ]
    emails = {service_account_email(account, ctx.project): path for path, account in accounts}
    for i, entry in enumerate(entries):
        owner = emails.get(entry.service_account or "")
        if entry.service_account is not None and owner is not None:
            found.append(
                Problem(
                    (i, "serviceAccount"),
                    f"is the account the program creates for ai-infra:{relative_path(owner)}: "
                    "the TPU VMs would hold its grants and break when it goes; unset "
                    "serviceAccount for a dedicated one",
                )
            )
        stems: dict[str, str] = {}
        for name in entry.node_names:
            if (stem := _stem(name)) is not None:
                stems.setdefault(stem, name)
        for prefix in slurm_nodesets:
            clash = stems.get(prefix)
            if clash is not None:
                found.append(
                    Problem(
                        (i, "nodePrefix" if entry.node_prefix else "name"),
                        f"TPU VM {clash} is a name of Slurm nodeset {prefix} ({prefix}-<n>), "
                        "whose controller deletes its nodes by name when it suspends them; "
                        "choose another prefix",
                    )
                )
                break
    return found


def subnet_problems(
    entries: list[TpuVmConfig], *, subnet_cidr: str, gke_nodes: int
) -> list[Problem]:
    """TPU VMs in the stack's subnet take one address per host beside the GKE nodes'."""
    hosts = sum(e.shape.hosts * e.node_count for e in entries if e.network is None)
    # Google Cloud reserves four addresses of every subnet's primary range (vpc/docs/subnets).
    usable = ipaddress.IPv4Network(subnet_cidr).num_addresses - 4
    if hosts == 0 or hosts + gke_nodes <= usable:
        return []
    return [
        Problem(
            ("subnetCidr",),
            f"{subnet_cidr} has {usable} usable addresses, but the GKE nodes can reach "
            f"{gke_nodes} and the TPU VMs have {hosts} hosts; widen subnetCidr or give large "
            "tpuVms entries their own network",
        )
    ]
