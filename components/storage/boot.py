"""Storage as named steps of a VM's startup script (`components.startup`): local SSD scratch
(RAID0 of the machine's bundled NVMe disks) and mounts of `ai-infra:storage` volumes (gcsfuse
with the volume's profile, Filestore over NFS, Managed Lustre with its client). A system puts
`LIBRARY` in its script and renders these steps with `block()`.

Non-goals: Slurm (Slurm-GCP mounts its `network_storage` entries itself) and GKE (CSI drivers).
"""

from __future__ import annotations

from dataclasses import dataclass

from components.startup import Block, line
from components.storage.config import Kind

GCSFUSE_VERSION = "3.11.2"
"""Cloud Storage FUSE from Google's apt repository, installed where the image lacks it (latest
release tag v3.11.2 in GoogleCloudPlatform/gcsfuse)."""
GOOGLE_APT_KEY = "https://packages.cloud.google.com/apt/doc/apt-key.gpg"
SCRATCH_PATH = "/mnt/localssd"
"""Where local SSD scratch is mounted: Cluster Toolkit v1.95.0's `setup-raid.yml` (and its A3
blueprints' `localssd_mountpoint`) use this path, so scripts written for those run here."""
SCRATCH_ARRAY = "/dev/md/localssd"
"""The RAID0 array, named as Toolkit's `setup-raid.yml` names it (`--name=localssd`)."""
LOCAL_SSD_DISKS = "/dev/disk/by-id/google-local-nvme-ssd-"
"""The bundled local SSDs as the guest environment's udev rules name them (Compute Engine, "Add
a Local SSD": `google-local-nvme-ssd-N`)."""
GCSFUSE_CACHE = f"{SCRATCH_PATH}/gcsfuse-cache"
"""The file caches of buckets, one directory per volume, on local SSD: Cloud Storage FUSE
"Overview of caching" names the local SSD bundled with a2-ultragpu and a3-highgpu as the
cache's place, and "Use Cloud Storage FUSE file caching" enables the cache by `cache-dir`."""
LUSTRE_REPO = "https://us-apt.pkg.dev/projects/lustre-client-binaries"
"""Managed Lustre's client packages for Ubuntu, `lustre-client-ubuntu-<codename>` (Cluster
Toolkit v1.95.0 modules/file-system/managed-lustre/scripts/install-managed-lustre-client.sh,
which offers them for Ubuntu 22.04 only)."""
AR_SIGNING_KEY = "https://us-apt.pkg.dev/doc/repo-signing-key.gpg"
"""The key of Artifact Registry's apt repositories (the gIB plugin's, Lustre's client)."""
NFS_OPTIONS = "hard,timeo=600,retrans=3"
LUSTRE_OPTIONS = "defaults,_netdev"
"""As Toolkit's managed-lustre module mounts it (`mount_options` default)."""


@dataclass(frozen=True)
class LocalScratch:
    """The machine's `disks` bundled local SSDs as one ext4 file system at `path`: RAID0 when
    there are several (mdadm), formatted only when it holds no file system. The script runs on
    every boot, so a reboot re-assembles the array and mounts it again; a stop or host event
    that discards local SSD data gets a new array and file system."""

    disks: int
    path: str = SCRATCH_PATH


@dataclass(frozen=True)
class VolumeMount:
    """A volume of `ai-infra:storage`: `source` is what mount takes (`IP:/share`, `IP@tcp:/fs`,
    or a bucket), `flags` a bucket's gcsfuse flags (its profile, and the file cache where there
    is local SSD)."""

    volume: str
    kind: Kind
    source: str
    path: str
    read_only: bool = False
    flags: tuple[str, ...] = ()


StorageStep = LocalScratch | VolumeMount

