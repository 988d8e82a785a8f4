"""Storage as the stack sees it: the instances built before the systems that mount them, each
granted team's volumes on GKE built after the cluster, checks at stack paths, the Filestore names
it claims, the services private services access needs, its plan section (with who mounts what)
and stack outputs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pulumi

from catalog.storage import LUSTRE_TIERS
from components.base import Problem, Source, under
from components.buckets import BucketsHandle
from components.network import NetworkHandle, gke_node_tag
from components.storage.checks import problems as volume_problems
from components.storage.checks import warnings as volume_warnings
from components.storage.config import Storage, StorageMount, Volume
from components.storage.instances import (
    STORAGE_SERVICES,
    StorageArgs,
    StorageHandle,
    StorageInstances,
)
from components.storage.volumes import TeamVolumes, TeamVolumesArgs
from components.system import Claim, ClaimKind, Handles, Section, StackView

if TYPE_CHECKING:
    from stacks.config import StackConfig


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


def problems(view: StackView) -> list[Problem]:
    """The volumes' problems; the private services range against every other of the stack."""
    config = view.config
    return under(
        "storage",
        volume_problems(
            config.resolved_storage,
            teams=[t.name for t in config.teams],
            team_buckets={t.name: list(t.buckets) for t in config.teams},
            gcs_fuse_driver=config.cluster.gcs_fuse_csi_driver,
            ranges={c.what: c.value for c in view.claimed(ClaimKind.RANGE)},
        ),
    )


def warnings(view: StackView) -> list[Problem]:
    config = view.config
    hierarchical = {b.name: b.hierarchical_namespace for b in config.buckets}
    return under("storage", volume_warnings(config.resolved_storage, hierarchical))


def claims(config: StackConfig) -> list[Claim]:
    """The Filestore instances of the volumes it creates, and what each volume holds (a
    bucket, a created or an existing instance)."""
    ctx = config.context
    buckets = config.bucket_names()
    found = [
        Claim(ClaimKind.FILESTORE, ctx.name(v.name), ("storage", "volumes", i))
        for i, v in enumerate(config.storage.volumes)
        if v.filestore is not None
    ]
    found += _firewalls(config)
    for i, v in enumerate(config.storage.volumes):
        existing = v.existing_filestore or v.existing_lustre
        if v.bucket is not None:
            key, held = "bucket", buckets.get(v.bucket, v.bucket)
        elif existing is not None:
            key = "existingFilestore" if v.existing_filestore else "existingLustre"
            held = existing.instance
        else:
            key, held = ("filestore" if v.filestore else "lustre"), ctx.name(v.name)
        # A bucket may stand behind two volumes that grant it alike (another gcsfuse profile,
        # as Toolkit's A3 Ultra and A4 blueprints mount one bucket at /gcs and
        # /gcs-checkpoints); `own` carries the grants `stacks/claims.py` compares.
        grants = (v.owner, tuple(sorted(v.teams.items())), v.shared_write)
        found.append(
            Claim(
                ClaimKind.VOLUME,
                f"{v.kind}:{held}",
                ("storage", "volumes", i, key),
                held,
                own=frozenset({repr(grants)}) if v.bucket is not None else frozenset(),
            )
        )
    return found


def _firewalls(config: StackConfig) -> list[Claim]:
    """The Lustre clients' rule (whenever the stack has Lustre: a client may come with any
    edit) and each created Filestore share's pair of rules
    (components/nfs.py `<instance>-deny`, `<instance>-clients`)."""
    ctx = config.context
    volumes = config.storage.volumes
    found = []
    if any(v.lustre is not None for v in volumes):
        found.append(
            Claim(ClaimKind.FIREWALL, ctx.name("allow-lustre"), ("storage",), "storage's Lustre")
        )
    found += [
        Claim(
            ClaimKind.FIREWALL,
            f"{ctx.name(v.name)}-{side}",
            ("storage", "volumes", i, "name"),
            f"storage volume {v.name}",
            chosen=True,
        )
        for i, v in enumerate(volumes)
        if v.filestore is not None
        for side in ("deny", "clients")
    ]
    return found


def services(config: StackConfig) -> tuple[str, ...]:
    return STORAGE_SERVICES if config.resolved_storage.needs_service_access else ()


def clients(view: StackView) -> dict[str, list[str]]:
    """Volume name -> the network tags of the VMs that mount it: GKE's nodes for a volume
    granted to a team, and each system's VMs for one its `storage` lists mount."""
    config = view.config
    found: dict[str, set[str]] = {}
    if config.cluster.enabled:
        for grants in config.resolved_storage.team_grants().values():
            for name in grants:
                found.setdefault(name, set()).add(gke_node_tag(config.prefix))
    for name, mounts in view.mounts_by_volume().items():
        for mounted in mounts:
            found.setdefault(name, set()).update(mounted.tags)
    return {name: sorted(tags) for name, tags in found.items()}


def build_instances(view: StackView, handles: Handles, source: Source) -> StorageHandle:
    stack = handles["stack"]
    return build(
        view.config.resolved_storage,
        network=stack.network,
        clients=clients(view),
        services=stack.after_services,
        source=source,
    )


def build_volumes(view: StackView, handles: Handles, source: Source) -> dict[str, TeamVolumes]:
    """Each granted team's volumes, on the GKE cluster when there is one."""
    gke = handles["gke"]
    if gke is None:
        return {}
    return build_team_volumes(
        handles["storage"],
        namespaces={name: team.namespace for name, team in gke.teams.items()},
        members={name: team.identity.member for name, team in gke.teams.items()},
        buckets=handles["stack"].buckets,
        kubernetes=gke.kubernetes,
        source=source,
    )


def sections(view: StackView) -> list[Section]:
    mounts = {
        name: [(m.who, m.mount) for m in found] for name, found in view.mounts_by_volume().items()
    }
    return describe(view.config.resolved_storage, mounts)


def outputs(config: StackConfig, handles: Handles) -> dict[str, Any]:
    """Each volume's kind and source, once known."""
    handle: StorageHandle = handles["storage"]
    return {
        "storage": {
            name: endpoint.apply(lambda e: {"kind": e.kind, "source": e.source})
            for name, endpoint in handle.endpoints.items()
        }
    }
