"""What the user writes for `ai-infra:storage`: the volumes the stack creates (Filestore shares,
Managed Lustre instances) or attaches (Cloud Storage buckets, existing instances), the teams
each is granted to, and the range private services access takes; and `StorageMount`, with
which every system's entries mount a volume by name. `Storage` resolves them with the stack
context once: cloud names, zones, file system names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Annotated, Literal

from pydantic import Field

from catalog.storage import FILESTORE_SHARE, LUSTRE_FILESYSTEM_MAX
from components.base import MAX_ENTRIES, ConfigModel, at_most, matching
from components.context import StackContext
from components.types import REGION, ZONE, Cidr, DnsLabel, GceName, MountPath, Zone

Kind = Literal["gcs", "filestore", "lustre"]
Access = Literal["read", "write"]
"""What a team may do with a volume: `read` mounts it read-only, `write` read-write."""
Profile = Literal["training", "checkpoint"]
"""How Cloud Storage FUSE caches a bucket: `training` for reading datasets (metadata cache),
`checkpoint` for writing and restoring checkpoints (range reads cached, large directory
renames)."""

LustreFilesystem = Annotated[
    str,
    matching(
        rf"[A-Za-z0-9]{{1,{LUSTRE_FILESYSTEM_MAX}}}",
        "is not a Lustre file system name: 1 to 8 letters and digits",
    ),
]
Location = Annotated[
    str,
    matching(
        rf"{ZONE}|{REGION}",
        "is not a zone or region such as us-central1-a or us-central1",
    ),
]
BucketRef = Annotated[
    str,
    matching(
        r"[a-z0-9][-_.a-z0-9]{1,220}[a-z0-9]",
        "is not a bucket: the name of an ai-infra:buckets entry, or a GCS bucket's full name",
    ),
]
MAX_VOLUMES = 64
"""Volumes of a stack: a bound of this program's, so that the checks across volumes and their
mounts stay small."""


class FilestoreVolume(ConfigModel):
    """A Filestore instance `<prefix>-<name>` with one share, reached through private services
    access."""

    tier: Literal["BASIC_HDD", "BASIC_SSD", "ZONAL"] = "ZONAL"
    """Service tier: `ZONAL` (the default: SSD, scales to 100 TiB), `BASIC_SSD` or `BASIC_HDD`."""
    capacity_gib: int = Field(ge=1, le=1_000_000)
    """Size in GiB: BASIC_HDD 1,024 and BASIC_SSD 2,560 to 65,433; ZONAL 1,024 to 9,984 in steps
    of 256, or 10,240 to 102,400 in steps of 2,560."""
    zone: Zone | None = None
    """Defaults to `gcp:zone`; best the zone of the VMs and nodes that mount it."""


class LustreVolume(ConfigModel):
    """A Managed Lustre instance `<prefix>-<name>`, reached through private services access."""

    capacity_gib: int = Field(ge=1, le=100_000_000)
    """Size in GiB, a multiple of the tier's step: 1000 MBps per TiB from 9,000 in steps of
    9,000; 500 from 18,000 in 18,000; 250 from 36,000 in 36,000; 125 from 72,000 in 72,000
    (larger steps above 1.53, 3.06 and 6.12 million GiB). It can grow in place, never shrink."""
    throughput: Literal[125, 250, 500, 1000] = 1000
    """Performance tier, MBps per TiB of capacity. Fixed once created: a change replaces the
    instance and its data."""
    zone: Zone | None = None
    """Defaults to `gcp:zone`; one Managed Lustre offers (docs/storage.md lists them)."""
    allow_unlisted_zone: bool = False
    """Accept a zone the catalog does not list for Managed Lustre (one Google added since)."""
    filesystem: LustreFilesystem | None = None
    """The file system name clients mount (`IP@tcp:/<filesystem>`), 1 to 8 letters and digits;
    defaults to the volume name without '-', cut to 8. Unique in the stack: GKE mounts no two
    of one name on a node."""


class ExistingInstance(ConfigModel):
    """A Filestore or Managed Lustre instance made elsewhere, in the stack's project and VPC;
    `pulumi up` reads its address, share or file system and size."""

    instance: GceName
    """The instance's name (its id, not its path)."""
    location: Location | None = None
    """Its zone (or a regional Filestore instance's region); defaults to `gcp:zone`."""


