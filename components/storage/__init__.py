"""Storage for training data and checkpoints, one model for every system (`ai-infra:storage`):
buckets, Filestore shares and Managed Lustre instances, created or attached, mounted by name.
`stacks/` builds the instances with `build()` before the systems, the teams' volumes on GKE
with `build_team_volumes()` after it, checks them with `problems()`, and shows them with
`describe()`; systems check their `storage` lists with `mount_problems()` and write their
mounts from `StorageHandle` endpoints.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import pulumi

from catalog.storage import LUSTRE_TIERS
from components.base import Source
from components.buckets import BucketsHandle
from components.network import NetworkHandle
from components.storage.checks import (
    mount_problems,
    mounts_lustre,
    nested,
    problems,
    warnings,
)
from components.storage.config import (
    Storage,
    StorageConfig,
    StorageMount,
    Volume,
    VolumeConfig,
)
from components.storage.instances import (
    STORAGE_SERVICES,
    StorageArgs,
    StorageHandle,
    StorageInstances,
)
from components.storage.mounts import (
    Endpoint,
    TeamMount,
    gcsfuse_flags,
    network_storage_entry,
    team_mounts,
)
from components.storage.volumes import TeamVolumes, TeamVolumesArgs

__all__ = [
    "STORAGE_SERVICES",
    "Endpoint",
    "Storage",
    "StorageConfig",
    "StorageHandle",
    "StorageMount",
    "TeamMount",
    "TeamVolumes",
    "Volume",
    "VolumeConfig",
    "build",
    "build_team_volumes",
    "describe",
    "gcsfuse_flags",
    "mount_problems",
    "mounts_lustre",
    "nested",
    "network_storage_entry",
    "problems",
    "team_mounts",
    "warnings",
]


def build(
    storage: Storage,
    *,
    network: NetworkHandle,
    clients: Mapping[str, Sequence[str]],
    services: pulumi.ResourceOptions,
    source: Source,
) -> StorageHandle:
    """Private services access, the instances the stack creates and every volume's endpoint;
    an empty handle when `ai-infra:storage` has no volumes. `clients` gives the network tags
    of the VMs that mount each volume."""
    if not storage.config.volumes:
        return StorageHandle(storage=storage, endpoints={}, resources={})
    return StorageInstances(
        source("storage", "storage"),
        StorageArgs(storage=storage, network=network, clients=clients),
        services,
    ).handle


def build_team_volumes(
    handle: StorageHandle,
    *,
    namespaces: Mapping[str, pulumi.Resource],
    members: Mapping[str, str],
    buckets: BucketsHandle,
    kubernetes: pulumi.ProviderResource,
    source: Source,
) -> dict[str, TeamVolumes]:
    """Each granted team's PersistentVolumes, claims and bucket grants, as `storage-<team>`.
    `namespaces` and `members` give each team's namespace and Google service account member."""
    storage = handle.storage
    grants = storage.team_grants()
    return {
        team: TeamVolumes(
            source(f"storage-{team}", "storage", "volumes"),
            TeamVolumesArgs(
                storage=storage,
                team=team,
                grants=grants[team],
                endpoints=handle.endpoints,
                namespace=namespaces[team],
                member=members[team],
                buckets=buckets,
                waits_for=handle.resources,
            ),
            pulumi.ResourceOptions(providers=[kubernetes]),
        )
        for team in sorted(grants)
    }


def describe(
    storage: Storage, mounts: Mapping[str, Iterable[tuple[str, StorageMount]]]
) -> list[tuple[str, list[str]]]:
    """The plan's section: each volume with its kind, size, place and grants, and who mounts
    it where. `mounts` maps a volume to (who, mount) pairs of the systems' `storage` lists."""
    config = storage.config
    if not config.volumes:
        return []
    lines = []
    if config.private_service_range is not None:
        lines.append(f"  private services access: {config.private_service_range}")
    for volume in storage.volumes.values():
        lines.append(f"  {volume.name}: {_what(volume)}")
        grants = ", ".join(f"{t} {a}" for t, a in sorted(volume.config.teams.items()))
        if grants:
            owner = f" (owner {volume.config.owner})" if volume.config.owner else ""
            lines.append(f"    GKE teams{owner}: {grants}")
        for who, mount in mounts.get(volume.name, ()):
            mode = "ro" if mount.read_only else "rw"
            lines.append(f"    {who}: {mount.mount_path} ({mode})")
    return [("Storage", lines)]


def _what(volume: Volume) -> str:
    config = volume.config
    if config.bucket is not None:
        return f"bucket gs://{volume.instance}, Cloud Storage FUSE profile {config.profile}"
    if config.filestore is not None:
        spec = config.filestore
        return (
            f"Filestore {volume.instance} {spec.tier} {spec.capacity_gib:,} GiB in "
            f"{volume.location}, share /{volume.share}"
        )
    if config.lustre is not None:
        spec = config.lustre
        return (
            f"Managed Lustre {volume.instance} {spec.capacity_gib:,} GiB at "
            f"{LUSTRE_TIERS[spec.throughput].name} in {volume.location}, file system "
            f"{volume.filesystem}"
        )
    return f"existing {volume.kind} {volume.instance} in {volume.location}"
