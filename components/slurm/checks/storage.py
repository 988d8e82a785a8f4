"""The problems of what the cluster's VMs mount: `networkStorage` lists, /home, and the
`storage` volumes of the cluster, its login groups and nodesets.
"""

from __future__ import annotations

from collections.abc import Sequence

from catalog.storage import FILESTORE_TIERS
from components.base import PathPart, Problem, under
from components.slurm.config import SlurmConfig
from components.slurm.fields import SLURM_DIRS, NetworkStorage
from components.storage import Storage, StorageMount, mount_problems, nested


def storage_problems(storage: Sequence[NetworkStorage]) -> list[Problem]:
    """Two entries of one list mounting at one place."""
    first: dict[str, int] = {}
    found = []
    for i, entry in enumerate(storage):
        if entry.local_mount in first:
            found.append(
                Problem(
                    (i, "localMount"),
                    f"{entry.local_mount} is already mounted by [{first[entry.local_mount]}]; "
                    "mount each file system at its own path",
                )
            )
        first.setdefault(entry.local_mount, i)
        if "@" in entry.server_ip and entry.fs_type != "lustre":
            found.append(
                Problem(
                    (i, "serverIp"),
                    f"'{entry.server_ip}' is a Lustre network address (ADDRESS@NET); an "
                    f"{entry.fs_type} server is a plain address or host name",
                )
            )
    return found


def home_problems(config: SlurmConfig, stack_subnet: str) -> list[Problem]:
    home = config.home
    found = []
    if home.filestore:
        # The share exports to the stack's subnet only (components/nfs.py).
        found += [
            Problem(
                ("tpuNodesets", i, "subnetwork"),
                f"the /home share admits the stack's subnet '{stack_subnet}' only, so TPU VMs "
                "in another subnet could not mount it; remove subnetwork or set "
                "home.filestore: false",
            )
            for i, n in enumerate(config.tpu_nodesets)
            # Without public IPs the nodeset has a problem at this path already.
            if n.subnetwork not in (None, stack_subnet) and n.enable_public_ips
        ]
        if problem := FILESTORE_TIERS[home.tier].capacity_problem(home.capacity_gb):
            found.append(Problem(("home", "capacityGb"), problem))
        for i, entry in enumerate(config.network_storage):
            if entry.local_mount == "/home":
                found.append(
                    Problem(
                        ("networkStorage", i, "localMount"),
                        "/home is the Filestore share of home.filestore; set home.filestore: "
                        "false to mount your own /home",
                    )
                )
    elif home.model_fields_set - {"filestore"}:
        found.append(
            Problem(
                ("home",),
                "tier and capacityGb size the Filestore share, and home.filestore is false; "
                "remove them",
            )
        )
    return found


SHARED_DIRS = ("/home", "/opt/apps")
"""What every VM mounts from the cluster whatever its storage: /home (the Filestore share, or
the controller's export) and /opt/apps, which Slurm-GCP's setup always mounts from the
controller (setup_network_storage.py `_get_default_mounts`)."""


def volume_problems(config: SlurmConfig, storage: Storage) -> list[Problem]:
    """The `storage` lists: known volumes, paths of their own, and no login group or nodeset
    mounting over what the whole cluster mounts. Slurm-GCP merges a group's or nodeset's
    entries over the cluster's by mount path (setup_network_storage.py
    `resolve_network_storage`), so one there would silently replace the shared /home."""
    cluster = {
        **{d: "the cluster's shared directories" for d in SHARED_DIRS},
        **{e.local_mount: f"networkStorage[{i}]" for i, e in enumerate(config.network_storage)},
    }
    own = {e.local_mount: f"networkStorage[{i}]" for i, e in enumerate(config.network_storage)}
    own["/opt/apps"] = "the cluster's shared directories"
    if config.home.filestore:
        own["/home"] = "home.filestore's share"
    found = under(
        ("storage",), mount_problems(config.storage, storage, taken=own, reserved=SLURM_DIRS)
    )
    cluster |= {m.mount_path: f"storage[{i}]" for i, m in enumerate(config.storage)}
    groups: list[tuple[tuple[PathPart, ...], list[NetworkStorage], list[StorageMount]]] = [
        (("loginGroups", i), g.network_storage, g.storage)
        for i, g in enumerate(config.login_groups)
    ]
    groups += [
        (("cpuNodesets", i), n.network_storage, n.storage)
        for i, n in enumerate(config.cpu_nodesets)
    ]
    groups += [
        (("tpuNodesets", i), n.network_storage, n.storage)
        for i, n in enumerate(config.tpu_nodesets)
    ]
    found += _local_ssd_problems(config, cluster)
    for where, entries, mounts in groups:
        for k, entry in enumerate(entries):
            if over := next((p for p in cluster if nested(entry.local_mount, p)), None):
                found.append(_override((*where, "networkStorage", k, "localMount"), over, cluster))
        taken = {e.local_mount: f"networkStorage[{k}]" for k, e in enumerate(entries)}
        found += under(
            (*where, "storage"),
            mount_problems(mounts, storage, taken=taken | cluster, reserved=SLURM_DIRS),
        )
    return found