class VolumeConfig(ConfigModel):
    """One entry of `storage.volumes`: exactly one of `bucket`, `filestore`, `lustre`,
    `existingFilestore` or `existingLustre`."""

    name: DnsLabel = Field(max_length=40)
    """What systems and teams mount it by; names the instance `<prefix>-<name>` it creates and
    the claim `<name>` in each granted team's namespace."""
    bucket: BucketRef | None = None
    """A Cloud Storage bucket: an `ai-infra:buckets` entry by name, or any bucket's full name;
    mounted with Cloud Storage FUSE."""
    filestore: FilestoreVolume | None = None
    """Create a Filestore share, mounted over NFS."""
    lustre: LustreVolume | None = None
    """Create a Managed Lustre instance."""
    existing_filestore: ExistingInstance | None = None
    """Attach an existing Filestore instance (its first share)."""
    existing_lustre: ExistingInstance | None = None
    """Attach an existing Managed Lustre instance."""
    profile: Profile = "training"
    """Buckets only: the Cloud Storage FUSE settings every mount of it gets, `training` (read
    datasets) or `checkpoint` (write and restore checkpoints)."""
    owner: DnsLabel | None = None
    """The team whose data it holds (an `ai-infra:teams` name). Another team gets `write` only
    with `sharedWrite`."""
    teams: Annotated[
        dict[DnsLabel, Access], at_most(MAX_ENTRIES, "one per ai-infra:teams entry")
    ] = Field(default_factory=dict)
    """`ai-infra:teams` name -> `read` or `write`: each team gets a PersistentVolume and a claim
    `<name>` in its namespace, read-only or read-write, and for a bucket the object role its
    Workload Identity needs (objectViewer, objectUser) and nothing wider."""
    shared_write: bool = False
    """Let teams other than `owner` write it, or, without an owner, more than one team: said
    explicitly, since one team's job can then overwrite another's checkpoints."""

    @property
    def kind(self) -> Kind:
        if self.bucket is not None:
            return "gcs"
        if self.filestore is not None or self.existing_filestore is not None:
            return "filestore"
        return "lustre"

    @property
    def created(self) -> bool:
        """Whether the stack creates the instance (a Filestore share or a Lustre instance)."""
        return self.filestore is not None or self.lustre is not None

    @property
    def sources(self) -> list[str]:
        """The keys of the kinds it sets, as written; exactly one is valid."""
        fields = ("bucket", "filestore", "lustre", "existing_filestore", "existing_lustre")
        return [
            VolumeConfig.model_fields[f].alias or f for f in fields if getattr(self, f) is not None
        ]


class StorageConfig(ConfigModel):
    """`ai-infra:storage`: volumes for training data and checkpoints, mounted by name."""

    private_service_range: Cidr | None = None
    """The range private services access allocates in the stack's VPC, from which Google gives
    each Filestore share a /26 (Basic: /29) and each Lustre instance a /23; needed when the
    stack creates either, disjoint from every other range of the stack, e.g. 10.200.0.0/20."""
    volumes: list[VolumeConfig] = Field(default_factory=list, max_length=MAX_VOLUMES)
    """Buckets, Filestore shares and Lustre instances, created or attached."""


class StorageMount(ConfigModel):
    """A volume of `ai-infra:storage` mounted on a system's VMs."""

    volume: DnsLabel
    """The `storage.volumes` name."""
    mount_path: MountPath
    """Where it is mounted, e.g. `/data`; outside the system's own directories."""
    read_only: bool = False
    """Mount it read-only (and, for a bucket, grant the VMs' account objectViewer instead of
    objectUser)."""


# The storage of one stack, resolved.


@dataclass(frozen=True)
class Volume:
    """One volume with what the stack decides about it."""

    config: VolumeConfig
    kind: Kind
    location: str
    """The instance's zone (or region); empty for a bucket."""
    instance: str
    """The cloud name: the Filestore or Lustre instance, or the GCS bucket."""
    filesystem: str
    """A created Lustre instance's file system name; empty otherwise (an existing one's is
    read at `pulumi up`)."""
    bucket_key: str | None
    """The `ai-infra:buckets` name of a stack bucket; None for another bucket."""

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def share(self) -> str:
        """A created Filestore instance's share."""
        return FILESTORE_SHARE


@dataclass(frozen=True)
class Storage:
    """`ai-infra:storage` with the stack context and the stack's bucket names, resolved once."""

    context: StackContext
    config: StorageConfig
    bucket_names: Mapping[str, str]
    """`ai-infra:buckets` name -> GCS name."""

    @cached_property
    def volumes(self) -> dict[str, Volume]:
        """Every volume by name; for a config whose problems are empty (the first of two
        volumes of one name wins)."""
        found: dict[str, Volume] = {}
        for entry in self.config.volumes:
            found.setdefault(entry.name, self._resolve(entry))
        return found

    def _resolve(self, entry: VolumeConfig) -> Volume:
        ctx = self.context
        if entry.bucket is not None:
            key = entry.bucket if entry.bucket in self.bucket_names else None
            instance = self.bucket_names[key] if key else entry.bucket
            return Volume(entry, "gcs", "", instance, "", key)
        existing = entry.existing_filestore or entry.existing_lustre
        if existing is not None:
            location = existing.location or ctx.zone
            return Volume(entry, entry.kind, location, existing.instance, "", None)
        spec = entry.filestore or entry.lustre
        zone = ctx.zone_of(spec.zone if spec is not None else None)
        filesystem = ""
        if entry.lustre is not None:
            filesystem = entry.lustre.filesystem or default_filesystem(entry.name)
        return Volume(entry, entry.kind, zone, ctx.name(entry.name), filesystem, None)

    @property
    def created(self) -> list[Volume]:
        """The volumes whose instances the stack creates."""
        return [v for v in self.volumes.values() if v.config.created]

    @property
    def needs_service_access(self) -> bool:
        """Whether the stack allocates private services access for what it creates."""
        return bool(self.created)

    @property
    def lustre_names(self) -> frozenset[str]:
        """The Lustre volumes, whose client is an unsigned kernel module."""
        return frozenset(v.name for v in self.of_kind("lustre"))

    def of_kind(self, kind: Kind) -> list[Volume]:
        return [v for v in self.volumes.values() if v.kind == kind]

    def team_grants(self) -> dict[str, dict[str, Access]]:
        """Team -> volume name -> access, for every grant of every volume."""
        found: dict[str, dict[str, Access]] = {}
        for volume in self.volumes.values():
            for team, access in volume.config.teams.items():
                found.setdefault(team, {})[volume.name] = access
        return found


def default_filesystem(name: str) -> str:
    """A Lustre file system name from a volume name: its letters and digits, at most 8."""
    return name.replace("-", "")[:LUSTRE_FILESYSTEM_MAX]
