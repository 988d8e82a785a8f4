"""The problems of `ai-infra:slurm`, with paths relative to it: each nodeset's machine or TPU
type, runtime, image, zones, disks and counts against what Slurm-GCP v6 can create, the
cluster's name and bucket, the accounts nodes run as, shared storage, and how partitions use
the nodesets.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence

from components import gpu_catalog, tpu_catalog
from components.base import PathPart, Problem, duplicate_names, under
from components.context import StackContext
from components.identity import service_account_email
from components.locations import zone_problem
from components.network import subnet_name
from components.slurm.boot import DOCKER_REGISTRIES
from components.slurm.config import (
    CORES_PER_WORKER,
    DEFAULT_IMAGE_TF_VERSIONS,
    NODE_TYPES,
    PROGRAM_PARTITION_KEYS,
    SINGLE_HOST_TYPES,
    SLURM_DIRS,
    SLURM_FAMILIES,
    TF_RUNTIMES,
    V2_V3_ZONES,
    CpuNodesetConfig,
    NetworkStorage,
    SlurmConfig,
    TpuNodesetConfig,
    account_id,
    needs_unsigned_modules,
)
from components.storage import Storage, StorageMount, mount_problems, nested
from components.storage.catalog import FILESTORE_TIERS
from components.types import disk_zone, image_registry

HYPERDISK_ONLY = ("c4-", "c4a-", "c4d-", "n4-")
"""Machine series whose boot disk must be Hyperdisk (Compute Engine "Machine series
comparison": C4, C4A, C4D and N4 attach no Persistent Disk)."""
NO_HYPERDISK = ("e2-", "n1-", "c2-")
"""Series that attach no Hyperdisk."""
NO_PD_STANDARD = ("c3-", "c3d-", "h3-")
"""Toolkit's instance_validations: c3 and h3 refuse pd-standard (h3 also pd-ssd)."""


def _family_sizes(family: str) -> tuple[int, ...]:
    if family in NODE_TYPES:
        return NODE_TYPES[family]
    return tuple(tpu_catalog.valid_sizes(family))


def _zones_for(nodeset: TpuNodesetConfig) -> tuple[str, ...]:
    family = nodeset.family
    if family == "v4":
        return tpu_catalog.resolve("v4-8").family.zones
    key = f"{family}-8" if nodeset.cores == CORES_PER_WORKER else f"{family}-pod"
    return V2_V3_ZONES[key]


def _type_problems(nodeset: TpuNodesetConfig) -> list[Problem]:
    """Exactly one of nodeType and acceleratorConfig, naming a v2, v3 or v4 TPU."""
    if (nodeset.node_type is None) == (nodeset.accelerator_config is None):
        return [
            Problem(
                ("nodeType",),
                "give exactly one of nodeType (e.g. v4-8) and acceleratorConfig "
                "({version: V4, topology: 2x2x1})",
            )
        ]
    if nodeset.node_type is not None:
        family, size = nodeset.node_type.split("-", 1)
        if family not in SLURM_FAMILIES:
            return [
                Problem(
                    ("nodeType",),
                    f"'{nodeset.node_type}' is not a TPU type Slurm-GCP v6 can create: its TPU "
                    "nodesets run v2, v3 and v4 only (e.g. v4-8); for newer TPUs use a GKE "
                    "slice in ai-infra:tpuSlices",
                )
            ]
        sizes = _family_sizes(family)
        if int(size) not in sizes:
            shown = ", ".join(f"{family}-{s}" for s in sizes)
            return [
                Problem(
                    ("nodeType",),
                    f"'{nodeset.node_type}' is not a Cloud TPU type; {family} sizes are {shown}",
                )
            ]
        return []
    accelerator = nodeset.accelerator_config
    assert accelerator is not None
    axes = accelerator.topology.count("x") + 1
    wanted = 3 if accelerator.version == "V4" else 2
    if axes != wanted:
        return [
            Problem(
                ("acceleratorConfig", "topology"),
                f"{accelerator.version} topologies have {wanted} axes (e.g. "
                f"{'2x2x1' if wanted == 3 else '2x2'}), not '{accelerator.topology}'",
            )
        ]
    family = accelerator.version.lower()
    if family == "v4":
        try:
            tpu_catalog.resolve(f"v4-{nodeset.cores}", accelerator.topology)
        except tpu_catalog.CatalogError as error:
            return [Problem(("acceleratorConfig", "topology"), str(error))]
    elif nodeset.cores not in NODE_TYPES[family]:
        return [
            Problem(
                ("acceleratorConfig", "topology"),
                f"{accelerator.topology} is {nodeset.cores} TensorCores, not a {family} size; "
                f"{family} sizes are {', '.join(str(s) for s in NODE_TYPES[family])} TensorCores",
            )
        ]
    return []


def _runtime_problems(nodeset: TpuNodesetConfig) -> list[Problem]:
    if nodeset.tf_version is not None and nodeset.runtime_version is not None:
        return [
            Problem(("runtimeVersion",), "give tfVersion or runtimeVersion, not both"),
        ]
    key = "runtimeVersion" if nodeset.runtime_version is not None else "tfVersion"
    known = ", ".join(TF_RUNTIMES)
    if nodeset.runtime_version is not None and not nodeset.runtime_version.startswith("tpu-vm-tf-"):
        return [
            Problem(
                (key,),
                f"'{nodeset.runtime_version}': the Slurm-GCP v6 controller only requests "
                f"runtimes named tpu-vm-tf-<version>; use one of tpu-vm-tf-{{{known}}}",
            )
        ]
    if nodeset.tf not in TF_RUNTIMES:
        return [
            Problem(
                (key,),
                f"'{nodeset.tf}' has no TPU runtime tpu-vm-tf-{nodeset.tf} (from TF 2.15 "
                f"runtimes end in -pjrt or -se, which the controller cannot request); use one "
                f"of {known}",
            )
        ]
    if nodeset.docker_image is None and nodeset.tf not in DEFAULT_IMAGE_TF_VERSIONS:
        return [
            Problem(
                ("dockerImage",),
                f"TF {nodeset.tf} has a TPU runtime, but SchedMD publishes no slurm-gcp-6-9 "
                f"slurmd image for it (published: {', '.join(DEFAULT_IMAGE_TF_VERSIONS)}); set "
                "dockerImage to an image you built for it, or pick a published version",
            )
        ]
    return []


def _storage_problems(storage: Sequence[NetworkStorage]) -> list[Problem]:
    """Two entries of one list mounting at one place."""
    first: dict[str, int] = {}
    found = []
    for i, entry in enumerate(storage):
        if entry.local_mount in first:
            found.append(
                Problem(
                    (i, "localMount"),
                    f"{entry.local_mount} is already mounted by [{first[entry.local_mount]}]; "
                    "mount each file system at its own path",
                )
            )
        first.setdefault(entry.local_mount, i)
        if "@" in entry.server_ip and entry.fs_type != "lustre":
            found.append(
                Problem(
                    (i, "serverIp"),
                    f"'{entry.server_ip}' is a Lustre network address (ADDRESS@NET); an "
                    f"{entry.fs_type} server is a plain address or host name",
                )
            )
    return found


def nodeset_problems(
    nodeset: TpuNodesetConfig, *, zone: str, region: str, stack_subnet: str
) -> list[Problem]:
    """Checks of one TPU nodeset, given its resolved zone and the stack's region and subnet."""
    found = _type_problems(nodeset) + _runtime_problems(nodeset)
    if found[:1] and found[0].path[0] in ("nodeType", "acceleratorConfig"):
        return found
    workers = nodeset.workers_per_slice
    for key, count in (
        ("nodeCountStatic", nodeset.node_count_static),
        ("nodeCountDynamicMax", nodeset.node_count_dynamic_max),
    ):
        # The topology chunks static and dynamic nodes apart into slices (conf.py
        # add_tpu_nodeset_topology), so each count is whole slices.
        if count % workers:
            found.append(
                Problem(
                    (key,),
                    f"{count} is not a multiple of the {workers} workers per slice "
                    f"({nodeset.cores} TensorCores / {CORES_PER_WORKER}); use "
                    f"{(count // workers) * workers or workers} or "
                    f"{(count // workers + 1) * workers}",
                )
            )
    if max(nodeset.node_count_static, nodeset.node_count_dynamic_max) < workers:
        found.append(
            Problem(
                ("nodeCountDynamicMax",),
                f"the nodeset can never hold a whole slice: set nodeCountDynamicMax or "
                f"nodeCountStatic to at least {workers} (the workers per slice)",
            )
        )
    registry = image_registry(nodeset.image) or "docker.io"
    if registry not in DOCKER_REGISTRIES:
        found.append(
            Problem(
                ("dockerImage",),
                f"TPU VMs pull with Docker authenticated to "
                f"{' and '.join(DOCKER_REGISTRIES)} only, not {registry}; push the "
                "image to a us-docker.pkg.dev repository",
            )
        )
    if nodeset.preemptible and nodeset.reserved:
        found.append(
            Problem(
                ("preemptible",),
                "a nodeset cannot be both preemptible and reserved; drop one",
            )
        )
    for key, value in (("preemptible", nodeset.preemptible), ("preserveTpu", nodeset.preserve_tpu)):
        if value and nodeset.node_type not in SINGLE_HOST_TYPES:
            found.append(
                Problem(
                    (key,),
                    f"only single-host node types ({', '.join(SINGLE_HOST_TYPES)}) can be "
                    "preempted or preserved; Slurm-GCP silently ignores it otherwise; set "
                    "nodeType to one of them or remove it",
                )
            )
    if problem := zone_problem(zone, region):
        found.append(Problem(("zone",), f"{problem}; a nodeset's TPU VMs join the stack's subnet"))
    elif zone not in (zones := _zones_for(nodeset)):
        found.append(
            Problem(
                ("zone",),
                f"Cloud TPU offers {nodeset.node_type or nodeset.family} in "
                f"{', '.join(zones) or 'no zone this program knows'}, not {zone}; pick one of "
                "those (gcp:region must hold it)",
            )
        )
    for i, disk in enumerate(nodeset.data_disks):
        if disk_zone(disk) != zone:
            found.append(
                Problem(
                    ("dataDisks", i),
                    f"the disk is in {disk_zone(disk)}, but the nodeset's TPU VMs are in "
                    f"{zone}, and a VM attaches disks of its own zone only; use a disk in "
                    f"{zone} or move the nodeset",
                )
            )
    if nodeset.subnetwork not in (None, stack_subnet) and not nodeset.enable_public_ips:
        found.append(
            Problem(
                ("subnetwork",),
                f"TPU VMs without public IPs need Private Google Access, which only the stack's "
                f"own subnet '{stack_subnet}' is known to have; remove subnetwork or set "
                "enablePublicIps: true",
            )
        )
    found += [p.under("networkStorage") for p in _storage_problems(nodeset.network_storage)]
    return found


def _disk_problem(machine_type: str, disk_type: str) -> str | None:
    if problem := gpu_catalog.boot_disk_problem(machine_type, disk_type):
        return problem
    if machine_type.startswith(HYPERDISK_ONLY) and disk_type != "hyperdisk-balanced":
        return f"{machine_type} boots only from hyperdisk-balanced, not {disk_type}"
    if machine_type.startswith(NO_HYPERDISK) and disk_type == "hyperdisk-balanced":
        return f"{machine_type} attaches no Hyperdisk; use pd-balanced or pd-ssd"
    if machine_type.startswith(NO_PD_STANDARD) and disk_type == "pd-standard":
        return f"{machine_type} does not boot from pd-standard; use pd-balanced or pd-ssd"
    if machine_type.startswith("h3-") and disk_type == "pd-ssd":
        return f"{machine_type} does not boot from pd-ssd; use pd-balanced"
    return None


def cpu_nodeset_problems(
    nodeset: CpuNodesetConfig,
    *,
    zones: list[str],
    region: str,
    cluster_lustre: bool,
    lustre: Collection[str] = (),
) -> list[Problem]:
    """Checks of one CPU nodeset, given its resolved zones, the stack's region, whether
    the cluster's own storage mounts Lustre on every VM, and the Lustre volumes of
    `ai-infra:storage`."""
    found = []
    if nodeset.node_count_static + nodeset.node_count_dynamic_max < 1:
        # Toolkit's nodeset module: "at least one node" (outputs.tf precondition).
        found.append(
            Problem(
                ("nodeCountDynamicMax",),
                "the nodeset has no nodes; set nodeCountDynamicMax or nodeCountStatic to at "
                "least 1",
            )
        )
    for i, zone in enumerate(zones):
        if problem := zone_problem(zone, region):
            found.append(
                Problem(("zones", i), f"{problem}; the nodes join the stack's subnet there")
            )
    repeated = [z for z, c in Counter(zones).items() if c > 1]
    if repeated:
        found.append(Problem(("zones",), f"lists {', '.join(repeated)} twice"))
    if (nodeset.image.family is None) == (nodeset.image.name is None):
        found.append(
            Problem(
                ("image",),
                "give exactly one of family and name, e.g. {project: schedmd-slurm-public, "
                "family: slurm-gcp-6-12-hpc-rocky-linux-8}",
            )
        )
    machine = nodeset.machine_type
    if nodeset.gpu is not None and (
        problem := gpu_catalog.gpu_problem(machine, nodeset.gpu.type, nodeset.gpu.count)
    ):
        found.append(Problem(("gpu",), problem))
    if gpu_catalog.fixed_gpus(machine) is not None and (
        problem := _capacity_problem(machine, nodeset.spot)
    ):
        found.append(Problem(("machineType",), problem))
    if problem := _disk_problem(machine, nodeset.disk_type):
        found.append(Problem(("diskType",), problem))
    if nodeset.secure_boot and nodeset.uses_schedmd_image:
        reason = (
            "its NVIDIA drivers"
            if nodeset.gpus() is not None
            else "the Lustre client"
            if cluster_lustre
            or needs_unsigned_modules(nodeset.network_storage, nodeset.storage, lustre)
            else None
        )
        if reason:
            # slurm-gcp docs/images.md "Shielded VM Support": schedmd-slurm-public images
            # support Secure Boot only without GPUs or Lustre, whose modules are unsigned.
            found.append(
                Problem(
                    ("secureBoot",),
                    f"SchedMD's image loads {reason} as unsigned kernel modules, which Secure "
                    "Boot refuses; remove secureBoot (it is then off for this nodeset)",
                )
            )
    found += [p.under("networkStorage") for p in _storage_problems(nodeset.network_storage)]
    return found


def _partition_conf_problems(conf: dict[str, str]) -> list[Problem]:
    program = {k.lower(): k for k in PROGRAM_PARTITION_KEYS}
    found = []
    seen: dict[str, str] = {}
    for key in conf:
        lower = key.lower()
        if lower in program:
            hint = "set default: true instead" if lower == "default" else "remove it"
            found.append(
                Problem(
                    ("partitionConf", key),
                    f"{program[lower]} is decided by the program from the partition's "
                    f"nodesets and flags (Slurm reads option names without case); {hint}",
                )
            )
        elif lower in seen:
            found.append(
                Problem(
                    ("partitionConf", key),
                    f"repeats {seen[lower]} (Slurm reads option names without case); keep one",
                )
            )
        seen.setdefault(lower, key)
    return found


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


def problems(
    config: SlurmConfig, ctx: StackContext, *, buckets: list[str], storage: Storage
) -> list[Problem]:
    """Cross-checks of `ai-infra:slurm`, with paths relative to it; `storage` holds the
    volumes its `storage` lists mount."""
    region = ctx.region
    stack_subnet = subnet_name(ctx.prefix)
    cpu = config.all_cpu_nodesets
    own = {
        service_account_email(account_id(ctx, role), ctx.project): title
        for role, title in (("ctl", "controller"), ("lgn", "login"))
    }
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
            for p in _storage_problems(group.network_storage)
        ]
    valid: dict[str, TpuNodesetConfig] = {}
    for i, nodeset in enumerate(config.tpu_nodesets):
        own_problems = nodeset_problems(
            nodeset, zone=ctx.zone_of(nodeset.zone), region=region, stack_subnet=stack_subnet
        )
        own_problems += _account_problems((), nodeset.service_account_email, own)
        found += [p.under("tpuNodesets", i) for p in own_problems]
        if not own_problems:
            valid[nodeset.name] = nodeset
    for i, nodeset in enumerate(config.cpu_nodesets):
        own_problems = cpu_nodeset_problems(
            nodeset,
            zones=cpu_zones(nodeset, ctx),
            region=region,
            cluster_lustre=config.mounts_lustre(storage.lustre_names),
            lustre=storage.lustre_names,
        )
        own_problems += _account_problems((), nodeset.service_account_email, own)
        found += [p.under("cpuNodesets", i) for p in own_problems]
    if not cpu:
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
    if problem := zone_problem(ctx.zone_of(config.controller.zone), region):
        found.append(Problem(("controller", "zone"), problem))
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
    found += _home_problems(config, stack_subnet)
    found += _mount_problems(config, storage)
    found += [p.under("networkStorage") for p in _storage_problems(config.network_storage)]
    for key, scripts in (
        ("prologScripts", config.prolog_scripts),
        ("epilogScripts", config.epilog_scripts),
    ):
        found += [p.under(key) for p in duplicate_names([s.name for s in scripts], key)]
    found += _partition_problems(config, valid)
    return found