LIBRARY = f"""\
google_apt_key() {{
  local key="$ROOT/usr/share/keyrings/cloud.google.gpg"
  [[ -s $key ]] || curl -fsSL "{GOOGLE_APT_KEY}" | gpg --dearmor -o "$key"
}}

# artifact_registry_key: the key that signs Artifact Registry's apt repositories.
artifact_registry_key() {{
  local key="$ROOT/usr/share/keyrings/artifact-registry.gpg"
  [[ -s $key ]] || curl -fsSL "{AR_SIGNING_KEY}" | gpg --dearmor -o "$key"
}}

install_gcsfuse() {{
  local codename
  codename=$(. "$ROOT/etc/os-release" && echo "$VERSION_CODENAME") || return 1
  google_apt_key || return 1
  apt_source gcsfuse "deb [signed-by=/usr/share/keyrings/cloud.google.gpg] \\
https://packages.cloud.google.com/apt gcsfuse-$codename main" || return 1
  apt_install "gcsfuse=$1"
}}

# mount_gcs BUCKET PATH ro|rw VERSION [FLAG...]: FLAGs are a volume's profile settings.
mount_gcs() {{
  local bucket=$1 path=$2 mode=$3 version=$4
  shift 4
  if is_mounted "$path"; then
    log "$path is mounted already"
    return 0
  fi
  if ! command -v gcsfuse >/dev/null; then
    install_gcsfuse "$version" || return 1
  fi
  local options=(-o allow_other --file-mode=666 --dir-mode=777)
  if [[ $mode == ro ]]; then options=(-o allow_other,ro --file-mode=444 --dir-mode=555); fi
  local flag
  for flag in "$@"; do
    if [[ $flag == --cache-dir=* ]]; then mkdir -p "$ROOT${{flag#--cache-dir=}}" || return 1; fi
  done
  mkdir -p "$ROOT$path" && gcsfuse --implicit-dirs "${{options[@]}}" "$@" "$bucket" "$ROOT$path"
}}

# mount_nfs SERVER SHARE PATH [ro]
mount_nfs() {{
  if is_mounted "$3"; then
    log "$3 is mounted already"
    return 0
  fi
  if ! command -v mount.nfs >/dev/null; then
    apt_install nfs-common || return 1
  fi
  mkdir -p "$ROOT$3" &&
    retry 10 32 mount -t nfs -o "{NFS_OPTIONS}${{4:+,$4}}" "$1:/$2" "$ROOT$3"
}}

# install_lustre: the Managed Lustre client for the running kernel, where it is missing.
install_lustre() {{
  if grep -qw lustre "$ROOT/proc/filesystems" 2>/dev/null || modprobe lustre 2>/dev/null; then
    return 0
  fi
  local codename
  codename=$(. "$ROOT/etc/os-release" && echo "$VERSION_CODENAME") || return 1
  artifact_registry_key || return 1
  apt_source lustre-client "deb [signed-by=/usr/share/keyrings/artifact-registry.gpg] \\
{LUSTRE_REPO} lustre-client-ubuntu-$codename main" || return 1
  apt_install "lustre-client-modules-$(uname -r)" lustre-client-utils && modprobe lustre
}}

# mount_lustre SOURCE PATH [ro]
mount_lustre() {{
  if is_mounted "$2"; then
    log "$2 is mounted already"
    return 0
  fi
  install_lustre || return 1
  mkdir -p "$ROOT$2" &&
    retry 10 32 mount -t lustre -o "{LUSTRE_OPTIONS}${{3:+,$3}}" "$1" "$ROOT$2"
}}

# local_scratch DISKS PATH: RAID0 of the bundled local SSDs (one disk alone as it is), ext4
# made only where there is no file system. An array whose members carry its superblock (a
# reboot) is assembled, never created anew.
local_scratch() {{
  local count=$1 path=$2 device array="$ROOT{SCRATCH_ARRAY}" disks=()
  if is_mounted "$path"; then
    log "$path is mounted already"
    return 0
  fi
  retry 10 8 test -e "$ROOT{LOCAL_SSD_DISKS}$((count - 1))" || {{
    log "expected $count local SSDs under {LOCAL_SSD_DISKS}*"
    return 1
  }}
  disks=("$ROOT{LOCAL_SSD_DISKS}"*)
  device=${{disks[0]}}
  if ((${{#disks[@]}} > 1)); then
    device=$array
    if [[ ! -e $array ]]; then
      if ! command -v mdadm >/dev/null; then apt_install mdadm || return 1; fi
      if ! mdadm --assemble "$array" "${{disks[@]}}" 2>/dev/null; then
        log "creating the RAID0 array of ${{#disks[@]}} local SSDs"
        mdadm --create "$array" --name=localssd --homehost=any --level=0 --run \\
          --raid-devices="${{#disks[@]}}" "${{disks[@]}}" || return 1
      fi
    fi
  fi
  if ! blkid "$device" >/dev/null; then
    log "formatting local SSD scratch $device"
    mkfs.ext4 -q -m 0 -E lazy_itable_init=0,lazy_journal_init=0,discard "$device" || return 1
  fi
  mkdir -p "$ROOT$path" && mount -o discard,defaults,nofail "$device" "$ROOT$path" &&
    chmod 1777 "$ROOT$path"
}}
"""


def block(step: StorageStep) -> Block:
    """A step's lines under its name (`local SSD /mnt/localssd`, `gcs data /data`)."""
    match step:
        case LocalScratch(disks, path):
            return Block(f"local SSD {path}", (f"local_scratch {line(disks, path)} || fail",))
        case VolumeMount(volume, kind, source, path, read_only, flags):
            name = f"{kind} {volume} {path}"
            ro = "ro" if read_only else ""
            if kind == "gcs":
                mode = "ro" if read_only else "rw"
                args = line(source, path, mode, GCSFUSE_VERSION, *flags)
                return Block(name, (f"mount_gcs {args} || fail",))
            if kind == "filestore":
                server, _, share = source.partition(":/")
                args = line(server, share, path, *([ro] if ro else []))
                return Block(name, (f"mount_nfs {args} || fail",))
            args = line(source, path, *([ro] if ro else []))
            return Block(name, (f"mount_lustre {args} || fail",))
