"""The stack config schema root: every `ai-infra:` key as a typed model, and where each
system's part of it, with the stack context, is resolved once (`StackConfig.context`,
`StackConfig.gke`). Loading and checking live in `loading.py` and `checks.py`.
"""

from __future__ import annotations

from functools import cached_property

from pydantic import Field

from components.base import MAX_ENTRIES, ConfigModel
from components.buckets import BucketConfig
from components.context import StackContext
from components.gke import (
    ClusterConfig,
    GkeConfig,
    GpuPoolConfig,
    KueueConfig,
    TeamConfig,
    TpuProvisionerConfig,
    TpuSliceConfig,
    WorkloadIdentityConfig,
)
from components.gpu_clusters import GpuClusterConfig
from components.monitoring import MonitoringConfig
from components.network import NetworkConfig
from components.slurm import SlurmConfig
from components.storage import Storage, StorageConfig
from components.tpu_vms import TpuVmConfig
from components.types import DnsLabel, Labels, ProjectId, Region, Zone
from stacks.messages import GCP_KEYS, key_of


class StackConfig(ConfigModel):
    """The whole validated config of one stack."""

    project: ProjectId
    """The Google Cloud project every resource is created in."""
    region: Region
    """Region of the cluster, subnet, NAT and workload policies."""
    zone: Zone
    """Default zone of TPU slices and GPU pools; the cluster's zone when `cluster.regional` is
    false."""
    prefix: DnsLabel = Field(max_length=20)
    """Prefix of every cloud resource name (a DNS label of at most 20 characters)."""
    protect: bool = True
    """Pulumi `protect` on the cluster and buckets, the cluster's `deletionProtection` (which
    the provider enforces, not GKE), and refusal of bucket `forceDestroy`. Set `false` only for
    throwaway stacks."""
    labels: Labels = Field(default_factory=dict)
    """Labels on every cloud resource that takes them, e.g. cost-center. The program adds
    `managed-by` and `ai-infra-stack`, and pulumi-gcp `goog-pulumi-provisioned`, so at most
    61 are yours (GCP allows 64)."""
    network: NetworkConfig = Field(default_factory=NetworkConfig)
    """Address plan and control-plane access. The subnet, pods, services and control-plane
    ranges must be disjoint."""
    cluster: ClusterConfig = Field(default_factory=ClusterConfig)
    """The GKE cluster and its CPU pool; `enabled: false` builds no GKE."""
    tpu_slices: list[TpuSliceConfig] = Field(default_factory=list, max_length=MAX_ENTRIES)
    """TPU slices, each one or more GKE node pools."""
    gpu_pools: list[GpuPoolConfig] = Field(default_factory=list, max_length=MAX_ENTRIES)
    """GPU node pools."""
    gpu_clusters: list[GpuClusterConfig] = Field(default_factory=list, max_length=MAX_ENTRIES)
    """GPU clusters as managed instance groups, as Google's cluster provisioning tool made."""
    buckets: list[BucketConfig] = Field(default_factory=list, max_length=MAX_ENTRIES)
    """GCS buckets. Uniform bucket-level access and public access prevention are always on."""
    workload_identities: list[WorkloadIdentityConfig] = Field(
        default_factory=list, max_length=MAX_ENTRIES
    )
    """Google service accounts for Kubernetes workloads. Each one's Kubernetes service account
    is created in the cluster and annotated with the Google service account."""
    tpu_provisioner: TpuProvisionerConfig = Field(default_factory=TpuProvisionerConfig)
    """The identity of GKE's open-source TPU provisioner, which creates slice node pools on
    demand."""
    kueue: KueueConfig = Field(default_factory=KueueConfig)
    """Cluster-wide queueing policy."""
    teams: list[TeamConfig] = Field(default_factory=list, max_length=MAX_ENTRIES)
    """Teams onboarded onto the cluster: each gets a namespace, a ClusterQueue and LocalQueue
    with its share of the slices, a Google service account and the access it lists."""
    tpu_vms: list[TpuVmConfig] = Field(default_factory=list, max_length=MAX_ENTRIES)
    """TPU VM slices outside GKE, each a Cloud TPU queued resource of one or more slices."""
    slurm: SlurmConfig | None = None
    """A Slurm-GCP v6 cluster with CPU and Cloud TPU nodesets."""
    storage: StorageConfig = Field(default_factory=StorageConfig)
    """Volumes for training data and checkpoints (buckets, Filestore shares, Managed Lustre
    instances), created or attached, which teams and systems mount by name."""
    monitoring: MonitoringConfig = Field(default_factory=MonitoringConfig)
    """Dashboards and alert policies derived from the stack, their notification channels and
    thresholds, and Managed Service for Prometheus scrapes of Kueue and JobSet."""

    # What each system receives, resolved here and nowhere else.

    @cached_property
    def context(self) -> StackContext:
        return StackContext(
            project=self.project,
            region=self.region,
            zone=self.zone,
            prefix=self.prefix,
            protect=self.protect,
            stack_labels=dict(self.labels),
        )

    @cached_property
    def gke(self) -> GkeConfig:
        return GkeConfig(
            context=self.context,
            cluster=self.cluster,
            tpu_slices=self.tpu_slices,
            gpu_pools=self.gpu_pools,
            workload_identities=self.workload_identities,
            tpu_provisioner=self.tpu_provisioner,
            kueue=self.kueue,
            teams=self.teams,
            network=self.network,
            lustre_csi_driver=any(
                v.kind == "lustre" and v.config.teams
                for v in self.resolved_storage.volumes.values()
            ),
        )

    @cached_property
    def resolved_storage(self) -> Storage:
        return Storage(context=self.context, config=self.storage, bucket_names=self.bucket_names())

    def bucket_names(self) -> dict[str, str]:
        """`ai-infra:buckets` name -> the bucket's GCS name."""
        return {b.name: b.bucket_name(self.project, self.prefix) for b in self.buckets}


def stack_keys() -> list[str]:
    """The `ai-infra:` keys a stack file may set, as written there."""
    return [key_of(n, i) for n, i in StackConfig.model_fields.items() if n not in GCP_KEYS]
