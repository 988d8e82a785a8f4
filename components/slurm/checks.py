"""The problems of `ai-infra:slurm`, with paths relative to it: each nodeset's machine or TPU
type, runtime, image, zones, disks and counts against what Slurm-GCP v6 can create, the
cluster's name and bucket, the accounts nodes run as, shared storage, and how partitions use
the nodesets.
"""

from __future__ import annotations

import difflib
import ipaddress
import re
from collections import Counter
from collections.abc import Collection, Mapping, Sequence

from catalog import gpu as gpu_catalog
from catalog import tpu as tpu_catalog
from catalog.storage import FILESTORE_TIERS
from components.base import PathPart, Problem, duplicate_names, under
from components.context import StackContext
from components.identity import service_account_email
from components.locations import zone_problem
from components.network import subnet_name
from components.slurm.boot import registry_problem
from components.slurm.config import (
    CORES_PER_WORKER,
    DEFAULT_IMAGE_TF_VERSIONS,
    PARTITION_OPTIONS,
    PROGRAM_PARTITION_KEYS,
    SINGLE_HOST_TYPES,
    SLURM_DIRS,
    SLURM_FAMILIES,
    SLURM_RELEASE,
    TF_RUNTIMES,
    CpuNodesetConfig,
    JobScript,
    NetworkStorage,
    NodeImage,
    PartitionConfig,
    SlurmConfig,
    TpuNodesetConfig,
    account_id,
    needs_unsigned_modules,
    partition_option,
)
from components.storage import Storage, StorageMount, mount_problems, nested
from components.types import disk_zone, reservation_parts

HYPERDISK_ONLY = ("c4-", "c4a-", "c4d-", "n4-")
"""Machine series whose boot disk must be Hyperdisk (Compute Engine "Machine series
comparison": C4, C4A, C4D and N4 attach no Persistent Disk)."""
NO_HYPERDISK = ("e2-", "n1-", "c2-")
"""Series that attach no Hyperdisk."""
NO_PD_STANDARD = ("c3-", "c3d-", "h3-")
"""Toolkit's instance_validations: c3 and h3 refuse pd-standard (h3 also pd-ssd)."""


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
        sizes = tpu_catalog.valid_sizes(family)
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
    try:
        tpu_catalog.resolve(nodeset.accelerator, accelerator.topology)
    except tpu_catalog.CatalogError as error:
        return [Problem(("acceleratorConfig", "topology"), str(error))]
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
    if problem := registry_problem(nodeset.registry):
        found.append(Problem(("dockerImage",), problem))
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
    elif not nodeset.allow_unlisted_zone and (
        problem := tpu_catalog.tpu_vm_zone_problem(nodeset.shape, zone)
    ):
        inherited = "" if nodeset.zone else f"the nodeset inherits gcp:zone {zone}: "
        found.append(Problem(("zone",), inherited + problem))
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


TIER_1_SERIES = ("n2", "n2d", "c2", "c2d", "c3")
TIER_1_MIN_VCPUS = 30
"""Compute Engine "Configure per VM Tier_1 networking performance", requirements: "Tier_1
networking is only supported on N2, N2D, C2, C2D, or C3 VMs that have at least 30 vCPUs"."""
GVNIC_ONLY_SERIES = ("a3", "a4", "a4x", "c3", "c3d", "c4", "c4a", "c4d", "g4", "h3", "n4", "z3")
"""Third-generation and later series, whose VMs run gVNIC only (Compute Engine "Using Google
Virtual NIC"; the GPU series' NIC layouts are gVNIC, gpu_catalog.GpuNicLayout)."""


def machine_vcpus(machine_type: str) -> int | None:
    """vCPUs of a predefined machine type named `<series>-<kind>-<vCPUs>[-...]`, else None."""
    parts = machine_type.split("-")
    return int(parts[2]) if len(parts) > 2 and parts[2].isdigit() else None


