"""The problems of `ai-infra:gpuClusters` entries, each at `[i].<field>`: GPUs against the
machine catalog, capacity, disks, zone, image, network layout, metadata, labels and mounts.
"""

from __future__ import annotations

import ipaddress

from components import gpu_catalog
from components.base import Problem, duplicate_names, under
from components.context import StackContext, label_problems
from components.gpu_clusters.config import (
    BUCKET_NAME,
    CLUSTER_LABEL,
    DEFAULT_IMAGE_FAMILY,
    DLVM_PROJECTS,
    END_OF_LIFE_FAMILIES,
    FILESTORE_CAPACITY_GB,
    PROTECTED_PATHS,
    RESERVED_METADATA,
    GpuClusterConfig,
)
from components.identity import account_id_problems
from components.locations import zone_problem


def account_id(ctx: StackContext, name: str) -> str:
    """The id of a cluster's VM service account, `<prefix>-<name>-vm`."""
    return ctx.name(name, "vm")


def _mount_path_problem(path: str) -> str | None:
    top = "/" + path.split("/")[1]
    if top in PROTECTED_PATHS:
        return f"'{path}' would shadow the system's {top}; mount under /mnt, /gcs, /nfs or /data"
    return None


def problems(
    clusters: list[GpuClusterConfig], ctx: StackContext, *, buckets: list[str]
) -> list[Problem]:
    """Checks of `ai-infra:gpuClusters`, each at `[i].<field>`."""
    found = duplicate_names([c.name for c in clusters], "gpuClusters")
    for i, config in enumerate(clusters):
        found += [p.under(i) for p in _entry_problems(config, ctx, buckets)]
    return found


def _entry_problems(
    config: GpuClusterConfig, ctx: StackContext, buckets: list[str]
) -> list[Problem]:
    region = ctx.region
    found = account_id_problems(account_id(ctx, config.name))
    gpu = gpu_catalog.gpu_problem(config.machine_type, config.gpu_type, config.gpu_count)
    if gpu:
        found.append(Problem(("machineType",), gpu))
    capacity = gpu_catalog.capacity_problem(config.machine_type, config.spot)
    if capacity:
        found.append(Problem(("machineType",), capacity))
    disk = gpu_catalog.boot_disk_problem(config.machine_type, config.disk_type)
    if disk:
        found.append(Problem(("diskType",), f"{disk}; set diskType to one of those"))
    if config.zone is not None and (problem := zone_problem(config.zone, region)):
        found.append(Problem(("zone",), problem))
    if config.image is not None and config.image_family is not None:
        found.append(
            Problem(("image",), "set either image or imageFamily, not both; remove one of them")
        )
    if not config.dlvm:
        needs = [
            what
            for what, on in (
                ("orchestrator: ray", config.orchestrator == "ray"),
                ("jupyterProxy", config.jupyter_proxy),
            )
            if on
        ]
        if needs:
            found.append(
                Problem(
                    ("imageProject",),
                    f"{' and '.join(needs)} need a Deep Learning VM image; use imageProject "
                    f"{' or '.join(DLVM_PROJECTS)}, or turn {' and '.join(needs)} off",
                )
            )
    if config.orchestrator not in ("none", "ray"):
        hint = (
            "; for GKE, declare the GPUs as ai-infra:gpuPools instead"
            if config.orchestrator == "gke"
            else ""
        )
        found.append(
            Problem(("orchestrator",), f"'{config.orchestrator}' is not none or ray{hint}")
        )
    if config.threads_per_core == 2 and not gpu_catalog.smt(config.machine_type):
        found.append(
            Problem(
                ("threadsPerCore",),
                f"{config.machine_type} has one thread per core; remove threadsPerCore",
            )
        )
    found += _network_problems(config)
    found += _metadata_problems(config)
    found += under(
        "labels",
        label_problems(config.labels, reserved=(CLUSTER_LABEL,), beside=len(ctx.stack_labels)),
    )
    found += _mount_problems(config, buckets)
    if len(config.startup_command) > 32768:
        found.append(
            Problem(
                ("startupCommand",),
                "is over 32768 characters; put a script in a bucket "
                "mounted with gcsMounts and run that",
            )
        )
    return found


