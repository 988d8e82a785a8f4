"""The values every part of `ai-infra:slurm` is made of: the names Slurm-GCP derives VM and
node names from, paths, images, file systems, script text, and the bounds this program sets.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Annotated, Literal

from pydantic import AfterValidator, StringConstraints

from components.base import ConfigModel, matching
from components.slurm import scripts
from components.storage import StorageMount
from components.types import (
    GceName,
    ImageProject,
    MountPath,
    image_has_tag_or_digest,
    shadowed_dir,
)

CLUSTER_NAME = r"[a-z](?:[-a-z0-9]{0,18}[a-z0-9])?"
"""Slurm-GCP's rule (`^[a-z]([-a-z0-9]{0,19})$`, controller variables.tf), without a trailing
'-': the name is every VM's network tag, which must end in a letter or digit."""
NODESET_NAME = r"[a-z][a-z0-9]{0,14}"
"""The controller names nodes `<cluster>-<nodeset>-<index>`; Toolkit strips anything but
`[a-z0-9]` from a nodeset name and keeps 14 characters (nodeset-tpu main.tf), and util.py
splits a node name at its last '-'."""
PARTITION_NAME = r"[a-z][a-z0-9-]{0,29}"
LOGIN_GROUP_NAME = NODESET_NAME
"""Login VMs are `<cluster>-<group>-<index>`; util.py turns each '-' of a group's script
name into a folder, so a group name has none."""

DEFAULT_SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)
SLURM_RELEASE = "25.11.4"
"""The Slurm the pinned image family runs (slurm-gcp 6.12.2 ansible defaults): what reads the
rendered slurm.conf and cloud.conf."""
MAX_NODES_PER_NODESET = 1024
"""A bound of this program's, so that a typo in a count is refused before anything is made."""
MAX_NODESETS = 32
"""Nodesets of each kind, partitions, and the nodesets of one partition: a bound of this
program's (Slurm sets none), so that the cross-checks of nodesets stay small."""
MAX_LOGIN_GROUPS = 8
"""Login groups of a cluster: a bound of this program's."""
MAX_MOUNTS = 16
"""`networkStorage` and `storage` of the cluster, a login group or a nodeset: a bound of this
program's; Slurm-GCP mounts each in turn while a VM boots."""
MAX_JOB_SCRIPTS = 16
"""Prolog or epilog scripts of the cluster or a partition: a bound of this program's; slurmd
runs each in turn around every job."""
MAX_DATA_DISKS = 16
"""Data disks of a TPU nodeset's VMs: a bound of this program's."""
MAX_ADDITIONAL_DISKS = 8
"""Additional disks of a CPU nodeset's VMs: a bound of this program's, under Compute Engine's
127 besides the boot disk."""
MAX_SCOPES = 20
"""OAuth scopes of a nodeset's VMs: a bound of this program's; cloud-platform covers all."""
MAX_ZONES = 8
"""Zones a nodeset may place VMs in: a bound of this program's, above the zones of any
region."""
MAX_SCHEDULER_PARAMETERS = 40
"""`SchedulerParameters` entries: a bound of this program's."""
ACCOUNT_ROLES = ("ctl", "tpu", "lgn", "cpu")
"""The cluster's accounts: controller, TPU nodes, login nodes, CPU nodes (the last made only
when a CPU nodeset runs as it)."""
SCRIPT_TIMEOUT_MAX = 3600
SLURM_DIRS = ("/slurm",)
"""Where Slurm's scripts live, beside the OS's (`types.SYSTEM_DIRS`, which hold its state
under /var/spool/slurm): no mount at or under these."""
SCHEDMD_IMAGE_PROJECT = scripts.IMAGE_PROJECT


def pattern_of(pattern: str, what: str) -> AfterValidator:
    return matching(pattern, f"is not {what}")


ClusterName = Annotated[
    str,
    pattern_of(
        CLUSTER_NAME,
        "a Slurm cluster name: a lowercase letter, then up to 19 lowercase letters, digits or "
        "'-', ending with a letter or digit (Slurm-GCP's rule; it is every VM's network tag)",
    ),
]
NodesetName = Annotated[
    str,
    pattern_of(
        NODESET_NAME,
        "a nodeset name: a lowercase letter, then up to 14 lowercase letters or digits (no '-')",
    ),
]
LoginGroupName = Annotated[
    str,
    pattern_of(
        LOGIN_GROUP_NAME,
        "a login group name: a lowercase letter, then up to 14 lowercase letters or digits "
        "(no '-')",
    ),
]
PartitionName = Annotated[
    str,
    pattern_of(
        PARTITION_NAME,
        "a partition name: a lowercase letter, then up to 29 lowercase letters, digits, '-'",
    ),
]
NodeType = Annotated[
    str,
    pattern_of(
        r"v[0-9a-z]+-[1-9][0-9]{0,4}",
        "a TPU type as the TPU API spells it: lowercase, no leading zeros, e.g. v4-8, v2-32",
    ),
]
Topology = Annotated[
    str,
    pattern_of(r"[1-9]x[1-9](x[1-9])?", "a topology of one-digit dimensions, e.g. 2x2 or 2x2x4"),
]
Scope = Annotated[
    str,
    pattern_of(
        r"https://www\.googleapis\.com/auth/[a-z][-a-z0-9._]*",
        "an OAuth scope such as https://www.googleapis.com/auth/cloud-platform",
    ),
]


