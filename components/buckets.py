"""GCS buckets for datasets and checkpoints: uniform bucket-level access, public access
prevention enforced, soft delete on, and grants added one member at a time so that grants made
elsewhere (by another stack, or by hand) are never wiped. Systems reach the stack's buckets
through a `BucketsHandle`.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Literal

import pulumi
import pulumi_gcp as gcp
from pydantic import AfterValidator, Field, InstanceOf

from components.base import (
    MAX_POLICY_MEMBERS,
    Component,
    ConfigModel,
    PathPart,
    Problem,
    WiringModel,
    described,
    duplicate_names,
    relative_path,
    slug,
)
from components.context import StackContext
from components.identity import grant_name, grant_opts, role_key
from components.types import DnsLabel, IamMember, IamRole

BucketAccess = Literal["read", "write", "admin"]
"""Object access a workload gets to a bucket."""
ACCESS_ROLES: dict[str, str] = {
    "read": "roles/storage.objectViewer",
    "write": "roles/storage.objectUser",
    "admin": "roles/storage.objectAdmin",
}
SECONDS_PER_DAY = 86_400


def _location(value: str) -> str:
    if not re.fullmatch(r"[A-Za-z]+[0-9]*(-[A-Za-z]+[0-9]*)*", value):
        raise ValueError(
            f"'{value}' is not a GCS location; write a region (us-east5), a dual-region "
            "(nam4) or a multi-region (US)"
        )
    return value


@described("", {"not": {"minimum": 1, "maximum": 6}})
def _soft_delete_days(value: int) -> int:
    if 0 < value < 7:
        raise ValueError(f"{value} days is below GCS's 7-day minimum; use 0 (off) or 7 to 90")
    return value


class BucketMember(ConfigModel):
    member: IamMember
    """`user:`, `group:`, `serviceAccount:` or `domain:`; public members (`allUsers`,
    `allAuthenticatedUsers`) are refused."""
    role: IamRole
    """Role granted on this bucket, e.g. `roles/storage.objectViewer`; basic roles are refused."""


class BucketConfig(ConfigModel):
    """One entry of `ai-infra:buckets`. The bucket is named `<project>-<prefix>-<name>`."""

    name: DnsLabel
    """The bucket is `<project>-<prefix>-<name>`; access lists (`buckets:` of teams and
    identities) use `<name>`."""
    location: (
        Annotated[
            str,
            AfterValidator(_location),
        ]
        | None
    ) = None
    """Defaults to `gcp:region`, beside the TPUs that read it."""
    storage_class: Literal["STANDARD", "NEARLINE", "COLDLINE", "ARCHIVE"] = "STANDARD"
    """Default storage class of new objects."""
    versioning: bool = False
    """Object versioning: overwritten and deleted objects are kept as noncurrent versions."""
    soft_delete_days: Annotated[int, AfterValidator(_soft_delete_days)] = Field(
        default=7, ge=0, le=90
    )
    """Days deleted objects stay recoverable; 0 turns soft delete off, otherwise 7 to 90."""
    delete_after_days: int | None = Field(default=None, ge=1, le=36500)
    """Lifecycle rule deleting objects this many days old (e.g. scratch checkpoints); at most
    36,500 (a program bound: a century, where the lifecycle `age` the JSON API takes as an
    integer would otherwise overflow on its way there)."""
    force_destroy: bool = False
    """Let `pulumi destroy` delete a bucket that still holds objects. Refused when the stack
    sets `ai-infra:protect`."""
    hierarchical_namespace: bool = False
    """Folders with atomic renames, which checkpointing libraries benefit from."""
    members: list[BucketMember] = Field(default_factory=list, max_length=MAX_POLICY_MEMBERS)
    """Extra per-member grants, e.g. a data team's group as objectViewer."""
    owner: DnsLabel | None = None
    """The team whose data it holds (an `ai-infra:teams` name): only it may write it, through
    `teams[].buckets` or a storage volume, unless `sharedWrite`."""
    shared_write: bool = False
    """Let teams other than `owner` write it, or, without an owner, more than one team: said
    explicitly, since one team's job can then overwrite or delete another's checkpoints."""

    def bucket_name(self, project: str, prefix: str) -> str:
        return f"{project}-{prefix}-{self.name}"


BUCKET_NAME_MAX = 63


