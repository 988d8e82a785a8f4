"""The problems of one CPU or GPU nodeset: machine type against GPUs, disks, NICs, Secure Boot,
how its capacity is had (on demand, Spot, reservation, flex-start), compact placement, extra
disks and local SSDs.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection

from catalog import gpu as gpu_catalog
from components.base import Problem
from components.locations import zone_problem
from components.slurm.checks.storage import storage_problems
from components.slurm.fields import NodeImage, needs_unsigned_modules
from components.slurm.nodesets import CpuNodesetConfig
from components.slurm.slurm_conf import NODE_OPTIONS, node_option, node_value_problem

HYPERDISK_ONLY = ("c4-", "c4a-", "c4d-", "n4-")
"""Machine series whose boot disk must be Hyperdisk (Compute Engine "Machine series
comparison": C4, C4A, C4D and N4 attach no Persistent Disk)."""
NO_HYPERDISK = ("e2-", "n1-", "c2-")
"""Series that attach no Hyperdisk."""
NO_PD_STANDARD = ("c3-", "c3d-", "h3-")
"""Toolkit's instance_validations: c3 and h3 refuse pd-standard (h3 also pd-ssd)."""


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


def image_problems(image: NodeImage) -> list[Problem]:
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
    found += image_problems(nodeset.image)
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
    found += _node_conf_problems(nodeset)
    found += [p.under("networkStorage") for p in storage_problems(nodeset.network_storage)]
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


NO_SMT_SERIES = ("t2a", "t2d", "h3", "c4a", "h4d")
"""Series whose cores run one thread (util.py `MachineType.supports_smt`, after Compute
Engine's "CPU platforms"); a 1-vCPU machine type has none either."""


def _node_conf_problems(nodeset: CpuNodesetConfig) -> list[Problem]:
    """Threads per core the machine has, and `nodeConf` options a nodeset may set, each once,
    with a value Slurm reads as a count (or names, for Features)."""
    found = []
    series = nodeset.machine_type.split("-", 1)[0]
    if nodeset.threads_per_core == 2 and (
        series in NO_SMT_SERIES or machine_vcpus(nodeset.machine_type) == 1
    ):
        found.append(
            Problem(
                ("threadsPerCore",),
                f"{nodeset.machine_type} runs one thread per core; remove threadsPerCore",
            )
        )
    seen: dict[str, str] = {}
    for key, value in nodeset.node_conf.items():
        option = node_option(key)
        if option is None:
            found.append(
                Problem(
                    ("nodeConf", key),
                    f"'{key}' is not a node option a nodeset sets (Slurm-GCP writes the node's "
                    f"name, address, state and GPUs itself); options: {', '.join(NODE_OPTIONS)}",
                )
            )
        elif option in seen:
            found.append(
                Problem(
                    ("nodeConf", key),
                    f"repeats {seen[option]} (Slurm reads option names without case); keep one",
                )
            )
        elif problem := node_value_problem(option, value):
            found.append(Problem(("nodeConf", key), problem))
        elif option == "ThreadsPerCore" and value != str(nodeset.threads_per_core):
            found.append(
                Problem(
                    ("nodeConf", key),
                    f"the nodes run {nodeset.threads_per_core} thread(s) per core "
                    "(threadsPerCore), so Slurm would count CPUs they do not have; set "
                    f"threadsPerCore: {value} or remove it here",
                )
            )
        seen.setdefault(option or key, key)
    return found
