"""The GKE cluster: VPC-native, private nodes, Workload Identity, shielded nodes, the default
pool removed, a least-privilege node service account and the CPU pool that runs controllers.
Accelerator pools live in `tpu_slices.py` and `gpu_pools.py`; they share `node_config()`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

import pulumi
import pulumi_gcp as gcp
import yaml
from pydantic import Field, SkipValidation, field_validator, model_validator

from components.base import (
    Component,
    ConfigModel,
    DnsLabel,
    Provisioning,
    WiringModel,
    service_account_email,
)
from components.network import NetworkConfig

NODE_SA_ROLES: tuple[str, ...] = (
    "roles/logging.logWriter",
    "roles/monitoring.metricWriter",
    "roles/monitoring.viewer",
    "roles/stackdriver.resourceMetadata.writer",
    "roles/artifactregistry.reader",
)
"""What a GKE node needs: write logs and metrics, read images. Nothing else."""

CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
ReleaseChannel = Literal["RAPID", "REGULAR", "STABLE", "EXTENDED", "NONE"]


class CpuPoolConfig(ConfigModel):
    """`ai-infra:cluster.cpuPool`: the pool for system pods, Kueue and JobSet controllers."""

    machine_type: str = "e2-standard-8"
    disk_size_gb: int = Field(default=100, ge=10, le=65536)
    disk_type: Literal["pd-standard", "pd-balanced", "pd-ssd"] = "pd-balanced"
    min_nodes: int = Field(default=1, ge=0)
    """Per zone of the cluster."""
    max_nodes: int = Field(default=3, ge=1)
    """Per zone of the cluster."""
    spot: bool = False


class MaintenanceExclusion(ConfigModel):
    """A period in which GKE must not upgrade (e.g. a training campaign on the slices)."""

    name: DnsLabel
    start: str
    """RFC 3339, e.g. 2026-12-01T00:00:00Z."""
    end: str | None = None
    """RFC 3339; omitted means until the cluster's minor version leaves support."""
    scope: Literal["NO_UPGRADES", "NO_MINOR_UPGRADES", "NO_MINOR_OR_NODE_UPGRADES"] = (
        "NO_MINOR_OR_NODE_UPGRADES"
    )
    """NO_MINOR_OR_NODE_UPGRADES keeps nodes, and so running slices, untouched."""

    @field_validator("start", "end")
    @classmethod
    def _rfc3339(cls, value: str | None) -> str | None:
        if value is None:
            return value
        try:
            datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(
                f"'{value}' is not an RFC 3339 time; write e.g. 2026-12-01T00:00:00Z"
            ) from None
        return value

    @model_validator(mode="after")
    def _bounded_no_upgrades(self) -> MaintenanceExclusion:
        if self.scope == "NO_UPGRADES" and self.end is None:
            raise ValueError("@end: scope NO_UPGRADES needs an end (GKE allows at most 30 days)")
        return self


class ClusterConfig(ConfigModel):
    """`ai-infra:cluster`."""

    name: str | None = None
    """Cluster name; defaults to `<prefix>-gke`."""
    regional: bool = True
    """A regional control plane survives a zone outage; zonal clusters are cheaper for dev."""
    release_channel: ReleaseChannel = "REGULAR"
    """`NONE` opts out of channels (needed by the TPU provisioner); node auto-upgrade is then
    off so GKE never recreates a running slice on its own."""
    version: str | None = None
    """Minimum control-plane version, e.g. `1.33` (a floor, not a pin); defaults to the
    channel's default."""
    cpu_pool: CpuPoolConfig = Field(default_factory=CpuPoolConfig)
    dataplane_v2: bool = True
    gcs_fuse_csi_driver: bool = True
    image_streaming: bool = True
    deletion_protection: bool | None = None
    """GKE-side deletion protection; defaults to `ai-infra:protect`."""
    max_pods_per_node: int = Field(default=110, ge=8, le=256)
    maintenance_start_time: str = "03:00"
    """Daily four-hour maintenance window start, UTC, HH:MM."""
    maintenance_exclusions: list[MaintenanceExclusion] = Field(default_factory=list)
    """On a release channel GKE must auto-upgrade nodes, which recreates a running slice;
    an exclusion with scope NO_MINOR_OR_NODE_UPGRADES holds node upgrades off."""
    rbac_security_group: str | None = None
    """`gke-security-groups@<domain>`: enables Google Groups for RBAC, which team `groups`
    need; the teams' groups must be members of it."""

    @field_validator("maintenance_start_time")
    @classmethod
    def _hh_mm(cls, value: str) -> str:
        hours, _, minutes = value.partition(":")
        if not (
            hours.isdigit()
            and minutes.isdigit()
            and int(hours) < 24
            and int(minutes) < 60
            and len(hours) == 2
            and len(minutes) == 2
        ):
            raise ValueError(
                f"'{value}' is not a time of day; write it as HH:MM in UTC, e.g. 03:00"
            )
        return value


