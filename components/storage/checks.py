"""The problems of `ai-infra:storage` and of every system's mounts of it: one kind per volume,
capacities on the service's steps, zones that offer the service, file system names GKE can tell
apart, grants to teams that exist (and no team writing another's data unless said), a private
services range that holds what it serves and overlaps nothing; and, for each system's
`storage` list, mounts of known volumes at paths of their own outside the OS.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from catalog.storage import (
    FILESTORE_BLOCK_PREFIX,
    FILESTORE_TIERS,
    LUSTRE_BLOCK_PREFIX,
    LUSTRE_TIERS,
    lustre_zone_problem,
)
from components.base import Problem, duplicate_names
from components.locations import zone_problem
from components.storage.config import Storage, StorageMount, VolumeConfig
from components.types import REGION, shadowed_dir


def problems(
    storage: Storage,
    *,
    teams: Sequence[str],
    team_buckets: Mapping[str, Iterable[str]],
    gcs_fuse_driver: bool,
    ranges: Mapping[str, str],
) -> list[Problem]:
    """Problems of `ai-infra:storage`, at paths under it. `teams` are the `ai-infra:teams`
    names, `team_buckets` what each lists in its own `buckets`; `ranges` every other range of
    the stack by where it is written (`network.subnetCidr`)."""
    config = storage.config
    found = [
        p.under("volumes") for p in duplicate_names([v.name for v in config.volumes], "volumes")
    ]
    # Made once, so that each grant is a lookup, not a pass over every team's list.
    own_buckets = {team: set(named) for team, named in team_buckets.items()}
    for i, volume in enumerate(config.volumes):
        found += [p.under("volumes", i) for p in _volume_problems(volume, storage, teams)]
        found += [
            p.under("volumes", i) for p in _grant_problems(volume, teams, own_buckets, storage)
        ]
        if volume.kind == "gcs" and volume.teams and not gcs_fuse_driver:
            found.append(
                Problem(
                    ("volumes", i, "teams"),
                    "teams mount buckets through GKE's Cloud Storage FUSE CSI driver, which "
                    "cluster.gcsFuseCsiDriver turns off; turn it on or grant no team a bucket",
                )
            )
    found += _filesystem_problems(storage)
    found += _range_problems(storage, ranges)
    return found


def _volume_problems(volume: VolumeConfig, storage: Storage, teams: Sequence[str]) -> list[Problem]:
    sources = volume.sources
    if len(sources) != 1:
        said = f"sets {', '.join(sources)}" if sources else "sets none"
        return [
            Problem(
                (),
                f"a volume is exactly one of bucket, filestore, lustre, existingFilestore or "
                f"existingLustre; this one {said}",
            )
        ]
    found = []
    region = storage.context.region
    if "profile" in volume.model_fields_set and volume.kind != "gcs":
        found.append(
            Problem(
                ("profile",),
                "is how Cloud Storage FUSE caches a bucket; a file system takes none: remove it",
            )
        )
    if volume.filestore is not None:
        spec = volume.filestore
        if problem := FILESTORE_TIERS[spec.tier].capacity_problem(spec.capacity_gib):
            found.append(Problem(("filestore", "capacityGib"), problem))
        zone = storage.context.zone_of(spec.zone)
        if problem := zone_problem(zone, region):
            found.append(Problem(("filestore", "zone"), problem))
    if volume.lustre is not None:
        spec = volume.lustre
        if problem := LUSTRE_TIERS[spec.throughput].capacity_problem(spec.capacity_gib):
            found.append(Problem(("lustre", "capacityGib"), problem))
        zone = storage.context.zone_of(spec.zone)
        problem = zone_problem(zone, region)
        if problem is None and not spec.allow_unlisted_zone:
            problem = lustre_zone_problem(zone)
        if problem is not None:
            said = "" if spec.zone is not None else f"gcp:zone {zone}: "
            found.append(Problem(("lustre", "zone"), said + problem))
    if volume.owner is not None and volume.owner not in teams:
        found.append(Problem(("owner",), _unknown_team(volume.owner, teams)))
    return found + _attached_problems(volume, storage)


def _attached_problems(volume: VolumeConfig, storage: Storage) -> list[Problem]:
    """A bucket outside the stack named as Cloud Storage names buckets, and an existing Lustre
    instance located by its zone."""
    found = []
    bucket = volume.bucket
    problem = None
    if bucket is not None and bucket not in storage.bucket_names:
        problem = bucket_name_problem(bucket)
    if problem is not None:
        found.append(Problem(("bucket",), problem))
    location = volume.existing_lustre.location if volume.existing_lustre else None
    if location is not None and re.fullmatch(REGION, location):
        found.append(
            Problem(
                ("existingLustre", "location"),
                f"{location} is a region; a Managed Lustre instance lives in one zone (its "
                f"name is projects/*/locations/ZONE/instances/*): give its zone, e.g. "
                f"{location}-a",
            )
        )
    return found


def bucket_name_problem(name: str) -> str | None:
    """Why Cloud Storage refuses a bucket of this name, or None (Cloud Storage "Bucket naming
    requirements": 3 to 63 characters, or up to 222 with dots and at most 63 between them;
    not an IP address; not starting with `goog` nor containing `google`; no `..`, `-.`, `.-`)."""
    parts = name.split(".")
    if len(name) > 222 or (len(parts) == 1 and len(name) > 63):
        return f"'{name}' is longer than Cloud Storage allows (63 characters, 222 with dots)"
    if any(not part or len(part) > 63 for part in parts):
        return f"'{name}' has an empty or longer than 63-character part between dots"
    if any(part.startswith("-") or part.endswith("-") for part in parts):
        return f"'{name}' has a '-' next to a dot, which Cloud Storage refuses"
    if len(parts) == 4 and all(part.isdigit() for part in parts):
        return f"'{name}' is an IP address, which Cloud Storage refuses as a bucket name"
    if name.startswith("goog") or "google" in name:
        return f"'{name}' starts with 'goog' or contains 'google', which Cloud Storage refuses"
    return None


def _unknown_team(team: str, teams: Sequence[str]) -> str:
    return (
        f"no team named '{team}' in ai-infra:teams (known: {', '.join(teams) or 'none'}); "
        "name one, or onboard the team first"
    )


def _grant_problems(
    volume: VolumeConfig,
    teams: Sequence[str],
    team_buckets: Mapping[str, set[str]],
    storage: Storage,
) -> list[Problem]:
    """Grants to teams that exist, once per bucket, and no team writing what is not its own
    unless `sharedWrite` says so."""
    found = []
    for team in volume.teams:
        if team not in teams:
            found.append(Problem(("teams", team), _unknown_team(team, teams)))
    if volume.bucket is not None and volume.bucket in storage.bucket_names:
        for team in volume.teams:
            if volume.bucket in team_buckets.get(team, set()):
                found.append(
                    Problem(
                        ("teams", team),
                        f"team {team} also lists bucket '{volume.bucket}' in its own buckets; "
                        "grant it in one place: remove it there, this grant gives the access "
                        "and the volume",
                    )
                )
    if volume.shared_write:
        return found
    writers = [team for team, access in volume.teams.items() if access == "write"]
    if volume.owner is not None:
        found += [
            Problem(
                ("teams", team),
                f"write access to team {volume.owner}'s volume: another team could overwrite "
                f"its data (checkpoints); grant read, or set sharedWrite: true to say it is "
                "meant",
            )
            for team in writers
            if team != volume.owner
        ]
    elif len(writers) > 1:
        found.append(
            Problem(
                ("teams",),
                f"{' and '.join(writers)} may all write it, and one team's job could overwrite "
                "another's data; name its owner (the others read), or set sharedWrite: true to "
                "say it is shared scratch",
            )
        )
    return found


def _filesystem_problems(storage: Storage) -> list[Problem]:
    """Lustre file system names the stack creates, unique: GKE's driver mounts no two file
    systems of one name on a node (lustre-csi-driver node.go hasMountWithSameFSName)."""
    first: dict[str, str] = {}
    found = []
    for i, volume in enumerate(storage.config.volumes):
        if volume.lustre is None or len(volume.sources) != 1:
            continue
        name = storage.volumes[volume.name].filesystem if volume.name in storage.volumes else ""
        if name.lower() in first:
            found.append(
                Problem(
                    ("volumes", i, "lustre", "filesystem"),
                    f"file system name '{name}' is also {first[name.lower()]}'s; nodes cannot "
                    "mount both, so set filesystem to a name of its own",
                )
            )
        first.setdefault(name.lower(), volume.name)
    return found


def _range_problems(storage: Storage, ranges: Mapping[str, str]) -> list[Problem]:
    """The private services range: there when something needs it, holding a block for every
    instance, and disjoint from every other range of the stack."""
    config = storage.config
    path = ("privateServiceRange",)
    if config.private_service_range is None:
        if storage.needs_service_access:
            names = ", ".join(v.name for v in storage.created)
            return [
                Problem(
                    path,
                    f"{names} reach the VPC through private services access, which needs a "
                    "range of its own: set privateServiceRange, e.g. 10.200.0.0/20, disjoint "
                    "from every other range of the stack",
                )
            ]
        return []
    if not storage.needs_service_access:
        return [
            Problem(
                path,
                "no volume here is a Filestore share or Lustre instance the stack creates, so "
                "nothing uses the range; remove privateServiceRange",
            )
        ]
    cidr = ipaddress.IPv4Network(config.private_service_range)
    found = [
        Problem(
            path,
            f"{cidr} overlaps {where} {other}; peered services must not share addresses with "
            "the VPC: pick a free range",
        )
        for where, other in ranges.items()
        if cidr.overlaps(ipaddress.IPv4Network(other))
    ]
    needed = sum(2 ** (32 - _block_prefix(v.config)) for v in storage.created)
    if needed > cidr.num_addresses:
        found.append(
            Problem(
                path,
                f"{cidr} holds {cidr.num_addresses} addresses, but the volumes created need "
                f"{needed} (a /{LUSTRE_BLOCK_PREFIX} per Lustre instance, a /26 per Zonal and a "
                "/29 per Basic Filestore share); widen it",
            )
        )
    return found


def _block_prefix(volume: VolumeConfig) -> int:
    if volume.filestore is not None:
        return FILESTORE_BLOCK_PREFIX[volume.filestore.tier]
    return LUSTRE_BLOCK_PREFIX


def warnings(storage: Storage, hierarchical: Mapping[str, bool]) -> list[Problem]:
    """What a valid `ai-infra:storage` may say but probably does not mean, at paths under it:
    checkpoints on a stack bucket without hierarchical namespace, where a checkpoint's
    directory rename copies every object instead of one atomic rename (gcsfuse "Semantics":
    renames of directories are not atomic on flat buckets). `hierarchical` maps each
    `ai-infra:buckets` name to its `hierarchicalNamespace`."""
    return [
        Problem(
            ("volumes", i, "bucket"),
            f"checkpoints on bucket '{volume.bucket}', which has no hierarchical namespace: "
            "saving a checkpoint by renaming its directory copies each object; set "
            "hierarchicalNamespace: true on a new bucket for atomic renames",
        )
        for i, volume in enumerate(storage.config.volumes)
        if volume.bucket is not None
        and volume.profile == "checkpoint"
        and hierarchical.get(volume.bucket) is False
    ]


def mount_problems(
    mounts: Sequence[StorageMount],
    storage: Storage,
    *,
    taken: Mapping[str, str] | None = None,
    reserved: Sequence[str] = (),
) -> list[Problem]:
    """`[i]` problems of one system's `storage` list: a volume `storage.volumes` lacks, a path
    that hides a directory of the OS or the system's own (`reserved`), and a path at, above or
    under another mount's, of the list or the system's other mounts (`taken`: path -> where it
    is written)."""
    known = sorted(storage.volumes)
    found = []
    paths = MountedPaths(taken or {})
    for i, mount in enumerate(mounts):
        if mount.volume not in storage.volumes:
            found.append(
                Problem(
                    (i, "volume"),
                    f"no volume named '{mount.volume}' in ai-infra:storage (known: "
                    f"{', '.join(known) or 'none'})",
                )
            )
        volume = storage.volumes.get(mount.volume)
        # Under /home (read-only, or read-write where the system refuses that) it hides no
        # one's home; at or over /home it hides them all.
        if volume is not None and volume.kind == "gcs" and _at_or_over(mount.mount_path, HOME):
            found.append(
                Problem(
                    (i, "mountPath"),
                    f"'{mount.mount_path}' puts a bucket at or over {HOME}, where OS Login "
                    "users' home directories (their SSH keys, shells' files) live; Cloud "
                    "Storage FUSE cannot hold them: mount it elsewhere, e.g. /data",
                )
            )
            continue
        if hidden := shadowed_dir(mount.mount_path, reserved):
            found.append(
                Problem(
                    (i, "mountPath"),
                    f"'{mount.mount_path}' would hide {hidden} of the VMs' system or their "
                    "software; mount under another directory, e.g. /data",
                )
            )
            continue
        if overlap := paths.first_nested(mount.mount_path):
            other, where = overlap
            found.append(
                Problem(
                    (i, "mountPath"),
                    f"'{mount.mount_path}' overlaps {where} at '{other}'; every mount needs "
                    "its own, unnested path",
                )
            )
        else:
            paths.add(mount.mount_path, f"storage[{i}]")
    return found


@dataclass
class _Node:
    children: dict[str, _Node] = field(default_factory=dict)
    here: tuple[int, str, str] | None = None
    """The path that ends at this node: (order added, path, where it is written)."""
    first: tuple[int, str, str] | None = None
    """The first path added at or under this node."""


class MountedPaths:
    """Mount paths (path -> where it is written) in a trie of their '/'-separated parts, so
    that the first path added at, above or under a path (as `nested` judges) is found in that
    path's length, however many paths there are."""

    def __init__(self, paths: Mapping[str, str] = {}) -> None:
        self._root = _Node()
        self._count = 0
        for path, where in paths.items():
            self.add(path, where)

    def add(self, path: str, where: str) -> None:
        entry = (self._count, path, where)
        self._count += 1
        node = self._root
        for part in path.split("/"):
            node = node.children.setdefault(part, _Node())
            if node.first is None:
                node.first = entry
        if node.here is None:
            node.here = entry

    def first_nested(self, path: str) -> tuple[str, str] | None:
        """(path, where) of the first path added that is `path`, above it or under it."""
        found: list[tuple[int, str, str]] = []
        node: _Node | None = self._root
        parts = path.split("/")
        for part in parts[:-1]:
            node = node.children.get(part)
            if node is None:
                break
            if node.here is not None:
                found.append(node.here)
        else:
            node = node.children.get(parts[-1])
            if node is not None and node.first is not None:
                found.append(node.first)
        if not found:
            return None
        _, other, where = min(found)
        return other, where


HOME = "/home"


def nested(path: str, other: str) -> bool:
    """Whether two mount paths are one, or one lies under the other."""
    return path == other or path.startswith(other + "/") or other.startswith(path + "/")


def mounts_lustre(mounts: Iterable[StorageMount], storage: Storage) -> bool:
    """Whether any mount is a Lustre volume, whose client is an unsigned kernel module."""
    return any(
        m.volume in storage.volumes and storage.volumes[m.volume].kind == "lustre" for m in mounts
    )


def _at_or_over(path: str, directory: str) -> bool:
    """`path` is `directory` or one of its parents."""
    parent = path.rstrip("/") + "/"
    return path.rstrip("/") == directory.rstrip("/") or directory.startswith(parent)
