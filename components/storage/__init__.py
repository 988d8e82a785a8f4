"""Storage for training data and checkpoints, one model for every system (`ai-infra:storage`):
buckets, Filestore shares and Managed Lustre instances, created or attached, mounted by name.
This face declares the registry entry (`SYSTEM`) and what other systems use: they check their
`storage` lists with `mount_problems()` and write their mounts from `StorageHandle` endpoints
and the boot pieces (`VolumeMount`, `LocalScratch`, `block`, `LIBRARY`).
"""

from components.storage import system
from components.storage.boot import (
    GCSFUSE_CACHE,
    GCSFUSE_VERSION,
    LIBRARY,
    SCRATCH_PATH,
    LocalScratch,
    VolumeMount,
    block,
)
from components.storage.checks import mount_problems, mounts_lustre, nested, problems, warnings
from components.storage.config import Storage, StorageConfig, StorageMount, Volume, VolumeConfig
from components.storage.instances import STORAGE_SERVICES, StorageHandle
from components.storage.mounts import (
    Endpoint,
    TeamMount,
    gcsfuse_flags,
    gke_mount_options,
    network_storage_entry,
    team_mounts,
)
from components.storage.system import build, build_team_volumes, describe
from components.storage.volumes import GCS_PV_ATTRIBUTES, TeamVolumes
from components.system import Stage, Step, System

SYSTEM = System(
    name="storage",
    title="Storage",
    keys=("storage",),
    problems=system.problems,
    warnings=system.warnings,
    claims=system.claims,
    services=system.services,
    builds=(
        Step(Stage.STORAGE, "storage", system.build_instances),
        Step(Stage.ON_CLUSTER, "team_volumes", system.build_volumes),
    ),
    describe=system.sections,
    outputs=system.outputs,
)
"""Built before the systems that mount its volumes, and its teams' volumes after the cluster."""

__all__ = [
    "GCSFUSE_CACHE",
    "GCSFUSE_VERSION",
    "GCS_PV_ATTRIBUTES",
    "LIBRARY",
    "SCRATCH_PATH",
    "STORAGE_SERVICES",
    "SYSTEM",
    "Endpoint",
    "LocalScratch",
    "Storage",
    "StorageConfig",
    "StorageHandle",
    "StorageMount",
    "TeamMount",
    "TeamVolumes",
    "Volume",
    "VolumeConfig",
    "VolumeMount",
    "block",
    "build",
    "build_team_volumes",
    "describe",
    "gcsfuse_flags",
    "gke_mount_options",
    "mount_problems",
    "mounts_lustre",
    "nested",
    "network_storage_entry",
    "problems",
    "team_mounts",
    "warnings",
]