def pods_per_node_prefix(max_pods_per_node: int) -> int:
    """Prefix length GKE gives each node from the pods range: twice the pod count, rounded up
    to a power of two (110 pods -> /24)."""
    return 32 - (2 * max_pods_per_node - 1).bit_length()


def node_config(
    *,
    service_account: pulumi.Input[str],
    machine_type: str,
    disk_size_gb: int,
    disk_type: str,
    labels: dict[str, str],
    resource_labels: dict[str, str],
    image_streaming: bool,
    provisioning: Provisioning = "on-demand",
    reservation: str | None = None,
    taints: list[gcp.container.NodePoolNodeConfigTaintArgs] | None = None,
    guest_accelerators: list[gcp.container.NodePoolNodeConfigGuestAcceleratorArgs] | None = None,
) -> gcp.container.NodePoolNodeConfigArgs:
    """Node settings every pool shares: dedicated SA, GKE metadata server, shielded VM, gVNIC.

    `labels` are Kubernetes node labels; `resource_labels` are GCP labels on the VMs (no '/').
    """
    reservation_affinity = None
    if provisioning == "reservation":
        reservation_affinity = gcp.container.NodePoolNodeConfigReservationAffinityArgs(
            consume_reservation_type="SPECIFIC_RESERVATION",
            key="compute.googleapis.com/reservation-name",
            values=[reservation or ""],
        )
    elif provisioning == "flex-start":
        reservation_affinity = gcp.container.NodePoolNodeConfigReservationAffinityArgs(
            consume_reservation_type="NO_RESERVATION"
        )
    return gcp.container.NodePoolNodeConfigArgs(
        machine_type=machine_type,
        disk_size_gb=disk_size_gb,
        disk_type=disk_type,
        image_type="COS_CONTAINERD",
        service_account=service_account,
        oauth_scopes=[CLOUD_PLATFORM_SCOPE],
        labels=labels,
        resource_labels=resource_labels,
        taints=taints,
        guest_accelerators=guest_accelerators,
        spot=True if provisioning == "spot" else None,
        flex_start=True if provisioning == "flex-start" else None,
        reservation_affinity=reservation_affinity,
        workload_metadata_config=gcp.container.NodePoolNodeConfigWorkloadMetadataConfigArgs(
            mode="GKE_METADATA"
        ),
        shielded_instance_config=gcp.container.NodePoolNodeConfigShieldedInstanceConfigArgs(
            enable_secure_boot=True, enable_integrity_monitoring=True
        ),
        gvnic=gcp.container.NodePoolNodeConfigGvnicArgs(enabled=True),
        gcfs_config=gcp.container.NodePoolNodeConfigGcfsConfigArgs(enabled=image_streaming),
        metadata={"disable-legacy-endpoints": "true"},
    )


class GkeClusterArgs(WiringModel):
    project: str
    region: str
    zone: str
    prefix: str
    protect: bool
    labels: dict[str, str]
    config: ClusterConfig
    network: NetworkConfig
    network_self_link: SkipValidation[pulumi.Output[str]]
    subnet_self_link: SkipValidation[pulumi.Output[str]]
    pods_range_name: str
    services_range_name: str

    @property
    def cluster_name(self) -> str:
        return self.config.name or f"{self.prefix}-gke"

    @property
    def location(self) -> str:
        return self.region if self.config.regional else self.zone