def cpu_zones(nodeset: CpuNodesetConfig, ctx: StackContext) -> list[str]:
    """The zones a CPU nodeset's nodes may be created in: its own, or `gcp:zone`."""
    return list(nodeset.zones) or [ctx.zone]


def _home_problems(config: SlurmConfig, stack_subnet: str) -> list[Problem]:
    home = config.home
    found = []
    if home.filestore:
        # The share exports to the stack's subnet only (components/nfs.py).
        found += [
            Problem(
                ("tpuNodesets", i, "subnetwork"),
                f"the /home share admits the stack's subnet '{stack_subnet}' only, so TPU VMs "
                "in another subnet could not mount it; remove subnetwork or set "
                "home.filestore: false",
            )
            for i, n in enumerate(config.tpu_nodesets)
            # Without public IPs the nodeset has a problem at this path already.
            if n.subnetwork not in (None, stack_subnet) and n.enable_public_ips
        ]
        if problem := FILESTORE_TIERS[home.tier].capacity_problem(home.capacity_gb):
            found.append(Problem(("home", "capacityGb"), problem))
        for i, entry in enumerate(config.network_storage):
            if entry.local_mount == "/home":
                found.append(
                    Problem(
                        ("networkStorage", i, "localMount"),
                        "/home is the Filestore share of home.filestore; set home.filestore: "
                        "false to mount your own /home",
                    )
                )
    elif home.model_fields_set - {"filestore"}:
        found.append(
            Problem(
                ("home",),
                "tier and capacityGb size the Filestore share, and home.filestore is false; "
                "remove them",
            )
        )
    return found


