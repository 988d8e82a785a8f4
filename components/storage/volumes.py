"""A team's volumes on GKE: for every volume granted to it, a PersistentVolume bound to one claim
in the team's namespace, read-only or read-write as granted, through the volume's CSI driver
(Cloud Storage FUSE, Filestore, Managed Lustre); and for a bucket the object role the team's
Workload Identity needs, on that bucket only. Each team's volumes are one component, so a
grant touches that team alone.
"""

from __future__ import annotations

from collections.abc import Mapping

import pulumi
import pulumi_kubernetes as k8s
from pydantic import InstanceOf, SkipValidation

from components.base import Component, WiringModel
from components.buckets import ACCESS_ROLES, BucketsHandle, grant_named_access
from components.storage.config import Access, Storage, Volume
from components.storage.mounts import Endpoint, claim_name, gke_mount_options, volume_name

DRIVERS = {
    "gcs": "gcsfuse.csi.storage.gke.io",
    "filestore": "filestore.csi.storage.gke.io",
    "lustre": "lustre.csi.storage.gke.io",
}
"""The CSI driver of each kind, as GKE's add-ons register them."""
BUCKET_CAPACITY = "5Gi"
"""A bucket has no size; Kubernetes wants one on a PersistentVolume and its claim, and the
Cloud Storage FUSE driver ignores it."""
GCS_PV_ATTRIBUTES = {
    # Lists the bucket once at mount time into the metadata cache the profiles keep for ever
    # (gcs-fuse-csi-driver storageclass.yaml, both profiles).
    "gcsfuseMetadataPrefetchOnMount": "true",
}
"""A bucket PersistentVolume's CSI attributes, which workloads' inline mounts of a bucket take
too."""
TEAM_LABEL = "ai-infra/team"
VOLUME_LABEL = "ai-infra/volume"


def csi_source(volume: Volume, endpoint: Endpoint, *, project: str, read_only: bool):
    """The PersistentVolume's `csi` block for a volume's driver: the bucket; the Filestore
    instance and share (gcp-filestore-csi-driver examples/kubernetes/pre-provision); the Lustre
    instance, address and file system (lustre-csi-driver examples/pre-prov)."""
    if volume.kind == "gcs":
        return k8s.core.v1.CSIPersistentVolumeSourceArgs(
            driver=DRIVERS["gcs"],
            volume_handle=endpoint.remote,
            read_only=read_only,
            volume_attributes=GCS_PV_ATTRIBUTES,
        )
    if volume.kind == "filestore":
        share = endpoint.remote.lstrip("/")
        return k8s.core.v1.CSIPersistentVolumeSourceArgs(
            driver=DRIVERS["filestore"],
            volume_handle=f"modeInstance/{volume.location}/{volume.instance}/{share}",
            read_only=read_only,
            volume_attributes={"ip": endpoint.address, "volume": share},
        )
    return k8s.core.v1.CSIPersistentVolumeSourceArgs(
        driver=DRIVERS["lustre"],
        volume_handle=f"{project}/{volume.location}/{volume.instance}",
        read_only=read_only,
        volume_attributes={"ip": endpoint.address, "filesystem": endpoint.remote.lstrip("/")},
    )


def capacity(volume: Volume, endpoint: Endpoint) -> str:
    return BUCKET_CAPACITY if volume.kind == "gcs" else f"{endpoint.capacity_gib}Gi"


class TeamVolumesArgs(WiringModel):
    storage: InstanceOf[Storage]
    team: str
    grants: Mapping[str, Access]
    """Volume name -> the team's access."""
    endpoints: Mapping[str, SkipValidation[pulumi.Output[Endpoint]]]
    namespace: SkipValidation[pulumi.Resource]
    """The team's namespace, which the claims wait for."""
    member: str
    """The team's Google service account, `serviceAccount:<email>`."""
    buckets: InstanceOf[BucketsHandle]
    waits_for: Mapping[str, SkipValidation[pulumi.Resource]] = {}
    """Volume name -> the instance its PersistentVolume waits for."""


class TeamVolumes(Component):
    """One team's PersistentVolumes, claims and bucket grants."""

    claims: dict[str, k8s.core.v1.PersistentVolumeClaim]

    def __init__(
        self, name: str, args: TeamVolumesArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__("ai-infra:storage:TeamVolumes", name, opts)
        storage = args.storage
        self.claims = {}
        for volume_key, access in sorted(args.grants.items()):
            volume = storage.volumes[volume_key]
            read_only = access == "read"
            grants = self._bucket_grant(name, args, volume, access) if volume.kind == "gcs" else []
            self.claims[volume_key] = self._volume(
                name, args, volume, read_only=read_only, after=grants
            )
        self.register_outputs({"claims": sorted(self.claims)})

    def _volume(
        self,
        name: str,
        args: TeamVolumesArgs,
        volume: Volume,
        *,
        read_only: bool,
        after: list[pulumi.Resource],
    ) -> k8s.core.v1.PersistentVolumeClaim:
        team = args.team
        endpoint = args.endpoints[volume.name]
        pv_name = volume_name(team, volume.name)
        claim = claim_name(volume.name)
        modes = ["ReadOnlyMany" if read_only else "ReadWriteMany"]
        labels = {TEAM_LABEL: team, VOLUME_LABEL: volume.name}
        size = endpoint.apply(lambda e: capacity(volume, e))
        waits = [*after, *([args.waits_for[volume.name]] if volume.name in args.waits_for else [])]
        pv = k8s.core.v1.PersistentVolume(
            f"{name}-{volume.name}-pv",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=pv_name, labels=labels),
            spec=k8s.core.v1.PersistentVolumeSpecArgs(
                access_modes=modes,
                capacity={"storage": size},
                # Bound to this team's claim alone: no other namespace can claim it.
                claim_ref=k8s.core.v1.ObjectReferenceArgs(namespace=team, name=claim),
                persistent_volume_reclaim_policy="Retain",
                storage_class_name="",
                volume_mode="Filesystem",
                mount_options=(
                    [*gke_mount_options(volume.config.profile), *(["ro"] if read_only else [])]
                    if volume.kind == "gcs"
                    else None
                ),
                csi=endpoint.apply(
                    lambda e: csi_source(
                        volume, e, project=args.storage.context.project, read_only=read_only
                    )
                ),
            ),
            opts=self.child_opts(depends_on=waits),
        )
        return k8s.core.v1.PersistentVolumeClaim(
            f"{name}-{volume.name}-pvc",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=claim, namespace=team, labels=labels),
            spec=k8s.core.v1.PersistentVolumeClaimSpecArgs(
                access_modes=modes,
                storage_class_name="",
                volume_name=pv_name,
                resources=k8s.core.v1.VolumeResourceRequirementsArgs(requests={"storage": size}),
            ),
            # A claim without a StorageClass cannot be resized (Kubernetes'
            # PersistentVolumeClaimResize admission): a grown share or instance grows its
            # PersistentVolume's capacity, and the claim bound to it keeps its request.
            opts=self.child_opts(
                depends_on=[args.namespace, pv], ignore_changes=["spec.resources.requests"]
            ),
        )

    def _bucket_grant(
        self, name: str, args: TeamVolumesArgs, volume: Volume, access: Access
    ) -> list[pulumi.Resource]:
        """objectViewer to read, objectUser to write, on this bucket only."""
        bucket = volume.bucket_key or volume.instance
        return [
            grant_named_access(
                self, name, args.buckets, bucket, role=ACCESS_ROLES[access], member=args.member
            )
        ]
