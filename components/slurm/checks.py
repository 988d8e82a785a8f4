"""The problems of `ai-infra:slurm`, with paths relative to it: each nodeset's TPU type,
runtime, image, zone and counts against what Slurm-GCP v6 can create, the cluster's name and
bucket, and how partitions use the nodesets.
"""

from __future__ import annotations

import re
from collections import Counter

from components import tpu_catalog
from components.base import Problem, duplicate_names
from components.context import StackContext
from components.locations import zone_problem
from components.network import subnet_name
from components.slurm.boot import DOCKER_REGISTRIES
from components.slurm.config import (
    CORES_PER_WORKER,
    DEFAULT_IMAGE_TF_VERSIONS,
    NODE_TYPES,
    SINGLE_HOST_TYPES,
    SLURM_FAMILIES,
    TF_RUNTIMES,
    V2_V3_ZONES,
    SlurmConfig,
    TpuNodesetConfig,
)
from components.types import image_registry


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
        match = re.fullmatch(r"(v[0-9a-z]+)-([0-9]{1,5})", nodeset.node_type)
        family = match[1] if match else None
        if family not in SLURM_FAMILIES:
            return [
                Problem(
                    ("nodeType",),
                    f"'{nodeset.node_type}' is not a TPU type Slurm-GCP v6 can create: its TPU "
                    "nodesets run v2, v3 and v4 only (e.g. v4-8); for newer TPUs use a GKE "
                    "slice in ai-infra:tpuSlices",
                )
            ]
        assert match is not None
        sizes = _family_sizes(family)
        if int(match[2]) not in sizes:
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
                (key,),
                f"SchedMD publishes no slurmd image for TF {nodeset.tf}; use one of "
                f"{', '.join(DEFAULT_IMAGE_TF_VERSIONS)} or set dockerImage to your own build",
            )
        ]
    return []


def nodeset_problems(
    nodeset: TpuNodesetConfig, *, zone: str, region: str, stack_subnet: str
) -> list[Problem]:
    """Checks of one nodeset, given its resolved zone and the stack's region and subnet."""
    found = _type_problems(nodeset) + _runtime_problems(nodeset)
    if found[:1] and found[0].path[0] in ("nodeType", "acceleratorConfig"):
        return found
    workers = nodeset.workers_per_slice
    if workers > 1:
        found.append(
            Problem(
                ("nodeType" if nodeset.node_type else "acceleratorConfig",),
                f"a {nodeset.cores}-TensorCore slice spans {workers} TPU VMs, and Slurm-GCP v6 "
                "keeps a multi-host slice's workers together with a switch topology it writes "
                "only when a CPU nodeset exists (conf.py TopologyPlugin), which this program "
                "does not build; use a single-host type (v2-8, v3-8, v4-8) or a GKE slice in "
                "ai-infra:tpuSlices",
            )
        )
    for key, count in (
        ("nodeCountStatic", nodeset.node_count_static),
        ("nodeCountDynamicMax", nodeset.node_count_dynamic_max),
    ):
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
    if nodeset.subnetwork not in (None, stack_subnet) and not nodeset.enable_public_ips:
        found.append(
            Problem(
                ("subnetwork",),
                f"TPU VMs without public IPs need Private Google Access, which only the stack's "
                f"own subnet '{stack_subnet}' is known to have; remove subnetwork or set "
                "enablePublicIps: true",
            )
        )
    return found


def problems(config: SlurmConfig, ctx: StackContext, *, buckets: list[str]) -> list[Problem]:
    """Cross-checks of `ai-infra:slurm`, with paths relative to it."""
    region = ctx.region
    stack_subnet = subnet_name(ctx.prefix)
    found = [
        p.under("tpuNodesets")
        for p in duplicate_names([n.name for n in config.tpu_nodesets], "tpuNodesets")
    ]
    found += [
        p.under("partitions")
        for p in duplicate_names([p.name for p in config.partitions], "partitions")
    ]
    valid: dict[str, TpuNodesetConfig] = {}
    for i, nodeset in enumerate(config.tpu_nodesets):
        own = nodeset_problems(
            nodeset, zone=ctx.zone_of(nodeset.zone), region=region, stack_subnet=stack_subnet
        )
        found += [p.under("tpuNodesets", i) for p in own]
        if not own:
            valid[nodeset.name] = nodeset
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
    if config.cluster_name.endswith("-"):
        # The name ends the bucket's name and is the cluster's network tag; GCS and Compute
        # Engine both want those to end in a letter or digit.
        found.append(
            Problem(("clusterName",), "must not end with '-'; end it with a letter or digit")
        )
    if config.bucket_key in buckets:
        found.append(
            Problem(
                ("clusterName",),
                f"the Slurm bucket takes the name of ai-infra:buckets entry "
                f"'{config.bucket_key}'; rename one",
            )
        )
    names = {n.name for n in config.tpu_nodesets}
    used: set[str] = set()
    for i, partition in enumerate(config.partitions):
        for j, name in enumerate(partition.nodesets):
            used.add(name)
            if name not in names:
                found.append(
                    Problem(
                        ("partitions", i, "nodesets", j),
                        f"no TPU nodeset named '{name}'; known: "
                        f"{', '.join(sorted(names)) or 'none'}",
                    )
                )
        repeated = [n for n, c in Counter(partition.nodesets).items() if c > 1]
        if repeated:
            found.append(
                Problem(("partitions", i, "nodesets"), f"lists {', '.join(repeated)} twice")
            )
        members = [valid[n] for n in partition.nodesets if n in valid]
        if partition.exclusive:
            static = [n.name for n in members if n.node_count_static]
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
    for i, nodeset in enumerate(config.tpu_nodesets):
        if nodeset.name not in used:
            found.append(
                Problem(
                    ("tpuNodesets", i, "name"),
                    f"no partition lists '{nodeset.name}', so no job could reach it; add it to "
                    "a partition's nodesets",
                )
            )
    if config.tpu_nodesets and not config.partitions:
        found.append(Problem(("partitions",), "add a partition, e.g. {name: tpu, nodesets: [...]}"))
    return found