def _partition_problems(config: SlurmConfig, valid: dict[str, TpuNodesetConfig]) -> list[Problem]:
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
        members = [valid[n] for n in partition.nodesets if n in valid]
        if partition.exclusive:
            static = [n for n in partition.nodesets if n in valid and valid[n].node_count_static]
            static += [n for n in partition.nodesets if n in cpu and cpu[n].node_count_static]
            if static:
                found.append(
                    Problem(
                        ("partitions", i, "exclusive"),
                        f"exclusive partitions power nodes down after each job, so static nodes "
                        f"of {', '.join(static)} would be deleted; set exclusive: false or "
                        "nodeCountStatic: 0",
                    )
                )
        if len({n.workers_per_slice for n in members}) > 1:
            found.append(
                Problem(
                    ("partitions", i, "nodesets"),
                    "its nodesets differ in workers per slice; a job's node count must mean "
                    "whole slices in every nodeset, so split them into partitions",
                )
            )
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


def _capacity_problem(machine_type: str, spot: bool) -> str | None:
    """Why a nodeset's VMs of this machine type cannot be had: a nodeset asks for on-demand or
    Spot VMs only (no reservation or flex-start keys), so a series sold otherwise (the
    catalog's SERIES) belongs in a GKE pool or a GPU cluster."""
    provisioning = "spot" if spot else "on-demand"
    if gpu_catalog.capacity_problem(machine_type, provisioning) is None:
        return None
    capacity = gpu_catalog.series_capacity(machine_type)
    if not spot and capacity is not None and "spot" in capacity.provisioning:
        return f"{machine_type} is not offered on demand; set spot: true"
    return (
        f"{machine_type} is not offered {provisioning}; a nodeset takes on-demand or Spot VMs "
        "only, so use a GKE pool (ai-infra:gpuPools) or a GPU cluster (ai-infra:gpuClusters) "
        "with a reservation or flex-start"
    )


