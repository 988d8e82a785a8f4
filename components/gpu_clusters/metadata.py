"""The instance metadata of a GPU cluster's VMs: the program's keys, the user's, and the
startup script rendered from the config. The template takes it with the Filestore addresses
once they are known; the checks build it with the longest addresses there are, to hold it to
Compute Engine's size limits before anything is registered.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from components.base import Problem
from components.gpu_clusters import boot, gpudirect
from components.gpu_clusters.config import GpuClusterConfig
from components.identity import OS_LOGIN_METADATA
from components.startup import GUEST_ATTRIBUTES_METADATA
from components.storage import (
    GCSFUSE_CACHE,
    Endpoint,
    LocalScratch,
    Storage,
    VolumeMount,
    gcsfuse_flags,
)

DATA_DEVICE = "data"
"""The device name of the data disk in the template (`/dev/disk/by-id/google-data`)."""
NFS_SHARE = "share"
"""The one file share of each Filestore instance (Basic tiers allow 16 characters)."""
VALUE_MAX_BYTES = 256 * 1024
TOTAL_MAX_BYTES = 512 * 1024
"""Compute Engine metadata: each value at most 256 KiB, all keys and values together at most
512 KiB, counted in bytes (google-cloud-compute 1.57.0 `Metadata.items`, `Items.value`)."""
LONGEST_IP = "255.255.255.255"


def steps(
    config: GpuClusterConfig,
    *,
    group: str,
    zone: str,
    gcs_names: Mapping[str, str],
    filestore_ips: Sequence[str],
    storage: Storage,
    endpoints: Mapping[str, Endpoint],
) -> list[boot.Step]:
    """Ops Agent first (it runs alongside the rest), then the data disk, local SSD scratch
    (before the buckets whose file cache it holds) and mounts, the NCCL stack, Ray, SSH among
    the VMs, and the user's command last, so that it finds its data and its cluster.
    `gcs_names` maps `ai-infra:buckets` names to GCS names; other buckets are named in full.
    `endpoints` gives where each volume of the `storage` list is served."""
    found: list[boot.Step] = []
    if config.ops_agent:
        found.append(boot.OpsAgent())
    if config.data_disk is not None:
        found.append(boot.DataDisk(DATA_DEVICE, config.data_disk.mount_path))
    if config.scratch_disks:
        found.append(LocalScratch(config.scratch_disks))
    found += volume_mounts(config, storage, endpoints)
    found += [
        boot.GcsMount(gcs_names.get(m.bucket, m.bucket), m.mount_path, m.read_only)
        for m in config.gcs_mounts
    ]
    found += [
        boot.NfsMount(ip, NFS_SHARE, share.mount_path)
        for share, ip in zip(config.nfs_shares, filestore_ips, strict=True)
    ]
    layout = config.nic_layout
    if config.gpu_direct and layout is not None:
        if layout.rdma:
            found.append(boot.Gib())
        else:
            found.append(boot.GpuDirect(gpudirect.STACKS[layout.transport]))
    if config.orchestrator == "ray":
        found.append(boot.Ray(group, zone, config.gpu_count))
    if config.ssh_among_vms:
        found.append(boot.HostSsh(group, zone, config.gpu_count))
    if config.startup_command:
        found.append(boot.Command(config.startup_command))
    return found


def volume_mounts(
    config: GpuClusterConfig, storage: Storage, endpoints: Mapping[str, Endpoint]
) -> list[VolumeMount]:
    """The `storage` list as mount steps; a bucket's file cache goes on local SSD scratch,
    one directory per volume, and is left off without scratch (the boot disk is the image's)."""
    found = []
    for mount in config.storage:
        endpoint = endpoints.get(mount.volume)
        if endpoint is None:  # an unknown name, which the checks refuse at its path
            continue
        flags: list[str] = []
        if endpoint.kind == "gcs":
            profile = storage.volumes[mount.volume].config.profile
            cache = f"{GCSFUSE_CACHE}/{mount.volume}" if config.scratch_disks else None
            # mount_gcs always passes --implicit-dirs.
            flags = [
                f for f in gcsfuse_flags(profile, cache_dir=cache) if f != "--implicit-dirs=true"
            ]
        found.append(
            VolumeMount(
                mount.volume,
                endpoint.kind,
                endpoint.source,
                mount.mount_path,
                mount.read_only,
                tuple(flags),
            )
        )
    return found


def longest_endpoints(storage: Storage) -> dict[str, Endpoint]:
    """Every volume served from the longest address there is, for the size checks; an
    existing Lustre instance's file system name (up to 8 characters) is read at `pulumi up`."""
    found = {}
    for volume in storage.volumes.values():
        match volume.kind:
            case "gcs":
                found[volume.name] = Endpoint("gcs", "", volume.instance, 0)
            case "filestore":
                found[volume.name] = Endpoint("filestore", LONGEST_IP, f"/{volume.share}", 0)
            case "lustre":
                remote = f"/{volume.filesystem or 'x' * 8}"
                found[volume.name] = Endpoint("lustre", f"{LONGEST_IP}@tcp", remote, 0)
    return found


def program_metadata(config: GpuClusterConfig) -> dict[str, str]:
    """The user's keys and the program's, but the startup script. Guest attributes carry
    the startup script's readiness signal."""
    metadata = {
        **config.metadata,
        **OS_LOGIN_METADATA,
        **GUEST_ATTRIBUTES_METADATA,
    }
    if config.dlvm:
        metadata["install-nvidia-driver"] = "True"
    if config.jupyter_proxy:
        # Deep Learning VM's proxy agent: URLs for whoever holds editor on the project.
        metadata["proxy-mode"] = "project_editors"
    return metadata


def size_problems(
    config: GpuClusterConfig,
    *,
    group: str,
    zone: str,
    gcs_names: Mapping[str, str],
    storage: Storage,
) -> list[Problem]:
    """The metadata against Compute Engine's limits, in UTF-8 bytes, with the startup script
    rendered as it will be (the longest Filestore addresses standing in for the real ones)."""
    script = boot.render(
        steps(
            config,
            group=group,
            zone=zone,
            gcs_names=gcs_names,
            filestore_ips=[LONGEST_IP] * len(config.nfs_shares),
            storage=storage,
            endpoints=longest_endpoints(storage),
        )
    )
    metadata = {**program_metadata(config), "startup-script": script}
    found = []
    for key, value in metadata.items():
        size = len(value.encode())
        if size <= VALUE_MAX_BYTES:
            continue
        if key == "startup-script":
            found.append(
                Problem(
                    ("startupCommand",),
                    f"the startup script it ends would be {size} bytes, over Compute Engine's "
                    f"{VALUE_MAX_BYTES} per metadata value; put a script in a bucket mounted "
                    "with gcsMounts and run that",
                )
            )
        else:
            found.append(
                Problem(
                    ("metadata", key),
                    f"is {size} bytes, over Compute Engine's {VALUE_MAX_BYTES} per value; "
                    "keep large data in a bucket",
                )
            )
    total = sum(len(k.encode()) + len(v.encode()) for k, v in metadata.items())
    if total > TOTAL_MAX_BYTES:
        found.append(
            Problem(
                ("metadata",),
                f"with the program's own keys and the {len(script.encode())}-byte startup "
                f"script, the VMs' metadata would be {total} bytes, over Compute Engine's "
                f"{TOTAL_MAX_BYTES}; trim metadata or startupCommand",
            )
        )
    return found
