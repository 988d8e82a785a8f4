"""A volume as its clients reach it (`Endpoint`), and each client's way of writing a mount of
it, from that one value: Slurm-GCP's `network_storage` entries, GKE's Cloud Storage FUSE mount
options, the gcsfuse flags of a VM's boot script, and a team's mounts for its workloads.
"""

from __future__ import annotations

from dataclasses import dataclass

from catalog.storage import (
    GCSFUSE_FILE_CACHE,
    GCSFUSE_FLAGS,
    GCSFUSE_PROFILES,
    GKE_CHECKPOINT_READ_AHEAD_KB,
    GKE_FILE_CACHE_MIB,
)
from components.storage.config import Access, Kind, Profile, Storage

LUSTRE_NET = "@tcp"
"""The LNet network of a Managed Lustre address (its `mountPoint` is `IP@tcp:/FILESYSTEM`)."""
NFS_OPTIONS = "defaults,_netdev"
"""Mount options of Cluster Toolkit v1.95.0's filestore and managed-lustre modules
(`mount_options` defaults)."""
GCSFUSE_OPTIONS = "defaults,_netdev,implicit_dirs"
"""Mount options of Cluster Toolkit v1.95.0's cloud-storage-bucket module (`mount_options`
default)."""


@dataclass(frozen=True)
class Endpoint:
    """Where a volume is served: `server` is a Filestore IP or a Lustre `IP@tcp`, empty for a
    bucket; `remote` the share (`/share`), the file system (`/fs`) or the bucket's name."""

    kind: Kind
    server: str
    remote: str
    capacity_gib: int

    @property
    def address(self) -> str:
        """The server's IP, without Lustre's network."""
        return self.server.removesuffix(LUSTRE_NET)

    @property
    def source(self) -> str:
        """What `mount` takes: `IP:/share`, `IP@tcp:/fs`, or the bucket."""
        return self.remote if self.kind == "gcs" else f"{self.server}:{self.remote}"


def lustre_endpoint(mount_point: str, capacity_gib: int) -> Endpoint:
    """A Managed Lustre instance from its `mountPoint`, `IP@tcp:/FILESYSTEM`, split as Cluster
    Toolkit's managed-lustre module splits it."""
    server, _, remote = mount_point.partition(":")
    return Endpoint("lustre", server, remote, capacity_gib)


def gcsfuse_settings(profile: Profile, *, file_cache: bool) -> list[tuple[str, str]]:
    """A profile's gcsfuse settings, with the file cache where there is room for it."""
    settings = list(GCSFUSE_PROFILES[profile].settings)
    return settings + list(GCSFUSE_FILE_CACHE) if file_cache else settings


def gke_mount_options(profile: Profile) -> list[str]:
    """The mount options of a bucket for GKE's Cloud Storage FUSE driver, one set for a
    PersistentVolume's `mountOptions` and an inline volume's `mountOptions` attribute; the
    driver turns `a:b:value` into gcsfuse's config file (gcs-fuse-csi-driver
    sidecar_mounter_config.go). The file cache is bounded to `GKE_FILE_CACHE_MIB`, and lives in
    the cache volume the workload sizes for it (`gke-gcsfuse-cache`)."""
    bounded = {"file-cache.max-size-mb": str(GKE_FILE_CACHE_MIB)}
    options = [
        f"{path.replace('.', ':')}:{bounded.get(path, value)}"
        for path, value in gcsfuse_settings(profile, file_cache=True)
    ]
    if profile == "checkpoint":
        options.append(f"read_ahead_kb={GKE_CHECKPOINT_READ_AHEAD_KB}")
    return options


def gcsfuse_flags(profile: Profile, *, cache_dir: str | None) -> list[str]:
    """gcsfuse's command-line flags for a profile; with `cache_dir` (local SSD) the file cache
    too."""
    flags = [
        f"--{GCSFUSE_FLAGS[path]}={value}"
        for path, value in gcsfuse_settings(profile, file_cache=cache_dir is not None)
    ]
    return flags + ([f"--cache-dir={cache_dir}"] if cache_dir else [])


def network_storage_entry(
    endpoint: Endpoint, *, path: str, read_only: bool, profile: Profile
) -> dict[str, str]:
    """A Slurm-GCP `network_storage` entry, as Cluster Toolkit v1.95.0's file-system modules
    output it: filestore (`server_ip` its IP, `remote_mount` `/share`, nfs), managed-lustre
    (`IP@tcp`, `/FILESYSTEM`, lustre) and cloud-storage-bucket (`server_ip` empty, the bucket,
    gcsfuse). A bucket's options add the profile's settings as fstab options, which gcsfuse's
    mount helper turns back into flags (tools/mount_gcsfuse makeGcsfuseArgs), and
    `allow_other` so that users other than root read it."""
    if endpoint.kind == "gcs":
        flags = [
            f"{GCSFUSE_FLAGS[p].replace('-', '_')}={v}"
            for p, v in gcsfuse_settings(profile, file_cache=False)
            if p != "implicit-dirs"
        ]
        modes = "file_mode=444,dir_mode=555" if read_only else "file_mode=666,dir_mode=777"
        options = ",".join([GCSFUSE_OPTIONS, *flags, "allow_other", modes])
        fs_type = "gcsfuse"
    else:
        options = NFS_OPTIONS
        fs_type = "nfs" if endpoint.kind == "filestore" else "lustre"
    return {
        "server_ip": endpoint.server,
        "remote_mount": endpoint.remote,
        "local_mount": path,
        "fs_type": fs_type,
        "mount_options": options + (",ro" if read_only else ""),
    }


@dataclass(frozen=True)
class TeamMount:
    """A volume as a team's workloads mount it: the claim in the team's namespace, whether it
    is read-only, and for a bucket the Cloud Storage FUSE options (also the PersistentVolume's,
    for workloads that mount the bucket inline with the CSI driver)."""

    volume: str
    kind: Kind
    claim: str
    read_only: bool
    mount_options: tuple[str, ...]


def team_mounts(storage: Storage, team: str) -> list[TeamMount]:
    """Every volume granted to `team`, as its jobs mount it; for a valid config."""
    grants: dict[str, Access] = storage.team_grants().get(team, {})
    found = []
    for name, access in sorted(grants.items()):
        volume = storage.volumes[name]
        options = gke_mount_options(volume.config.profile) if volume.kind == "gcs" else []
        found.append(
            TeamMount(name, volume.kind, claim_name(name), access == "read", tuple(options))
        )
    return found


def claim_name(volume: str) -> str:
    """The PersistentVolumeClaim of a volume in each granted team's namespace."""
    return volume


def volume_name(team: str, volume: str) -> str:
    """The PersistentVolume of a volume for one team: `<team>.<volume>`, both DNS labels, so
    two pairs never share a name (PersistentVolume names are DNS subdomains)."""
    return f"{team}.{volume}"