SHARED_DIRS = ("/home", "/opt/apps")
"""What every VM mounts from the cluster whatever its storage: /home (the Filestore share, or
the controller's export) and /opt/apps, which Slurm-GCP's setup always mounts from the
controller (setup_network_storage.py `_get_default_mounts`)."""


def _mount_problems(config: SlurmConfig, storage: Storage) -> list[Problem]:
    """The `storage` lists: known volumes, paths of their own, and no login group or nodeset
    mounting over what the whole cluster mounts. Slurm-GCP merges a group's or nodeset's
    entries over the cluster's by mount path (setup_network_storage.py
    `resolve_network_storage`), so one there would silently replace the shared /home."""
    cluster = {
        **{d: "the cluster's shared directories" for d in SHARED_DIRS},
        **{e.local_mount: f"networkStorage[{i}]" for i, e in enumerate(config.network_storage)},
    }
    own = {e.local_mount: f"networkStorage[{i}]" for i, e in enumerate(config.network_storage)}
    own["/opt/apps"] = "the cluster's shared directories"
    if config.home.filestore:
        own["/home"] = "home.filestore's share"
    found = under(
        ("storage",), mount_problems(config.storage, storage, taken=own, reserved=SLURM_DIRS)
    )
    cluster |= {m.mount_path: f"storage[{i}]" for i, m in enumerate(config.storage)}
    groups: list[tuple[tuple[PathPart, ...], list[NetworkStorage], list[StorageMount]]] = [
        (("loginGroups", i), g.network_storage, g.storage)
        for i, g in enumerate(config.login_groups)
    ]
    groups += [
        (("cpuNodesets", i), n.network_storage, n.storage)
        for i, n in enumerate(config.cpu_nodesets)
    ]
    groups += [
        (("tpuNodesets", i), n.network_storage, n.storage)
        for i, n in enumerate(config.tpu_nodesets)
    ]
    for where, entries, mounts in groups:
        for k, entry in enumerate(entries):
            if over := next((p for p in cluster if nested(entry.local_mount, p)), None):
                found.append(_override((*where, "networkStorage", k, "localMount"), over, cluster))
        taken = {e.local_mount: f"networkStorage[{k}]" for k, e in enumerate(entries)}
        found += under(
            (*where, "storage"),
            mount_problems(mounts, storage, taken=taken | cluster, reserved=SLURM_DIRS),
        )
    return found


def _override(path: tuple[PathPart, ...], over: str, cluster: dict[str, str]) -> Problem:
    return Problem(
        path,
        f"{over} is mounted on every VM of the cluster ({cluster[over]}), and Slurm-GCP lets "
        "this entry replace it on these VMs alone; mount elsewhere, or change the cluster's",
    )
