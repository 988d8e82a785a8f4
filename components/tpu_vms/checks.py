"""The problems of `ai-infra:tpuVms` entries, each at `[i].<field>`: the accelerator against
the catalog, runtime, zone, capacity type, names, disks, metadata, labels and grants, and how
many addresses the stack's subnet has for the VMs.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable

from components import tpu_catalog
from components.base import Problem, duplicate_names, under
from components.buckets import unknown_buckets as unknown_bucket_problems
from components.context import StackContext, label_problems
from components.identity import account_id_problems, duplicate_roles
from components.locations import zone_problem
from components.tpu_vms.config import SUBNETWORK_PATH, TpuVmConfig
from components.tpu_vms.vms import METADATA_BYTES_MAX, NODE_ROLES, STARTUP_SCRIPT_KEY, node_metadata
from components.types import disk_zone


def _accelerator_problems(config: TpuVmConfig) -> list[Problem]:
    try:
        shape = config.shape
    except tpu_catalog.CatalogError as error:
        return [Problem(("accelerator",), str(error))]
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
    if config.runtime_version is not None:
        why = tpu_catalog.runtime_problem(family, config.runtime_version)
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
                "flex-start TPU VMs need a provisioning model and run duration that "
                "google-cloud-tpu's queued resource API (v2alpha1) does not have; use "
                "on-demand, reserved, spot or best-effort, or a flex-start ai-infra:tpuSlices",
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


def _disk_and_metadata_problems(config: TpuVmConfig, zone: str) -> list[Problem]:
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
    if config.startup_script is not None and STARTUP_SCRIPT_KEY in config.metadata:
        found.append(
            Problem(
                ("metadata", STARTUP_SCRIPT_KEY),
                "set the startup script in startupScript or in metadata, not both",
            )
        )
    size = sum(len(k) + len(v.encode()) for k, v in node_metadata(config).items())
    if size > METADATA_BYTES_MAX:
        found.append(
            Problem(
                ("metadata",),
                f"metadata and startupScript take {size} bytes, over Compute Engine's "
                f"{METADATA_BYTES_MAX // 1024} KiB; fetch large scripts from a bucket instead",
            )
        )
    return found


def _overlapping_prefixes(entries: list[TpuVmConfig]) -> list[Problem]:
    """MaxText's multihost_runner takes the VM named `--TPU_PREFIX`, or else every VM matching
    `<prefix>-[0-9]+`: no entry's VMs may answer another entry's prefix."""
    found = []
    for i, entry in enumerate(entries):
        pattern = re.compile(re.escape(entry.prefix) + r"(-[0-9]+)?")
        for j, other in enumerate(entries):
            if i == j:
                continue
            clash = [n for n in other.node_names if pattern.fullmatch(n)]
            if clash:
                found.append(
                    Problem(
                        (i, "nodePrefix" if entry.node_prefix else "name"),
                        f"TPU VM {clash[0]} of tpuVms[{j}] would also answer "
                        f"--TPU_PREFIX={entry.prefix}; give the entries distinct prefixes",
                    )
                )
                break
    return found


def problems(
    entries: list[TpuVmConfig], ctx: StackContext, *, buckets: Iterable[str]
) -> list[Problem]:
    """Checks of `ai-infra:tpuVms` that need the stack: zones, buckets, names, labels. The
    stack root checks that each entry's service account id has no other owner."""
    region = ctx.region
    found = duplicate_names([e.name for e in entries], "tpuVms")
    known_buckets = list(buckets)
    for i, entry in enumerate(entries):
        zone = ctx.zone_of(entry.zone)
        own: list[Problem] = []
        if entry.zone is not None and (problem := zone_problem(entry.zone, region)):
            own.append(Problem(("zone",), problem))
        subnet = SUBNETWORK_PATH.fullmatch(entry.network.subnetwork) if entry.network else None
        if subnet and subnet["region"] != region:
            own.append(
                Problem(
                    ("network", "subnetwork"),
                    f"the subnetwork is in {subnet['region']}, the TPU VMs in {region}; use a "
                    "subnetwork of the entry's region",
                )
            )
        accelerator = _accelerator_problems(entry)
        own += accelerator
        zone_ok = not any(p.path == ("zone",) for p in own)
        if not accelerator and zone_ok and not entry.allow_unlisted_zone:
            family = tpu_catalog.resolve(entry.accelerator).family
            if problem := tpu_catalog.zone_problem(family, zone):
                inherited = "" if entry.zone else f"the entry inherits gcp:zone {zone}: "
                own.append(Problem(("zone",), inherited + problem))
        own += _capacity_problems(entry)
        if not accelerator:
            own += _names(entry)
            own += _disk_and_metadata_problems(entry, zone)
        if entry.service_account is None:
            own += account_id_problems(ctx.name(entry.name))
        elif entry.roles or entry.buckets:
            own.append(
                Problem(
                    ("roles" if entry.roles else "buckets",),
                    "grants go to the dedicated account only; grant them to "
                    f"{entry.service_account} yourself, or unset serviceAccount",
                )
            )
        own += under(
            "labels",
            label_problems(
                {k: v for k, v in entry.labels.items() if k not in ctx.stack_labels},
                beside=len(ctx.stack_labels),
                # The queued resource is the TPU API client's, not pulumi-gcp's.
                by_pulumi_gcp=False,
            ),
        )
        # The account already holds NODE_ROLES; listing one again would grant it twice
        # under one resource name.
        own += duplicate_roles(entry.roles, granted=NODE_ROLES)
        own += unknown_bucket_problems(entry.buckets, known_buckets)
        found += [p.under(i) for p in own]
    if not found:
        found += _overlapping_prefixes(entries)
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