def _network_problems(config: GpuClusterConfig) -> list[Problem]:
    found = []
    layout = gpu_catalog.nic_layout(config.machine_type)
    if config.network != "multi-nic" and config.nic_count is not None:
        found.append(
            Problem(("nicCount",), "only used with network: multi-nic; remove it or set network")
        )
    if config.network == "multi-nic" and layout is not None:
        if config.nic_count is not None and config.nic_count != 1 + layout.gpu_nics:
            found.append(
                Problem(
                    ("nicCount",),
                    f"{config.machine_type} uses 1 + {layout.gpu_nics} NICs for GPUDirect; "
                    "remove nicCount",
                )
            )
        if not config.gvnic:
            found.append(
                Problem(
                    ("imageFamily",),
                    "GPUDirect NICs need gVNIC, which this image lacks; "
                    f"use {DEFAULT_IMAGE_FAMILY}",
                )
            )
    last = ipaddress.IPv4Network(config.subnet_cidr)
    if int(last.network_address) + config.nics * last.num_addresses > 2**32:
        found.append(
            Problem(
                ("subnetCidr",),
                f"{config.nics} ranges of /{last.prefixlen} from "
                f"{config.subnet_cidr} run past 255.255.255.255; pick a lower range",
            )
        )
    return found


def _metadata_problems(config: GpuClusterConfig) -> list[Problem]:
    found = []
    for key in config.metadata:
        if key.lower() in RESERVED_METADATA:
            found.append(
                Problem(
                    ("metadata", key),
                    "is set by the program (OS Login, startup script, driver, Jupyter proxy); "
                    "remove it, or use the cluster's own field for it",
                )
            )
    if sum(len(k) + len(v) for k, v in config.metadata.items()) > 256 * 1024:
        found.append(Problem(("metadata",), "exceeds Compute Engine's 256 KB; trim it"))
    return found


def _mount_problems(config: GpuClusterConfig, buckets: list[str]) -> list[Problem]:
    found = []
    paths: dict[str, tuple[str, int]] = {}
    entries = [("gcsMounts", i, m.mount_path) for i, m in enumerate(config.gcs_mounts)] + [
        ("nfsShares", i, s.mount_path) for i, s in enumerate(config.nfs_shares)
    ]
    for key, i, path in entries:
        bad = _mount_path_problem(path)
        if bad:
            found.append(Problem((key, i, "mountPath"), bad))
            continue
        for other, (other_key, j) in paths.items():
            if path == other or path.startswith(other + "/") or other.startswith(path + "/"):
                found.append(
                    Problem(
                        (key, i, "mountPath"),
                        f"'{path}' overlaps {other_key}[{j}].mountPath '{other}'; every mount "
                        "needs its own, unnested path",
                    )
                )
                break
        else:
            paths[path] = (key, i)
    for i, mount in enumerate(config.gcs_mounts):
        if mount.bucket not in buckets and not BUCKET_NAME.fullmatch(mount.bucket):
            found.append(
                Problem(
                    ("gcsMounts", i, "bucket"),
                    f"'{mount.bucket}' is neither a bucket of ai-infra:buckets "
                    f"({', '.join(buckets) or 'none'}) nor a GCS bucket name",
                )
            )
    for i, share in enumerate(config.nfs_shares):
        low, high = FILESTORE_CAPACITY_GB[share.tier]
        if not low <= share.size_gb <= high:
            found.append(
                Problem(
                    ("nfsShares", i, "sizeGb"),
                    f"{share.tier} holds {low} to {high} GiB, not {share.size_gb}; set sizeGb in "
                    "that range or pick another tier",
                )
            )
    return found


def warnings(config: GpuClusterConfig) -> list[str]:
    """What is allowed but ill-advised, for `pulumi up` to print."""
    family = config.resolved_image_family
    return [END_OF_LIFE_FAMILIES[family]] if family in END_OF_LIFE_FAMILIES else []
