"""A team's data in a JobSet, named as the stack names it: `--volume NAME` mounts at
`/data/NAME` either an `ai-infra:storage` volume granted to the team (through the claim the
stack made in its namespace: bucket, Filestore or Lustre) or an `ai-infra:buckets` entry the
team's own `buckets` grants (an inline Cloud Storage FUSE volume of the same bucket). A bucket
is granted to a team one way (components/storage/checks.py refuses both), and every bucket
mount carries the one set of gcsfuse options the storage model writes (`gke_mount_options`).

Each bucket's file cache is bounded (`GKE_FILE_CACHE_MIB`) and kept in the pod's
`gke-gcsfuse-cache` volume, which the driver's sidecar uses instead of its own emptyDir when
the pod declares it (gcs-fuse-csi-driver pkg/webhook/mutatingwebhook.go at 5fcdc04a): on local
SSD where the node's ephemeral storage is, in RAM where the caches take at most 1/8 of the
node's memory, else a sized emptyDir on the boot disk.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from catalog.storage import GKE_CACHE_MEMORY_SHARE, GKE_FILE_CACHE_MIB
from components.gke import TeamConfig
from components.storage import GCS_PV_ATTRIBUTES, gke_mount_options, team_mounts
from stacks.config import StackConfig
from workload.request import FlagError
from workload.target import Target

MOUNT_ROOT = "/data"
DRIVER = "gcsfuse.csi.storage.gke.io"
CACHE_VOLUME = "gke-gcsfuse-cache"
"""The volume name the driver's webhook takes as the sidecar's file cache (sidecar_spec.go
SidecarContainerCacheVolumeName at 5fcdc04a)."""
CACHE_HEADROOM_MIB = 1024
"""Room per mount beyond its cache's bound: the cache volume must be larger than the cache
(gcs-fuse-csi-driver docs/troubleshooting.md, "No space left on device for file cache")."""
SIDECAR_ANNOTATIONS = {
    "gke-gcsfuse/volumes": "true",
    # "0" lifts the sidecar's CPU and memory limits: a training pod owns its node, and a RAM
    # cache is charged to the sidecar ("Optimize Cloud Storage FUSE CSI driver for GKE
    # performance"; docs/troubleshooting.md).
    "gke-gcsfuse/cpu-limit": "0",
    "gke-gcsfuse/memory-limit": "0",
    # The cache lives in the sized `gke-gcsfuse-cache` volume, not the sidecar's emptyDir; a
    # finite limit here would also become the pod's ephemeral-storage limit, under which the
    # kubelet would count (and evict for) that volume (docs/troubleshooting.md).
    "gke-gcsfuse/ephemeral-storage-limit": "0",
}
GIB = 1024**3


@dataclass(frozen=True)
class Grant:
    """A name a team may mount in a job."""

    name: str
    kind: str
    """`gcs`, `filestore` or `lustre`."""
    read_only: bool
    claim: str | None = None
    """The claim in the team's namespace (`ai-infra:storage`); None for an inline bucket."""
    bucket: str | None = None
    """The GCS name of an `ai-infra:buckets` entry the team's `buckets` grants."""
    options: tuple[str, ...] = ()
    origin: str = ""


@dataclass(frozen=True)
class Mounts:
    """What a pod template needs for its storage."""

    volumes: list[dict[str, Any]] = field(default_factory=list)
    volume_mounts: list[dict[str, Any]] = field(default_factory=list)
    annotations: dict[str, str] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    """What is mounted where, for the command's report."""


def grants(config: StackConfig, team: TeamConfig) -> dict[str, Grant]:
    """Everything `team` may mount, by the stack's names; for a valid config (the storage
    checks refuse a bucket granted both ways, so a name is never both)."""
    found: dict[str, Grant] = {}
    volumes = config.resolved_storage.volumes
    for mount in team_mounts(config.resolved_storage, team.name):
        found[mount.volume] = Grant(
            mount.volume,
            mount.kind,
            mount.read_only,
            claim=mount.claim,
            bucket=volumes[mount.volume].instance if mount.kind == "gcs" else None,
            options=mount.mount_options,
            origin=f"ai-infra:storage volume, claim {mount.claim}",
        )
    names = config.bucket_names()
    for key, access in team.buckets.items():
        if key in found or key not in names:
            continue
        read_only = access == "read"
        found[key] = Grant(
            key,
            "gcs",
            read_only,
            bucket=names[key],
            options=tuple(gke_mount_options("training" if read_only else "checkpoint")),
            origin=f"team bucket gs://{names[key]}, {access}",
        )
    return found