def problems(buckets: list[BucketConfig], ctx: StackContext) -> list[Problem]:
    """Checks of `ai-infra:buckets` that need the stack's project, prefix and protection."""
    found = duplicate_names([b.name for b in buckets], "buckets")
    for i, bucket in enumerate(buckets):
        full_name = bucket.bucket_name(ctx.project, ctx.prefix)
        if len(full_name) > BUCKET_NAME_MAX:
            found.append(
                Problem(
                    (i, "name"),
                    f"bucket name '{full_name}' is longer than {BUCKET_NAME_MAX} characters; "
                    "shorten the name",
                )
            )
        # GCS "Bucket naming guidelines": no "google" anywhere, no "goog" prefix.
        if "google" in full_name or full_name.startswith("goog"):
            found.append(
                Problem(
                    (i, "name"),
                    f"bucket name '{full_name}' contains 'google' or starts with 'goog', "
                    "which GCS refuses; rename the bucket (or the stack prefix)",
                )
            )
        if bucket.force_destroy and ctx.protect:
            found.append(
                Problem(
                    (i, "forceDestroy"),
                    "this stack sets ai-infra:protect, so its buckets must not be "
                    "force-destroyed; remove forceDestroy (or set ai-infra:protect: false for a "
                    "throwaway stack)",
                )
            )
        if bucket.hierarchical_namespace and bucket.versioning:
            # GCS refuses object versioning on buckets with hierarchical namespace
            # (cluster-toolkit's cloud-storage-bucket module checks the same).
            found.append(
                Problem(
                    (i, "versioning"),
                    "hierarchical namespace buckets cannot keep object versions; turn one off "
                    "(soft delete still protects deleted objects)",
                )
            )
        found += [p.under(i) for p in member_problems(bucket.members)]
    return found


def member_problems(members: list[BucketMember]) -> list[Problem]:
    """`members[i]` problems for a grant an earlier entry already makes, including members
    that differ only in case or `_`/`-` (IAM folds case, and both would get one resource
    name)."""
    seen: dict[tuple[str, str], int] = {}
    found = []
    for i, member in enumerate(members):
        key = (slug(member.member), role_key(member.role))
        if key in seen:
            found.append(
                Problem(
                    ("members", i),
                    f"repeats the grant of members[{seen[key]}]: members and roles differing "
                    "only in case, '_' or '-' would share one resource name; list it once",
                )
            )
        seen.setdefault(key, i)
    return found


@dataclass(frozen=True)
class Writer:
    """A team that writes a stack bucket, and where the config says so."""

    path: tuple[PathPart, ...]
    team: str
    bucket: str
    volume_owner: str | None = None
    """The owner a storage volume on the bucket names, when the write comes through one."""
    shared: bool = False
    """Whether that volume says `sharedWrite`."""


def write_problems(
    buckets: Sequence[BucketConfig], writers: Sequence[Writer], teams: Sequence[str]
) -> list[Problem]:
    """One team writes a bucket, its owner, unless the bucket says `sharedWrite`: judged on
    every way a team gets write (`teams[].buckets` and each storage volume on the bucket),
    since one grant is as good as another to GCS. Without an owner, a second writing team
    needs `sharedWrite` too; a volume naming another owner than the bucket's is refused."""
    found = []
    by_bucket: dict[str, list[Writer]] = {}
    for writer in writers:
        by_bucket.setdefault(writer.bucket, []).append(writer)
    for i, bucket in enumerate(buckets):
        if bucket.owner is not None and bucket.owner not in teams:
            found.append(
                Problem(
                    ("buckets", i, "owner"),
                    f"no team named '{bucket.owner}' in ai-infra:teams (known: "
                    f"{', '.join(teams) or 'none'}); name one, or onboard the team first",
                )
            )
        found += _bucket_writer_problems(i, bucket, by_bucket.get(bucket.name, []))
    return found


def _bucket_writer_problems(i: int, bucket: BucketConfig, writers: list[Writer]) -> list[Problem]:
    found = [
        Problem(
            ("buckets", i, "owner"),
            f"{relative_path(w.path)} writes it as team {w.volume_owner}'s volume; name one "
            "owner for the bucket and its volumes",
        )
        for w in writers
        if bucket.owner is not None and w.volume_owner not in (None, bucket.owner)
    ]
    if bucket.shared_write:
        return found
    teams = list(dict.fromkeys(w.team for w in writers))
    owner = bucket.owner
    for writer in writers:
        if writer.shared or (owner is None and len(teams) < 2) or writer.team == owner:
            continue
        if owner is None and writer.volume_owner not in (None, writer.team):
            continue  # the volume's own owner rule refuses it (storage/checks.py)
        if owner is not None:
            message = (
                f"write access to team {owner}'s bucket '{bucket.name}': another team could "
                "overwrite or delete its data (checkpoints); grant read, or set "
                f"buckets[{i}].sharedWrite: true to say it is meant"
            )
        else:
            others = ", ".join(t for t in teams if t != writer.team)
            message = (
                f"bucket '{bucket.name}' is written by team {others} too, and one team's job "
                "could overwrite or delete another's data; name its owner "
                f"(buckets[{i}].owner, the others read), or set buckets[{i}].sharedWrite: true "
                "to say it is shared"
            )
        found.append(Problem(writer.path, message))
    return found


def unknown_buckets(named: Iterable[str], buckets: Collection[str]) -> list[Problem]:
    """`buckets.<name>` problems for bucket access that names no `ai-infra:buckets` entry.
    Callers that check many entries pass a set, made once: each name is looked up, and the
    known names are listed only when one is missing."""
    missing = [bucket for bucket in named if bucket not in buckets]
    if not missing:
        return []
    known = ", ".join(sorted(buckets)) or "none"
    return [
        Problem(
            ("buckets", bucket),
            f"no bucket named '{bucket}' in ai-infra:buckets; known: {known}",
        )
        for bucket in missing
    ]