CONF_KEY = r"[A-Za-z]{2,40}"
CONF_VALUE = r"[A-Za-z0-9_.:,/*+=-]{1,200}"
ConfKey = Annotated[str, pattern_of(CONF_KEY, "a slurm.conf option such as MaxTime")]
ConfValue = Annotated[
    str,
    pattern_of(
        CONF_VALUE,
        "a slurm.conf value: letters, digits and _.:,/*+=- only, no spaces or newlines",
    ),
]
"""One slurm.conf value: no spaces, quotes or newlines, so a value cannot add a line."""
ScriptText = Annotated[str, StringConstraints(max_length=65536)]


def tagged_image(image: str) -> str:
    if not image_has_tag_or_digest(image):
        raise ValueError(
            f"'{image}' names no tag or digest; write REGISTRY/PATH:TAG, e.g. "
            "us-docker.pkg.dev/PROJECT/REPO/IMAGE:TAG"
        )
    return image


def _no_climbing(path: str) -> str:
    if ".." in path.split("/") or "//" in path:
        raise ValueError(
            f"'{path}' climbs out of the export with '..' or has an empty segment; write the "
            "export path as the server names it, e.g. /export/home"
        )
    return path


def not_reserved(path: str) -> str:
    if reserved := shadowed_dir(path, SLURM_DIRS):
        raise ValueError(
            f"'{path}' would hide {reserved} of the VMs' system or Slurm's own files; "
            "mount under another directory, e.g. /shared or /data"
        )
    return path


ScriptsMirror = Annotated[
    str,
    pattern_of(
        r"gs://[a-z0-9][-_.a-z0-9]{1,61}[a-z0-9](/[A-Za-z0-9._-]+)*|/[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*",
        "a mirror of the scripts: a Cloud Storage folder such as gs://my-bucket/slurm-scripts, "
        "or an absolute local folder such as /srv/slurm-scripts",
    ),
    AfterValidator(_no_climbing),
]


class NetworkStorage(ConfigModel):
    """A file system the VMs mount (Slurm-GCP `network_storage`)."""

    server_ip: Annotated[
        str,
        pattern_of(
            r"[A-Za-z0-9](?:[-A-Za-z0-9.]{0,251}[A-Za-z0-9])?(?:@[a-z0-9]{1,16})?",
            "a server address or hostname (Lustre: ADDRESS@tcp)",
        ),
    ]
    """The file server's address or host name (for gcsfuse, unused: the bucket is `remoteMount`)."""
    remote_mount: Annotated[
        str,
        pattern_of(r"[A-Za-z0-9._/-]{1,255}", "an export path or bucket name"),
        AfterValidator(_no_climbing),
    ]
    """The export path on the server, or the bucket name for gcsfuse."""
    local_mount: Annotated[MountPath, AfterValidator(not_reserved)]
    """Where it is mounted on each VM: an absolute path outside the system's and Slurm's
    directories."""
    fs_type: Literal["nfs", "lustre", "gcsfuse", "cifs"]
    """The file system type: `nfs`, `lustre`, `gcsfuse` or `cifs`."""
    mount_options: Annotated[
        str, pattern_of(r"[A-Za-z0-9,=._:-]{0,255}", "comma-separated mount options")
    ] = ""
    """Comma-separated mount options, e.g. `defaults,_netdev`."""


def needs_unsigned_modules(
    storage: list[NetworkStorage],
    mounts: Sequence[StorageMount] = (),
    lustre: Collection[str] = (),
) -> bool:
    """Lustre's client is a kernel module SchedMD's image does not sign for Secure Boot: a
    `network_storage` entry of it, or a mount of a volume named in `lustre` (the
    `ai-infra:storage` Lustre volumes)."""
    return any(s.fs_type == "lustre" for s in storage) or any(m.volume in lustre for m in mounts)


class NodeImage(ConfigModel):
    """A boot image for a nodeset's VMs, by family or by name: one that runs Slurm-GCP v6
    (SchedMD's, or one built from it)."""

    project: ImageProject = SCHEDMD_IMAGE_PROJECT
    """The project publishing the image."""
    family: GceName | None = None
    """The image family; the newest image of it is used when a VM is created."""
    name: GceName | None = None
    """One image by name, instead of `family`."""

    @property
    def path(self) -> str:
        if self.name is not None:
            return f"projects/{self.project}/global/images/{self.name}"
        return f"projects/{self.project}/global/images/family/{self.family}"


class JobScript(ConfigModel):
    """A script Slurm runs around every job, on the job's nodes."""

    name: Annotated[
        str,
        pattern_of(
            r"[a-z0-9][-_a-z0-9]{0,40}\.[a-z0-9]{1,8}",
            "a script file name with one extension, e.g. gpu-check.sh",
        ),
    ]
    """File name; Slurm runs the scripts in name order."""
    content: Annotated[ScriptText, StringConstraints(min_length=2)]
    """The script, starting with its `#!` line."""