def _bandwidth_problem(machine_type: str, tier: str) -> str | None:
    series = machine_type.split("-", 1)[0]
    if tier == "virtio_enabled" and series in GVNIC_ONLY_SERIES:
        return (
            f"{machine_type} runs gVNIC only, and refuses VirtIO; use gvnic_enabled or "
            "platform_default"
        )
    if tier != "tier_1_enabled":
        return None
    vcpus = machine_vcpus(machine_type)
    if series in TIER_1_SERIES and vcpus is not None and vcpus >= TIER_1_MIN_VCPUS:
        return None
    return (
        f"Compute Engine offers Tier_1 networking on {', '.join(TIER_1_SERIES)} machines of "
        f"{TIER_1_MIN_VCPUS} vCPUs or more, not {machine_type}; pick one of those (e.g. "
        "c2-standard-60) or use gvnic_enabled"
    )


def _image_problems(image: NodeImage) -> list[Problem]:
    if (image.family is None) == (image.name is None):
        return [
            Problem(
                ("image",),
                "give exactly one of family and name, e.g. {project: schedmd-slurm-public, "
                "family: slurm-gcp-6-12-hpc-rocky-linux-8}",
            )
        ]
    return []


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
    found += _image_problems(nodeset.image)
    machine = nodeset.machine_type
    if nodeset.gpu is not None and (
        problem := gpu_catalog.gpu_problem(machine, nodeset.gpu.type, nodeset.gpu.count)
    ):
        found.append(Problem(("gpu",), problem))
    if problem := _disk_problem(machine, nodeset.disk_type):
        found.append(Problem(("diskType",), problem))
    if problem := _bandwidth_problem(machine, nodeset.bandwidth_tier):
        found.append(Problem(("bandwidthTier",), problem))
    found += _secure_boot_problems(nodeset, cluster_lustre, lustre)
    found += _provisioning_problems(nodeset, zones)
    found += _placement_problems(nodeset)
    found += _extra_disk_problems(nodeset)
    found += _gpu_network_problems(nodeset, zones)
    found += [p.under("networkStorage") for p in _storage_problems(nodeset.network_storage)]
    return found


def _gpu_network_problems(nodeset: CpuNodesetConfig, zones: list[str]) -> list[Problem]:
    if nodeset.gpu_networks is None:
        return []
    machine = nodeset.machine_type
    layout = nodeset.nic_layout
    if layout is None:
        known = ", ".join(sorted(gpu_catalog.GPU_NIC_LAYOUTS))
        return [
            Problem(
                ("gpuNetworks",),
                f"{machine} has no GPU NIC layout in the GPU catalog ({known} have one); "
                "remove gpuNetworks",
            )
        ]
    found = []
    try:
        nodeset.gpu_network_cidrs()
    except ValueError:
        found.append(
            Problem(
                ("gpuNetworks", "subnetCidr"),
                f"{layout.nics - 1} ranges of this size from here run past the IPv4 address "
                "space; start lower (e.g. 10.200.0.0/20)",
            )
        )
    if layout.rdma and len(zones) > 1:
        # An RDMA VPC takes the RoCE network profile of one zone (gpu_catalog.roce_profile).
        found.append(
            Problem(
                ("zones",),
                f"{machine}'s RDMA NICs are in a VPC of one zone's RoCE profile; list one zone",
            )
        )
    return found


def _secure_boot_problems(
    nodeset: CpuNodesetConfig, cluster_lustre: bool, lustre: Collection[str]
) -> list[Problem]:
    if not (nodeset.secure_boot and nodeset.uses_schedmd_image):
        return []
    reason = (
        "its NVIDIA drivers"
        if nodeset.gpus() is not None
        else "the Lustre client"
        if cluster_lustre
        or needs_unsigned_modules(nodeset.network_storage, nodeset.storage, lustre)
        else None
    )
    if reason is None:
        return []
    # slurm-gcp docs/images.md "Shielded VM Support": schedmd-slurm-public images support
    # Secure Boot only without GPUs or Lustre, whose modules are unsigned.
    return [
        Problem(
            ("secureBoot",),
            f"SchedMD's image loads {reason} as unsigned kernel modules, which Secure Boot "
            "refuses; remove secureBoot (it is then off for this nodeset)",
        )
    ]


