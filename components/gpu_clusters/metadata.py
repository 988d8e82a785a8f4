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
from components.startup import GUEST_ATTRIBUTES_METADATA

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
) -> list[boot.Step]:
    """Ops Agent first (it runs alongside the rest), then the data disk and mounts, the NCCL
    stack, Ray, SSH among the VMs, and the user's command last, so that it finds its data
    and its cluster.
    `gcs_names` maps `ai-infra:buckets` names to GCS names; other buckets are named in full."""
    found: list[boot.Step] = []
    if config.ops_agent:
        found.append(boot.OpsAgent())
    if config.data_disk is not None:
        found.append(boot.DataDisk(DATA_DEVICE, config.data_disk.mount_path))
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


def program_metadata(config: GpuClusterConfig) -> dict[str, str]:
    """The user's keys and the program's, but the startup script. Guest attributes carry
    the startup script's readiness signal."""
    metadata = {
        **config.metadata,
        "enable-oslogin": "TRUE",
        "block-project-ssh-keys": "TRUE",
        **GUEST_ATTRIBUTES_METADATA,
    }
    if config.dlvm:
        metadata["install-nvidia-driver"] = "True"
    if config.jupyter_proxy:
        # Deep Learning VM's proxy agent: URLs for whoever holds editor on the project.
        metadata["proxy-mode"] = "project_editors"
    return metadata


def size_problems(
    config: GpuClusterConfig, *, group: str, zone: str, gcs_names: Mapping[str, str]
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
