"""The problems of one TPU nodeset: its TPU type and runtime against what Slurm-GCP v6 creates,
its counts in whole slices, its image registry, zone, disks and subnet.
"""

from __future__ import annotations

from catalog import tpu as tpu_catalog
from components.base import Problem
from components.locations import zone_problem
from components.slurm.boot import registry_problem
from components.slurm.checks.storage import storage_problems
from components.slurm.nodesets import (
    CORES_PER_WORKER,
    DEFAULT_IMAGE_TF_VERSIONS,
    SINGLE_HOST_TYPES,
    SLURM_FAMILIES,
    TF_RUNTIMES,
    TpuNodesetConfig,
)
from components.types import disk_zone


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


def tpu_nodeset_problems(
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
    found += [p.under("networkStorage") for p in storage_problems(nodeset.network_storage)]
    return found