def volume_problems(config: StackConfig, team: TeamConfig, names: list[str]) -> list[str]:
    """Why `names` cannot be mounted for `team`: names it is not granted, and repeats."""
    found = []
    granted = grants(config, team)
    for i, name in enumerate(names):
        if name in names[:i]:
            found.append(f"'{name}' is listed twice")
        elif name not in granted:
            found.append(
                f"team {team.name} is granted no volume or bucket '{name}' (it has: "
                f"{', '.join(sorted(granted)) or 'none'}); grant it in the volume's `teams` "
                "in ai-infra:storage (or the team's `buckets`)"
            )
    return found


def team_volumes(
    config: StackConfig, target: Target, names: list[str], *, host_network: bool
) -> Mounts:
    """The volumes, mounts and sidecar annotations of `names`; call it once `volume_problems`
    is empty."""
    granted = grants(config, target.team)
    volumes, mounts, lines = [], [], []
    for name in names:
        grant = granted[name]
        volume = f"data-{name}"
        volumes.append({"name": volume, **_source(grant, host_network=host_network)})
        path = f"{MOUNT_ROOT}/{name}"
        mounts.append({"name": volume, "mountPath": path, "readOnly": grant.read_only})
        mode = "read-only" if grant.read_only else "read-write"
        how = " inline, for the host network" if host_network and grant.claim else ""
        lines.append(f"{name} at {path}, {mode} ({grant.origin}{how})")
    buckets = sum(granted[n].kind == "gcs" for n in names)
    if not buckets:
        return Mounts(volumes, mounts, {}, lines)
    cache, where = cache_volume(target, buckets)
    lines.append(f"gcsfuse file cache: {GKE_FILE_CACHE_MIB} MiB per bucket, {where}")
    return Mounts([*volumes, cache], mounts, dict(SIDECAR_ANNOTATIONS), lines)


def _source(grant: Grant, *, host_network: bool) -> dict[str, Any]:
    """The claim; or the bucket inline with its PersistentVolume's attributes and options, for
    a team bucket or a host-network pod: such a pod authenticates as its own service account
    only with `hostNetworkPodKSA` (gcs-fuse-csi-driver node.go shouldPopulateIdentityProvider at
    5fcdc04a), which the stack's PersistentVolumes do not carry (their CSI source is immutable
    once created). The team's object role on the bucket is the same either way."""
    if grant.claim is not None and not (host_network and grant.kind == "gcs"):
        return {"persistentVolumeClaim": {"claimName": grant.claim, "readOnly": grant.read_only}}
    attributes = {
        "bucketName": grant.bucket,
        "mountOptions": ",".join(grant.options),
        **GCS_PV_ATTRIBUTES,
    }
    if host_network:
        attributes["hostNetworkPodKSA"] = "true"
    return {"csi": {"driver": DRIVER, "readOnly": grant.read_only, "volumeAttributes": attributes}}


def cache_volume(target: Target, buckets: int) -> tuple[dict[str, Any], str]:
    """The pod's `gke-gcsfuse-cache` volume for `buckets` mounts, and where it is. The driver's
    docs recommend local SSD where the machine has it (docs/troubleshooting.md)."""
    mib = buckets * (GKE_FILE_CACHE_MIB + CACHE_HEADROOM_MIB)
    size = f"{mib}Mi"
    gib = mib * 1024**2 / GIB
    if target.local_ssd:
        return _empty_dir(size), f"{size} on the node's local SSD"
    node = target.node
    if node is not None and mib * 1024**2 * GKE_CACHE_MEMORY_SHARE <= node.memory_bytes:
        return _empty_dir(size, memory=True), f"{size} in RAM (tmpfs)"
    disk = target.boot_disk_gib
    if disk is not None and gib <= disk / 2:
        return _empty_dir(size), f"{size} on the node's {disk} GiB boot disk"
    raise FlagError(
        "--volume",
        f"{buckets} bucket mounts need {gib:.0f} GiB of file cache, more than 1/"
        f"{GKE_CACHE_MEMORY_SHARE} of a {target.machine_type} node's memory or half its boot "
        "disk; mount fewer buckets in one job",
    )


def _empty_dir(size: str, *, memory: bool = False) -> dict[str, Any]:
    source: dict[str, Any] = {"medium": "Memory"} if memory else {}
    return {"name": CACHE_VOLUME, "emptyDir": {**source, "sizeLimit": size}}
