"""The team's buckets in a JobSet: each bucket the stack grants the team, mounted by the Cloud
Storage FUSE CSI driver as an inline volume at `/gcs/<bucket>`, read-only with the options for
reading training data when the team may only read it, read-write with the options for writing
checkpoints when it may write. `team_mounts` is the one place a job's storage comes from.

Mount options are the GKE guide's ("Optimize Cloud Storage FUSE CSI driver for GKE
performance": metadata caches without expiry or size limit for data that does not change
under the job, and for checkpoints a negative-entry cache of 0 so a new checkpoint is seen at
once, and a rename limit for directory renames). No file cache: it would need a cache volume
sized to the node, which the stack does not declare. Volume attributes are the driver's
(gcs-fuse-csi-driver pkg/csi_driver/utils.go at 5fcdc04a: `bucketName`, `mountOptions`,
`hostNetworkPodKSA`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from components.gke import TeamConfig
from stacks.config import StackConfig

MOUNT_ROOT = "/gcs"
DRIVER = "gcsfuse.csi.storage.gke.io"
SIDECAR_ANNOTATIONS = {
    "gke-gcsfuse/volumes": "true",
    # "0" lifts the sidecar's CPU, memory and ephemeral-storage limits; a training pod owns
    # its node ("Optimize Cloud Storage FUSE CSI driver for GKE performance").
    "gke-gcsfuse/cpu-limit": "0",
    "gke-gcsfuse/memory-limit": "0",
    "gke-gcsfuse/ephemeral-storage-limit": "0",
}
Profile = Literal["training", "checkpoints"]
MOUNT_OPTIONS: dict[Profile, tuple[str, ...]] = {
    "training": (
        "implicit-dirs",
        "metadata-cache:ttl-secs:-1",
        "metadata-cache:stat-cache-max-size-mb:-1",
        "metadata-cache:type-cache-max-size-mb:-1",
        "file-system:kernel-list-cache-ttl-secs:-1",
    ),
    "checkpoints": (
        "implicit-dirs",
        "metadata-cache:negative-ttl-secs:0",
        "metadata-cache:ttl-secs:-1",
        "metadata-cache:stat-cache-max-size-mb:-1",
        "metadata-cache:type-cache-max-size-mb:-1",
        "rename-dir-limit=200000",
    ),
}


@dataclass(frozen=True)
class Mounts:
    """What a pod template needs for its storage."""

    volumes: list[dict[str, Any]] = field(default_factory=list)
    volume_mounts: list[dict[str, Any]] = field(default_factory=list)
    annotations: dict[str, str] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    """What is mounted where, for the command's report."""


def team_mounts(
    config: StackConfig, team: TeamConfig, buckets: list[str], *, host_network: bool
) -> Mounts:
    """The volumes of the `ai-infra:buckets` entries `buckets` that `team` is granted. Call it
    once `bucket_problems` is empty."""
    names = config.bucket_names()
    volumes, mounts, lines = [], [], []
    for key in buckets:
        access = team.buckets[key]
        profile: Profile = "training" if access == "read" else "checkpoints"
        attributes = {
            "bucketName": names[key],
            "mountOptions": ",".join(MOUNT_OPTIONS[profile]),
        }
        if host_network:
            # Pods on the host network reach Workload Identity only through the driver's
            # token exchange for the pod's own service account.
            attributes["hostNetworkPodKSA"] = "true"
        volume = f"gcs-{key}"
        volumes.append(
            {
                "name": volume,
                "csi": {
                    "driver": DRIVER,
                    "readOnly": access == "read",
                    "volumeAttributes": attributes,
                },
            }
        )
        path = f"{MOUNT_ROOT}/{key}"
        mounts.append({"name": volume, "mountPath": path, "readOnly": access == "read"})
        mode = "read-only" if access == "read" else "read-write"
        lines.append(f"gs://{names[key]} at {path}, {mode}, {profile} mount options")
    annotations = dict(SIDECAR_ANNOTATIONS) if volumes else {}
    return Mounts(volumes, mounts, annotations, lines)


def bucket_problems(config: StackConfig, team: TeamConfig, buckets: list[str]) -> list[str]:
    """Why `buckets` cannot be mounted for `team`: names the stack does not have, or does not
    grant the team, and repeats."""
    found = []
    known = config.bucket_names()
    for i, key in enumerate(buckets):
        if key in buckets[:i]:
            found.append(f"'{key}' is listed twice")
        elif key not in known:
            found.append(
                f"the stack has no bucket '{key}' (ai-infra:buckets: {', '.join(known) or 'none'})"
            )
        elif key not in team.buckets:
            granted = ", ".join(team.buckets) or "none"
            found.append(
                f"bucket '{key}' is not granted to team {team.name} (it has: {granted}); grant "
                "it in the team's `buckets` in the stack file"
            )
    return found