def _local_ssd_problems(config: SlurmConfig, cluster: dict[str, str]) -> list[Problem]:
    """A nodeset's local SSDs apart from what its nodes mount (`cluster`: the cluster's mounts
    by path): the boot script mounts them world-writable before Slurm's setup mounts the
    rest (boot.py `_local_ssd_lines`), so the two would hide one another."""
    found = []
    for i, nodeset in enumerate(config.cpu_nodesets):
        if nodeset.local_ssd is None:
            continue
        path = nodeset.local_ssd.mount_path
        mounted = dict(cluster)
        mounted |= {
            e.local_mount: f"networkStorage[{k}]" for k, e in enumerate(nodeset.network_storage)
        }
        mounted |= {m.mount_path: f"storage[{k}]" for k, m in enumerate(nodeset.storage)}
        if over := next((p for p in mounted if nested(path, p)), None):
            found.append(
                Problem(
                    ("cpuNodesets", i, "localSsd", "mountPath"),
                    f"{path} and {over} ({mounted[over]}) hold one another, and the local SSDs "
                    "are mounted world-writable (mode 1777) before it: one hides the other; "
                    "mount the SSDs apart, e.g. /mnt/localssd",
                )
            )
    return found


def _override(path: tuple[PathPart, ...], over: str, cluster: dict[str, str]) -> Problem:
    return Problem(
        path,
        f"{over} is mounted on every VM of the cluster ({cluster[over]}), and Slurm-GCP lets "
        "this entry replace it on these VMs alone; mount elsewhere, or change the cluster's",
    )


def own_bucket(config: SlurmConfig, storage: Storage) -> set[str]:
    """The `ai-infra:storage` volumes that are the cluster's own Slurm bucket, whose scripts
    and configs its controller runs and reads as root (setup.py, slurmsync.py)."""
    ctx = storage.context
    bucket = config.bucket_name(ctx.project, ctx.prefix)
    return {v.name for v in storage.of_kind("gcs") if v.instance == bucket}


def bucket_write_problems(config: SlurmConfig, storage: Storage) -> list[Problem]:
    """Mounts of the cluster's own bucket that could write it: a VM that can write the files
    the controller runs as root owns the cluster. GPU clusters refuse the same for theirs."""
    own = own_bucket(config, storage)
    lists: list[tuple[tuple[PathPart, ...], list[StorageMount]]] = [(("storage",), config.storage)]
    lists += [(("loginGroups", i, "storage"), g.storage) for i, g in enumerate(config.login_groups)]
    lists += [(("cpuNodesets", i, "storage"), n.storage) for i, n in enumerate(config.cpu_nodesets)]
    lists += [(("tpuNodesets", i, "storage"), n.storage) for i, n in enumerate(config.tpu_nodesets)]
    return [
        Problem(
            (*where, k, "readOnly"),
            f"{mount.volume} is this cluster's Slurm bucket, whose scripts the controller runs "
            "as root: VMs that can write it own the cluster; set readOnly: true",
        )
        for where, mounts in lists
        for k, mount in enumerate(mounts)
        if mount.volume in own and not mount.read_only
    ]


def bucket_grant_problems(config: SlurmConfig, storage: Storage) -> list[Problem]:
    """`ai-infra:storage` grants of write on the cluster's own bucket to a team, at paths under
    `ai-infra:` (`storage.volumes[i].teams.<team>`): the team's pods could rewrite what the
    controller runs as root."""
    own = own_bucket(config, storage)
    return [
        Problem(
            ("storage", "volumes", i, "teams", team),
            f"gs://{storage.volumes[volume.name].instance} is Slurm cluster "
            f"{config.cluster_name}'s bucket, whose scripts its controller runs as root: a team "
            f"that can write it owns the cluster; grant {team} read, or none",
        )
        for i, volume in enumerate(storage.config.volumes)
        if volume.name in own
        for team, access in volume.teams.items()
        if access == "write"
    ]