def _provisioning_problems(nodeset: CpuNodesetConfig, zones: list[str]) -> list[Problem]:
    """How the nodes are had (on demand, Spot, a reservation, flex-start) against what the
    machine's series is sold under and what Slurm-GCP and Toolkit's nodeset allow."""
    found = []
    machine = nodeset.machine_type
    flex = nodeset.flex
    key, provisioning = (
        ("reservation", "reservation")
        if nodeset.reservation
        else ("dwsFlex", "flex-start")
        if flex
        else ("spot", "spot")
        if nodeset.spot
        else ("machineType", "on-demand")
    )
    if problem := _capacity_problem(machine, provisioning):
        found.append(Problem((key,), problem))
    if nodeset.reservation and (nodeset.spot or flex):
        # Toolkit's nodeset: "Cannot use reservations with DWS Flex"; Spot VMs consume no
        # reservation (Compute Engine "Spot VMs": reservations).
        found.append(
            Problem(
                ("reservation",),
                f"{'flex-start' if flex else 'Spot'} VMs consume no reservation; remove "
                f"{'dwsFlex' if flex else 'spot'} or the reservation",
            )
        )
    if flex and nodeset.spot:
        found.append(
            Problem(("spot",), "a nodeset is Spot or flex-start, not both (Toolkit's nodeset)")
        )
    if (nodeset.reservation or flex) and len(zones) > 1:
        # util.py nodeset_reservation: "Only single zone is supported if using a
        # reservation"; Toolkit's nodeset wants no extra zones with dws_flex either.
        what = "a reservation lives in one zone" if nodeset.reservation else "flex-start asks"
        found.append(
            Problem(
                ("zones",),
                f"{what} in one zone, and so does this nodeset: list one zone, the "
                f"{'reservation' if nodeset.reservation else 'capacity'}'s",
            )
        )
    if flex and nodeset.node_count_static:
        found.append(
            Problem(
                ("nodeCountStatic",),
                "flex-start nodes exist only for the run a resize request gets them for, so a "
                "flex-start nodeset has dynamic nodes only; set nodeCountStatic: 0 (or put the "
                "static nodes in a nodeset of their own)",
            )
        )
    if flex and nodeset.gpus() is None:
        found.append(
            Problem(
                ("dwsFlex",),
                f"{machine} carries no GPUs: the controller asks for flex-start nodes with "
                "resize requests of GPU machine types only (Slurm-GCP mig_flex.py); use a GPU "
                "machine type or remove dwsFlex",
            )
        )
    return found


PLACEMENT_REFUSED = ("e2", "t2d", "n1", "t2a", "m1", "m2", "m3")
"""Series Slurm-GCP places no VM of (resume.py valid_placement_node)."""


def _placement_problems(nodeset: CpuNodesetConfig) -> list[Problem]:
    """Compact placement as Slurm-GCP builds it (resume.py) and Toolkit's nodeset allows it."""
    machine = nodeset.machine_type
    distance = nodeset.placement_max_distance
    if not nodeset.enable_placement:
        if distance is None:
            return []
        return [
            Problem(
                ("placementMaxDistance",),
                "places nothing without enablePlacement: true (Toolkit's nodeset); set it or "
                "remove placementMaxDistance",
            )
        ]
    series = machine.split("-", 1)[0]
    if series in PLACEMENT_REFUSED:
        return [
            Problem(
                ("enablePlacement",),
                f"Slurm-GCP places no {series} VM (it logs a warning and creates them "
                "unplaced); use another machine series or remove enablePlacement",
            )
        ]
    found = []
    if distance is not None and (problem := gpu_catalog.max_distance_problem(machine, distance)):
        found.append(Problem(("placementMaxDistance",), problem))
    if nodeset.flex and gpu_catalog.group_placement(machine, "flex-start") is None:
        found.append(
            Problem(
                ("enablePlacement",),
                f"flex-start {machine} VMs take no placement policy (Toolkit places flex-start "
                "nodes of A3 Ultra and A4 only); remove enablePlacement",
            )
        )
    limit = gpu_catalog.compact_limit(machine, distance)
    if nodeset.max_nodes > limit:
        found.append(
            Problem(
                ("enablePlacement",),
                f"{nodeset.max_nodes} nodes, but a compact placement policy of "
                f"{machine}{f' at max distance {distance}' if distance else ''} holds "
                f"{limit} (Slurm-GCP resume.py calculate_chunk_size), so the nodes could not "
                f"be placed together; use at most {limit} nodes, or a larger "
                "placementMaxDistance",
            )
        )
    return found