class GkeCluster(Component):
    """The cluster, its node service account and its CPU pool."""

    cluster: gcp.container.Cluster
    cpu_pool: gcp.container.NodePool
    node_service_account: gcp.serviceaccount.Account
    node_service_account_email: str
    auto_upgrade: bool
    """Whether node pools auto-upgrade; GKE requires it on a release channel."""
    kubeconfig: pulumi.Output[str]

    def __init__(self, name: str, args: GkeClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ai-infra:gke:Cluster", name, opts)
        config = args.config
        self.args = args
        self.auto_upgrade = config.release_channel != "NONE"

        node_account_id = f"{args.prefix}-nodes"
        self.node_service_account = gcp.serviceaccount.Account(
            f"{name}-nodes",
            project=args.project,
            account_id=node_account_id,
            display_name=f"GKE nodes of {args.cluster_name}",
            opts=self.child_opts(),
        )
        self.node_service_account_email = service_account_email(node_account_id, args.project)
        node_roles = [
            gcp.projects.IAMMember(
                f"{name}-nodes-{role.split('/')[-1]}",
                project=args.project,
                role=role,
                member=f"serviceAccount:{self.node_service_account_email}",
                opts=self.child_opts(depends_on=[self.node_service_account]),
            )
            for role in NODE_SA_ROLES
        ]

        deletion_protection = (
            args.protect if config.deletion_protection is None else config.deletion_protection
        )
        self.cluster = gcp.container.Cluster(
            f"{name}-cluster",
            project=args.project,
            name=args.cluster_name,
            location=args.location,
            network=args.network_self_link,
            subnetwork=args.subnet_self_link,
            networking_mode="VPC_NATIVE",
            ip_allocation_policy=gcp.container.ClusterIpAllocationPolicyArgs(
                cluster_secondary_range_name=args.pods_range_name,
                services_secondary_range_name=args.services_range_name,
            ),
            default_max_pods_per_node=config.max_pods_per_node,
            private_cluster_config=gcp.container.ClusterPrivateClusterConfigArgs(
                enable_private_nodes=True,
                enable_private_endpoint=False,
                master_ipv4_cidr_block=args.network.master_cidr,
                master_global_access_config=(
                    gcp.container.ClusterPrivateClusterConfigMasterGlobalAccessConfigArgs(
                        enabled=True
                    )
                ),
            ),
            master_authorized_networks_config=gcp.container.ClusterMasterAuthorizedNetworksConfigArgs(
                cidr_blocks=[
                    gcp.container.ClusterMasterAuthorizedNetworksConfigCidrBlockArgs(
                        cidr_block=n.cidr, display_name=n.name
                    )
                    for n in args.network.authorized_networks
                ],
                gcp_public_cidrs_access_enabled=False,
            ),
            workload_identity_config=gcp.container.ClusterWorkloadIdentityConfigArgs(
                workload_pool=f"{args.project}.svc.id.goog"
            ),
            enable_shielded_nodes=True,
            # The default pool exists only while the cluster is created; it still must not run
            # as the default compute service account.
            remove_default_node_pool=True,
            initial_node_count=1,
            node_config=gcp.container.ClusterNodeConfigArgs(
                machine_type="e2-medium",
                service_account=self.node_service_account_email,
                oauth_scopes=[CLOUD_PLATFORM_SCOPE],
                workload_metadata_config=gcp.container.ClusterNodeConfigWorkloadMetadataConfigArgs(
                    mode="GKE_METADATA"
                ),
                shielded_instance_config=gcp.container.ClusterNodeConfigShieldedInstanceConfigArgs(
                    enable_secure_boot=True, enable_integrity_monitoring=True
                ),
            ),
            release_channel=gcp.container.ClusterReleaseChannelArgs(
                channel="UNSPECIFIED"
                if config.release_channel == "NONE"
                else config.release_channel
            ),
            min_master_version=config.version,
            datapath_provider="ADVANCED_DATAPATH" if config.dataplane_v2 else "LEGACY_DATAPATH",
            addons_config=gcp.container.ClusterAddonsConfigArgs(
                gcs_fuse_csi_driver_config=gcp.container.ClusterAddonsConfigGcsFuseCsiDriverConfigArgs(
                    enabled=config.gcs_fuse_csi_driver
                ),
                gce_persistent_disk_csi_driver_config=(
                    gcp.container.ClusterAddonsConfigGcePersistentDiskCsiDriverConfigArgs(
                        enabled=True
                    )
                ),
                gcp_filestore_csi_driver_config=(
                    gcp.container.ClusterAddonsConfigGcpFilestoreCsiDriverConfigArgs(enabled=True)
                ),
            ),
            node_pool_defaults=gcp.container.ClusterNodePoolDefaultsArgs(
                node_config_defaults=gcp.container.ClusterNodePoolDefaultsNodeConfigDefaultsArgs(
                    gcfs_config=gcp.container.ClusterNodePoolDefaultsNodeConfigDefaultsGcfsConfigArgs(
                        enabled=config.image_streaming
                    )
                )
            ),
            maintenance_policy=gcp.container.ClusterMaintenancePolicyArgs(
                daily_maintenance_window=(
                    gcp.container.ClusterMaintenancePolicyDailyMaintenanceWindowArgs(
                        start_time=config.maintenance_start_time
                    )
                ),
                maintenance_exclusions=[
                    gcp.container.ClusterMaintenancePolicyMaintenanceExclusionArgs(
                        exclusion_name=exclusion.name,
                        start_time=exclusion.start,
                        end_time=exclusion.end,
                        exclusion_options=(
                            gcp.container.ClusterMaintenancePolicyMaintenanceExclusionExclusionOptionsArgs(
                                scope=exclusion.scope,
                                end_time_behavior=(
                                    "UNTIL_END_OF_SUPPORT" if exclusion.end is None else None
                                ),
                            )
                        ),
                    )
                    for exclusion in config.maintenance_exclusions
                ]
                or None,
            ),
            logging_config=gcp.container.ClusterLoggingConfigArgs(
                enable_components=["SYSTEM_COMPONENTS", "WORKLOADS"]
            ),
            monitoring_config=gcp.container.ClusterMonitoringConfigArgs(
                enable_components=["SYSTEM_COMPONENTS"],
                managed_prometheus=gcp.container.ClusterMonitoringConfigManagedPrometheusArgs(
                    enabled=True
                ),
            ),
            authenticator_groups_config=(
                gcp.container.ClusterAuthenticatorGroupsConfigArgs(
                    security_group=config.rbac_security_group
                )
                if config.rbac_security_group
                else None
            ),
            resource_labels=args.labels,
            deletion_protection=deletion_protection,
            opts=self.child_opts(
                depends_on=node_roles,
                protect=args.protect,
                # The bootstrap pool's settings only matter at creation; a change to them
                # must never replace the cluster.
                ignore_changes=["nodeConfig", "initialNodeCount"],
            ),
        )

        cpu = config.cpu_pool
        self.cpu_pool = gcp.container.NodePool(
            f"{name}-cpu",
            project=args.project,
            cluster=self.cluster.name,
            location=args.location,
            name="cpu",
            initial_node_count=cpu.min_nodes,
            autoscaling=gcp.container.NodePoolAutoscalingArgs(
                min_node_count=cpu.min_nodes, max_node_count=cpu.max_nodes
            ),
            management=gcp.container.NodePoolManagementArgs(
                auto_repair=True, auto_upgrade=self.auto_upgrade
            ),
            upgrade_settings=gcp.container.NodePoolUpgradeSettingsArgs(
                strategy="SURGE", max_surge=1, max_unavailable=0
            ),
            node_config=node_config(
                service_account=self.node_service_account_email,
                machine_type=cpu.machine_type,
                disk_size_gb=cpu.disk_size_gb,
                disk_type=cpu.disk_type,
                labels={"ai-infra/pool": "cpu"},
                resource_labels=args.labels,
                image_streaming=config.image_streaming,
                provisioning="spot" if cpu.spot else "on-demand",
            ),
            opts=self.child_opts(ignore_changes=["initialNodeCount"]),
        )

        ca_certificate = self.cluster.master_auth.apply(lambda auth: auth.cluster_ca_certificate)
        self.kubeconfig = pulumi.Output.secret(
            pulumi.Output.all(self.cluster.name, self.cluster.endpoint, ca_certificate).apply(
                lambda parts: _kubeconfig(parts[0], parts[1], parts[2])
            )
        )
        self.register_outputs(
            {
                "name": self.cluster.name,
                "endpoint": self.cluster.endpoint,
                "nodeServiceAccount": self.node_service_account_email,
            }
        )


def _kubeconfig(name: str, endpoint: str, ca: str | None) -> str:
    """A kubeconfig that authenticates with gke-gcloud-auth-plugin, never a static token."""
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": name,
                    "cluster": {"server": f"https://{endpoint}", "certificate-authority-data": ca},
                }
            ],
            "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
            "current-context": name,
            "users": [
                {
                    "name": name,
                    "user": {
                        "exec": {
                            "apiVersion": "client.authentication.k8s.io/v1beta1",
                            "command": "gke-gcloud-auth-plugin",
                            "provideClusterInfo": True,
                            "installHint": "gcloud components install gke-gcloud-auth-plugin",
                        }
                    },
                }
            ],
        },
        sort_keys=False,
    )