class BucketArgs(WiringModel):
    context: InstanceOf[StackContext]
    config: BucketConfig


class Bucket(Component):
    """One bucket and its per-member grants. Workload identities add their own grants."""

    bucket: gcp.storage.Bucket
    key: str
    """Its name in `ai-infra:buckets`."""
    name_: str
    """The bucket's name, known before it exists."""

    def __init__(self, name: str, args: BucketArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ai-infra:buckets:Bucket", name, opts)
        ctx = args.context
        config = args.config
        self.key = config.name
        self.name_ = config.bucket_name(ctx.project, ctx.prefix)
        lifecycle_rules = []
        if config.delete_after_days is not None:
            lifecycle_rules.append(
                gcp.storage.BucketLifecycleRuleArgs(
                    action=gcp.storage.BucketLifecycleRuleActionArgs(type="Delete"),
                    condition=gcp.storage.BucketLifecycleRuleConditionArgs(
                        age=config.delete_after_days
                    ),
                )
            )
        self.bucket = gcp.storage.Bucket(
            f"{name}-bucket",
            project=ctx.project,
            name=self.name_,
            location=ctx.location_of(config.location).upper(),
            storage_class=config.storage_class,
            uniform_bucket_level_access=True,
            public_access_prevention="enforced",
            versioning=gcp.storage.BucketVersioningArgs(enabled=config.versioning),
            soft_delete_policy=gcp.storage.BucketSoftDeletePolicyArgs(
                retention_duration_seconds=config.soft_delete_days * SECONDS_PER_DAY
            ),
            hierarchical_namespace=(
                gcp.storage.BucketHierarchicalNamespaceArgs(enabled=True)
                if config.hierarchical_namespace
                else None
            ),
            lifecycle_rules=lifecycle_rules,
            force_destroy=config.force_destroy,
            labels=ctx.labels,
            opts=self.child_opts(protect=ctx.protect),
        )
        for member in config.members:
            grant_bucket_access(
                self,
                name,
                self,
                scope=slug(member.member),
                role=member.role,
                member=member.member,
            )
        self.register_outputs({"name": self.bucket.name, "url": self.bucket.url})


def grant_bucket_access(
    parent: Component,
    owner: str,
    bucket: Bucket,
    *,
    role: str,
    member: pulumi.Input[str],
    scope: str | None = None,
    depends_on: Iterable[pulumi.Resource] = (),
) -> gcp.storage.BucketIAMMember:
    """Add one member to one role on one bucket, leaving every other grant alone. The grant
    is named `<owner>-<scope>-<role key>`; `scope` defaults to `bucket-<the bucket's key>`."""
    return gcp.storage.BucketIAMMember(
        grant_name(owner, role, scope or f"bucket-{bucket.key}"),
        bucket=bucket.name_,
        role=role,
        member=member,
        opts=grant_opts(parent, [*depends_on, bucket.bucket]),
    )


def grant_named_access(
    parent: Component,
    owner: str,
    buckets: BucketsHandle,
    bucket: str,
    *,
    role: str,
    member: pulumi.Input[str],
    depends_on: Iterable[pulumi.Resource] = (),
) -> gcp.storage.BucketIAMMember:
    """A grant on a stack bucket given by its key, or on any other bucket by its full name,
    named `<owner>-bucket-<key or slugged name>-<role key>`."""
    if bucket in buckets:
        return grant_bucket_access(
            parent, owner, buckets[bucket], role=role, member=member, depends_on=depends_on
        )
    return gcp.storage.BucketIAMMember(
        grant_name(owner, role, f"bucket-{slug(bucket)}"),
        bucket=bucket,
        role=role,
        member=member,
        opts=grant_opts(parent, list(depends_on)),
    )


def grant_access(
    parent: Component,
    owner: str,
    buckets: BucketsHandle,
    access: Mapping[str, BucketAccess],
    *,
    member: str,
    depends_on: Iterable[pulumi.Resource] = (),
) -> list[gcp.storage.BucketIAMMember]:
    """The object access an entry's `buckets:` map names (`read`, `write`, `admin`), one
    grant per stack bucket."""
    return [
        grant_bucket_access(
            parent,
            owner,
            buckets[bucket],
            role=ACCESS_ROLES[level],
            member=member,
            depends_on=depends_on,
        )
        for bucket, level in access.items()
    ]


@dataclass(frozen=True)
class BucketsHandle:
    """The stack's buckets by their `ai-infra:buckets` name, for systems that grant access to
    them or mount them."""

    buckets: Mapping[str, Bucket]

    def __contains__(self, key: object) -> bool:
        return key in self.buckets

    def __getitem__(self, key: str) -> Bucket:
        return self.buckets[key]

    def gcs_name(self, bucket: str) -> str:
        """The GCS name of a stack bucket given by its key, or `bucket` itself (a bucket of
        another stack, named in full)."""
        return self.buckets[bucket].name_ if bucket in self.buckets else bucket

    @property
    def resources(self) -> list[pulumi.Resource]:
        return [b.bucket for b in self.buckets.values()]