BUNDLED_LOCAL_SSD = re.compile(r".*-lssd|(a2-ultragpu|a3|a4|a4x|z3)-.*")
"""Machine types that come with their Local SSD disks attached (Compute Engine "About Local
SSD disks": the `-lssd` types, A2 Ultra, A3, A4, A4X and Z3)."""
NO_LOCAL_SSD = ("e2", "t2a", "t2d", "n4", "c3", "c3d", "c4", "c4a", "c4d", "h3")
"""Series whose VMs take no Local SSD but through their `-lssd` types, if they have those."""
LOCAL_SSD_COUNTS = (1, 2, 4, 8, 16, 24)
"""Local SSD counts Compute Engine attaches to N1, N2, N2D, C2, C2D, A2 and G2 VMs; how many
a machine of a given vCPU count takes narrows this ("Choose a valid number of Local SSD
disks")."""


def _extra_disk_problems(nodeset: CpuNodesetConfig) -> list[Problem]:
    machine = nodeset.machine_type
    found = []
    names = [d.device_name for d in nodeset.additional_disks]
    found += [p.under("additionalDisks") for p in _repeats(names, "deviceName")]
    for i, disk in enumerate(nodeset.additional_disks):
        if problem := _disk_problem(machine, disk.disk_type):
            found.append(Problem(("additionalDisks", i, "diskType"), problem))
    ssd = nodeset.local_ssd
    if ssd is None:
        return found
    series = machine.split("-", 1)[0]
    bundled = BUNDLED_LOCAL_SSD.fullmatch(machine) is not None
    if bundled and ssd.count is not None:
        found.append(
            Problem(
                ("localSsd", "count"),
                f"{machine} comes with its own Local SSDs, and takes no more; remove count "
                "(they are mounted at mountPath)",
            )
        )
    elif not bundled and series in NO_LOCAL_SSD:
        found.append(
            Problem(
                ("localSsd",),
                f"{machine} takes no Local SSD; use its -lssd machine type where the series "
                "has one, or remove localSsd",
            )
        )
    elif not bundled and ssd.count not in LOCAL_SSD_COUNTS:
        found.append(
            Problem(
                ("localSsd", "count"),
                f"{machine} attaches {', '.join(map(str, LOCAL_SSD_COUNTS))} Local SSDs of "
                f"375 GB, not {ssd.count or 'none'}; set count to one of those",
            )
        )
    return found


def _repeats(names: list[str], key: str) -> list[Problem]:
    first: dict[str, int] = {}
    found = []
    for i, name in enumerate(names):
        if name in first:
            found.append(Problem((i, key), f"'{name}' is already [{first[name]}]'s; keep one"))
        first.setdefault(name, i)
    return found


_SLURM_NUMBER = re.compile(r"0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*")
"""A number as strtoul reads it with base 0 (hex, octal, decimal), which Slurm's parser uses."""
_SLURM_BOOLEANS = ("yes", "up", "true", "1", "no", "down", "false", "0")
_SLURM_LIMITS = {"uint16": 0xFFFF, "uint32": 0xFFFFFFFF, "uint64": 0xFFFFFFFFFFFFFFFF}


def slurm_value_problem(kind: str, value: str) -> str | None:
    """Why Slurm's parser refuses `value` for an option read as `kind` (parse_value.c
    s_p_handle_boolean, s_p_handle_uint16/32/64), or None."""
    if kind == "boolean":
        if value.lower() in _SLURM_BOOLEANS:
            return None
        return f"'{value}' is not YES or NO (Slurm also reads UP, DOWN, TRUE, FALSE, 1, 0)"
    if kind not in _SLURM_LIMITS or value.upper() in ("UNLIMITED", "INFINITE"):
        return None
    # uint32 and uint64 take a k suffix (times 1024); uint16 does not.
    text = value[:-1] if kind != "uint16" and value[-1:] in ("k", "K") else value
    if not _SLURM_NUMBER.fullmatch(text):
        return f"'{value}' is not a whole number or UNLIMITED"
    number = int(text, 0) * (1024 if text != value else 1)
    if number > _SLURM_LIMITS[kind]:
        return f"{value} is more than {_SLURM_LIMITS[kind]}, the largest this option holds"
    return None


def _partition_conf_problems(conf: dict[str, str]) -> list[Problem]:
    """Each key a partition option of the pinned Slurm that the program does not decide, once
    in any case, with a value Slurm's parser reads."""
    program = {k.lower(): k for k in PROGRAM_PARTITION_KEYS}
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
        elif problem := slurm_value_problem(PARTITION_OPTIONS[option], value):
            found.append(
                Problem(
                    ("partitionConf", key),
                    f"{problem}; slurmctld stops at a {option} it cannot read",
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
    found = _name_problems(config)
    nodeset_found, valid = _nodeset_problems(config, ctx, storage)
    found += nodeset_found
    found += _cluster_problems(config, ctx, buckets, storage)
    found += _partition_problems(config, valid)
    return found


def _name_problems(config: SlurmConfig) -> list[Problem]:
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
    return found


def _nodeset_problems(
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
        own_problems = nodeset_problems(
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


def _cluster_problems(
    config: SlurmConfig, ctx: StackContext, buckets: list[str], storage: Storage
) -> list[Problem]:
    """The controller and login VMs' zone and images, the bucket's name, /home, the shared
    storage and the job scripts."""
    found = []
    if problem := zone_problem(ctx.zone_of(config.controller.zone), ctx.region):
        found.append(Problem(("controller", "zone"), problem))
    found += [p.under("controller") for p in _image_problems(config.controller.image)]
    for i, group in enumerate(config.login_groups):
        found += [p.under("loginGroups", i) for p in _image_problems(group.image)]
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
    found += _home_problems(config, subnet_name(ctx.prefix))
    found += _mount_problems(config, storage)
    found += [p.under("networkStorage") for p in _storage_problems(config.network_storage)]
    for key, scripts in (
        ("prologScripts", config.prolog_scripts),
        ("epilogScripts", config.epilog_scripts),
    ):
        found += [p.under(key) for p in duplicate_names([s.name for s in scripts], key)]
        found += [p.under(key) for p in _script_name_problems(scripts)]
    return found


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


def _gpu_network_name_problems(config: SlurmConfig, ctx: StackContext) -> list[Problem]:
    """Each nodeset's GPU networks fit Compute Engine's 63 characters and own their ranges."""
    found = []
    taken: dict[ipaddress.IPv4Network, str] = {}
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
            clash = next((owner for net, owner in taken.items() if net.overlaps(cidr)), None)
            if clash is not None:
                found.append(
                    Problem(
                        ("cpuNodesets", i, "gpuNetworks", "subnetCidr"),
                        f"its range {cidr} overlaps {clash}'s; give each nodeset ranges of its own",
                    )
                )
                break
            taken[cidr] = f"cpuNodesets[{i}]"
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
        found += [p.under("partitions", i) for p in _exclusivity_problems(partition, valid, cpu)]
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


def _capacity_problem(machine_type: str, provisioning: str) -> str | None:
    """Why a nodeset's VMs of this machine type cannot be had with `provisioning`
    (on-demand, spot, reservation, flex-start), by what the series is sold under (the GPU
    catalog's SERIES)."""
    if gpu_catalog.capacity_problem(machine_type, provisioning) is None:
        return None
    capacity = gpu_catalog.series_capacity(machine_type)
    assert capacity is not None
    offered = {"spot": "spot: true", "reservation": "reservation", "flex-start": "dwsFlex"}
    ways = [offered[p] for p in ("spot", "reservation", "flex-start") if p in capacity.provisioning]
    return f"{machine_type} is not offered {provisioning}; set {' or '.join(ways)}"


def _exclusivity_problems(
    partition: PartitionConfig,
    valid: dict[str, TpuNodesetConfig],
    cpu: dict[str, CpuNodesetConfig],
) -> list[Problem]:
    """Exclusive partitions of multi-host slices, static nodes they would power down, and
    slices of one size per partition."""
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
    if partition.exclusive:
        static = [n for n in partition.nodesets if n in valid and valid[n].node_count_static]
        static += [n for n in partition.nodesets if n in cpu and cpu[n].node_count_static]
        if static:
            # power_save.c suspends a node flagged POWER_DOWN (PowerDownOnIdle) whether or
            # not SuspendExcNodes lists it (Slurm 25.11).
            fix = "nodeCountStatic: 0"
            if not multi_host:
                fix = f"exclusive: false or {fix}"
            found.append(
                Problem(
                    ("exclusive",),
                    f"exclusive partitions power nodes down after each job, so static nodes "
                    f"of {', '.join(static)} would be deleted; set {fix}",
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
