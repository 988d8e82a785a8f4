"""The GKE cluster: VPC-native, private nodes, Workload Identity, shielded nodes, the default
pool removed, a least-privilege node service account and the CPU pool that runs controllers.
Accelerator pools live in `tpu_slices.py` and `gpu_pools.py`; they share `node_config()`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Annotated, Literal

import pulumi
import pulumi_gcp as gcp
import yaml
from pydantic import AfterValidator, Field, SkipValidation

from components.base import (
    Component,
    ConfigModel,
    DnsLabel,
    PathPart,
    Problem,
    Provisioning,
    WiringModel,
    matching,
    service_account_email,
)
from components.locations import zone_problem
from components.network import NetworkConfig

NODE_SA_ROLES: tuple[str, ...] = (
    # GKE's minimum for a custom node service account: logs, metrics, autoscaling metrics
    # ("Configure GKE node service accounts"). It replaces the four legacy roles.
    "roles/container.defaultNodeServiceAccount",
    # Not in the role above: pulling images from Artifact Registry.
    "roles/artifactregistry.reader",
)
"""What a GKE node needs. Nothing else."""
IMAGE_STREAMING_ROLE = "roles/serviceusage.serviceUsageConsumer"
"""Image streaming with a custom node service account needs it on the project that hosts the
images ("Use Image streaming", requirements)."""


def node_roles(image_streaming: bool) -> tuple[str, ...]:
    return (*NODE_SA_ROLES, IMAGE_STREAMING_ROLE) if image_streaming else NODE_SA_ROLES


MAX_NODES_PER_POOL = 1000
"""GKE's limit of nodes per node pool per zone (GKE quotas and limits)."""
MAX_EXCLUSIONS = 20
"""GKE allows 20 maintenance exclusions per cluster (terraform-provider-google schema)."""
NO_UPGRADES_MAX = timedelta(days=30)
"""GKE documents 30 days as the longest NO_UPGRADES exclusion ("Maintenance windows and
exclusions"); a 2026 note reports 90, which the docs read here do not confirm."""
CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
ReleaseChannel = Literal["RAPID", "REGULAR", "STABLE", "EXTENDED", "NONE"]


class CpuPoolConfig(ConfigModel):
    """`ai-infra:cluster.cpuPool`: the pool for system pods, Kueue and JobSet controllers."""

    machine_type: MachineType = "e2-standard-8"
    """Machine type of the CPU pool's nodes."""
    disk_size_gb: int = Field(default=100, ge=10, le=65536)
    """Boot disk size of each node, in GB."""
    disk_type: Literal["pd-standard", "pd-balanced", "pd-ssd"] = "pd-balanced"
    """Boot disk type of each node."""
    min_nodes: int = Field(default=1, ge=0, le=MAX_NODES_PER_POOL)
    """Autoscaling lower bound, per zone of the cluster."""
    max_nodes: int = Field(default=3, ge=1, le=MAX_NODES_PER_POOL)
    """Autoscaling upper bound, per zone of the cluster."""
    spot: bool = False
    """Run the pool on Spot VMs: cheaper, but Compute Engine may reclaim them at any time."""


_RFC3339 = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})"
)


def _rfc3339(value: str) -> str:
    # ASCII digits only: fromisoformat alone would take other scripts' digits.
    if not _RFC3339.fullmatch(value):
        raise ValueError(f"'{value}' is not an RFC 3339 time; write e.g. 2026-12-01T00:00:00Z")
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"'{value}' is not an RFC 3339 time; write e.g. 2026-12-01T00:00:00Z"
        ) from None
    return value


Rfc3339 = Annotated[str, AfterValidator(_rfc3339)]


_TIME_OF_DAY = re.compile(r"([01][0-9]|2[0-3]):[0-5][0-9]")


def _time_of_day(value: str) -> str:
    if not _TIME_OF_DAY.fullmatch(value):
        raise ValueError(f"'{value}' is not a time of day; write it as HH:MM in UTC, e.g. 03:00")
    return value


GkeName = Annotated[
    str,
    matching(
        r"[a-z](?:[-a-z0-9]{0,38}[a-z0-9])?",
        "is not a GKE name: 1 to 40 lowercase letters, digits and '-', starting with a letter "
        "and ending with a letter or digit",
    ),
]
GkeVersion = Annotated[
    str,
    matching(
        r"latest|1\.[0-9]{1,3}(\.[0-9]{1,3}(-gke\.[0-9]{1,10})?)?",
        "is not a GKE version: write 1.X, 1.X.Y, 1.X.Y-gke.N or latest (quote it in YAML: "
        'version: "1.34")',
    ),
]
MachineType = Annotated[
    str,
    matching(
        r"[a-z][a-z0-9]*(-[a-z0-9]+){1,4}",
        "is not a Compute Engine machine type such as e2-standard-8 or n2-highmem-32",
    ),
]
SecurityGroup = Annotated[
    str,
    matching(
        r"gke-security-groups@[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+",
        "is not GKE's RBAC security group: Google Groups for RBAC requires the group "
        "gke-security-groups@<your domain>, e.g. gke-security-groups@example.com",
    ),
]


TimeOfDay = Annotated[str, AfterValidator(_time_of_day)]


class MaintenanceExclusion(ConfigModel):
    """A period in which GKE must not upgrade (e.g. a training campaign on the slices)."""

    name: DnsLabel
    """Names the exclusion in the cluster's maintenance policy."""
    start: Rfc3339
    """When the exclusion begins, RFC 3339, e.g. `2026-12-01T00:00:00Z`."""
    end: Rfc3339 | None = None
    """When it ends, RFC 3339; unset means until the cluster's minor version leaves support.
    `NO_UPGRADES` needs an end at most 30 days after the start."""
    scope: Literal["NO_UPGRADES", "NO_MINOR_UPGRADES", "NO_MINOR_OR_NODE_UPGRADES"] = (
        "NO_MINOR_OR_NODE_UPGRADES"
    )
    """What GKE holds off: `NO_MINOR_OR_NODE_UPGRADES` keeps nodes, and so running slices,
    untouched; `NO_MINOR_UPGRADES` still lets patch upgrades through, nodes included;
    `NO_UPGRADES` blocks every upgrade."""


class ClusterConfig(ConfigModel):
    """`ai-infra:cluster`."""

    name: GkeName | None = None
    """Cluster name, 1 to 40 lowercase letters, digits and `-`; defaults to `<prefix>-gke`."""
    regional: bool = True
    """A regional control plane survives a zone outage; `false` puts the cluster and its CPU
    pool in `gcp:zone`, cheaper for dev."""
    release_channel: ReleaseChannel = "REGULAR"
    """`NONE` opts out of channels (needed by the TPU provisioner) and turns node auto-upgrade
    off. On a channel GKE requires auto-upgrade, and upgrading any node of a multi-host slice
    recreates the slice, so every TPU pool carries a node-pool exclusion that holds its
    upgrades until its version's end of support (then GKE upgrades regardless)."""
    version: GkeVersion | None = None
    """Minimum control-plane version: `1.X`, `1.X.Y`, `1.X.Y-gke.N` or `latest`, quoted in YAML
    (`"1.34"`); a floor, not a pin. Defaults to the channel's default."""
    cpu_pool: CpuPoolConfig = Field(default_factory=CpuPoolConfig)
    """The autoscaled pool for system pods and the Kueue and JobSet controllers."""
    dataplane_v2: bool = True
    """GKE Dataplane V2 (eBPF networking with network policy enforcement built in)."""
    gcs_fuse_csi_driver: bool = True
    """The Cloud Storage FUSE CSI driver add-on, which mounts buckets as volumes."""
    image_streaming: bool = True
    """Image streaming on every pool: containers start before their image is fully pulled."""
    deletion_protection: bool | None = None
    """GKE-side deletion protection; defaults to `ai-infra:protect`."""
    max_pods_per_node: int = Field(default=110, ge=8, le=256)
    """The cluster's default pods per node, which the CPU pool uses; each node's block of
    `network.podsCidr` holds twice this, rounded up to a power of two (110 pods take a /24).
    TPU slices and GPU pools set their own."""
    maintenance_start_time: TimeOfDay = "03:00"
    """Daily four-hour maintenance window start, UTC, HH:MM."""
    maintenance_exclusions: list[MaintenanceExclusion] = Field(default_factory=list)
    """Periods in which GKE must not upgrade the cluster, e.g. a training campaign: at most 20,
    names unique, periods not overlapping."""
    rbac_security_group: SecurityGroup | None = None
    """`gke-security-groups@<domain>`: enables Google Groups for RBAC. Required when teams
    list `groups`, which must be members of it."""


def problems(config: ClusterConfig) -> list[Problem]:
    """Cross-field checks of `ai-infra:cluster`."""
    found = []
    cpu = config.cpu_pool
    if cpu.max_nodes < cpu.min_nodes:
        found.append(
            Problem(("cpuPool", "maxNodes"), f"{cpu.max_nodes} is below minNodes {cpu.min_nodes}")
        )
    found += _exclusion_problems(config.maintenance_exclusions)
    return found


def _when(time: str) -> datetime:
    return datetime.fromisoformat(time.replace("Z", "+00:00"))


def _exclusion_problems(exclusions: list[MaintenanceExclusion]) -> list[Problem]:
    found = []
    if len(exclusions) > MAX_EXCLUSIONS:
        found.append(
            Problem(
                ("maintenanceExclusions",),
                f"{len(exclusions)} exclusions; GKE allows {MAX_EXCLUSIONS} per cluster",
            )
        )
    names: dict[str, int] = {}
    spans: list[tuple[int, datetime, datetime | None]] = []
    for i, exclusion in enumerate(exclusions):
        path = ("maintenanceExclusions", i)
        if exclusion.name in names:
            found.append(
                Problem(
                    (*path, "name"),
                    f"'{exclusion.name}' already names maintenanceExclusions"
                    f"[{names[exclusion.name]}]; GKE keys exclusions by name",
                )
            )
        names.setdefault(exclusion.name, i)
        start = _when(exclusion.start)
        end = _when(exclusion.end) if exclusion.end else None
        if exclusion.scope == "NO_UPGRADES" and end is None:
            found.append(
                Problem((*path, "end"), "scope NO_UPGRADES needs an end (GKE allows 30 days)")
            )
        if end is not None and end <= start:
            found.append(Problem((*path, "end"), f"{exclusion.end} is not after the start"))
            continue
        if exclusion.scope == "NO_UPGRADES" and end is not None and end - start > NO_UPGRADES_MAX:
            found.append(
                Problem(
                    (*path, "end"),
                    f"a NO_UPGRADES exclusion lasts at most {NO_UPGRADES_MAX.days} days; end it "
                    "sooner, or use scope NO_MINOR_OR_NODE_UPGRADES, which may last until the "
                    "version's end of support",
                )
            )
        for j, other_start, other_end in spans:
            if (other_end is None or start < other_end) and (end is None or other_start < end):
                found.append(
                    Problem(
                        (*path, "start"),
                        f"overlaps maintenanceExclusions[{j}]; merge the two or move one",
                    )
                )
        spans.append((i, start, end))
    return found


def version_at_least(version: str, minimum: str) -> bool:
    """Whether a `cluster.version` floor (`1.34`, `1.34.1`, `1.34.1-gke.5`, `latest`) is at
    or above `minimum`. A partial version stands for its highest patch, as GKE resolves it."""
    if version == "latest":
        return True

    def parts(text: str) -> tuple[float, ...]:
        numbers = re.findall(r"[0-9]+", text)
        values: list[float] = [float(n) for n in numbers]
        return tuple(values + [float("inf")] * (4 - len(values)))

    return parts(version) >= parts(minimum)


def pool_zone_problems(zone: str, *, region: str, cluster_location: str) -> list[Problem]:
    """A `zone` problem when a node pool's zone does not exist or is outside the cluster's
    reach."""
    if problem := zone_problem(zone, region):
        return [Problem(("zone",), f"{problem}; node pools must be in the cluster's region")]
    if cluster_location != region and zone != cluster_location:
        return [
            Problem(
                ("zone",),
                f"the cluster is zonal in {cluster_location}, so its node pools cannot be in "
                f"{zone}; drop the zone or set cluster.regional: true",
            )
        ]
    return []


CPU_POOL = "cpu"


def pool_name_problems(pools: Mapping[tuple[PathPart, ...], Sequence[str]]) -> list[Problem]:
    """A `name` problem for every entry whose node pool name another pool already has.

    `pools` maps an entry's path (`("tpuSlices", 2)`) to the pool names it makes: multi-host
    slices make `<name>-0`, `<name>-1`, ...; single-host slices and GPU pools use their name.
    """
    owner: dict[str, tuple[PathPart, ...] | None] = {CPU_POOL: None}
    found = []
    for path, names in pools.items():
        for name in names:
            if name not in owner:
                owner[name] = path
                continue
            other = owner[name]
            by = "the CPU pool" if other is None else render_relative(other)
            found.append(
                Problem(
                    (*path, "name"),
                    f"node pool name '{name}' is already used by {by}; rename one",
                )
            )
            break
    return found


def render_relative(path: tuple[PathPart, ...]) -> str:
    head, *rest = path
    return str(head) + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in rest)


def hold_upgrades(
    cluster: ClusterHandle,
) -> list[gcp.container.NodePoolMaintenancePolicyArgs] | None:
    """On a release channel GKE must auto-upgrade nodes, and upgrading any node of a
    multi-host slice recreates the whole slice. A node-pool exclusion holds the pool's
    upgrades until its version's end of support, so GKE never recreates a running slice on
    its own before then (GKE API `NodePool.NodePoolMaintenancePolicy`)."""
    if not cluster.auto_upgrade:
        return None
    return [
        gcp.container.NodePoolMaintenancePolicyArgs(
            exclusion_until_end_of_supports=[
                gcp.container.NodePoolMaintenancePolicyExclusionUntilEndOfSupportArgs(enabled=True)
            ]
        )
    ]


@dataclass(frozen=True)
class PoolSizing:
    """The sizing inputs of a `gcp.container.NodePool`; unset ones stay None."""

    node_count: int | None = None
    initial_node_count: int | None = None
    autoscaling: gcp.container.NodePoolAutoscalingArgs | None = None
    queued_provisioning: gcp.container.NodePoolQueuedProvisioningArgs | None = None


def pool_sizing(
    max_nodes: int,
    *,
    min_nodes: int | None = None,
    flex_start: bool = False,
    per_zone: bool = False,
) -> PoolSizing:
    """How a pool is sized: `max_nodes` fixed nodes; with `min_nodes`, autoscaled between the
    two; flex-start pools rest at zero and grow by queued provisioning requests.

    `per_zone` bounds count nodes in each of the pool's zones (the CPU pool spans the
    cluster's zones); otherwise the bounds are totals across its zones.
    """
    if min_nodes is None and not flex_start:
        return PoolSizing(node_count=max_nodes)
    low = 0 if min_nodes is None else min_nodes
    if per_zone:
        autoscaling = gcp.container.NodePoolAutoscalingArgs(
            min_node_count=low, max_node_count=max_nodes
        )
    else:
        autoscaling = gcp.container.NodePoolAutoscalingArgs(
            total_min_node_count=low, total_max_node_count=max_nodes, location_policy="ANY"
        )
    return PoolSizing(
        initial_node_count=0 if flex_start else low,
        autoscaling=autoscaling,
        queued_provisioning=(
            gcp.container.NodePoolQueuedProvisioningArgs(enabled=True) if flex_start else None
        ),
    )


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


def node_account_id(prefix: str) -> str:
    """The node service account's id; teams and identities must not take it."""
    return f"{prefix}-nodes"


class GkeClusterArgs(WiringModel):
    project: str
    prefix: str
    name: str
    """The cluster's name, resolved from `cluster.name` or the prefix."""
    location: str
    """The region, or the zone of a zonal cluster."""
    protect: bool
    deletion_protection: bool
    labels: dict[str, str]
    config: ClusterConfig
    network: NetworkConfig
    network_self_link: SkipValidation[pulumi.Output[str]]
    subnet_self_link: SkipValidation[pulumi.Output[str]]
    pods_range_name: str
    services_range_name: str


@dataclass(frozen=True)
class ClusterHandle:
    """What a node pool needs of the cluster it joins."""

    project: str
    name: pulumi.Output[str]
    location: str
    node_service_account: str
    auto_upgrade: bool
    """Whether node pools auto-upgrade; GKE requires it on a release channel."""
    image_streaming: bool
    resource_labels: dict[str, str]
    """GCP labels for the nodes' VMs."""


class GkeCluster(Component):
    """The cluster, its node service account and its CPU pool."""

    cluster: gcp.container.Cluster
    cpu_pool: gcp.container.NodePool
    node_service_account: gcp.serviceaccount.Account
    node_service_account_email: str
    handle: ClusterHandle
    kubeconfig: pulumi.Output[str]

    def __init__(self, name: str, args: GkeClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ai-infra:gke:GkeCluster", name, opts)
        config = args.config
        auto_upgrade = config.release_channel != "NONE"

        account_id = node_account_id(args.prefix)
        self.node_service_account = gcp.serviceaccount.Account(
            f"{name}-nodes",
            project=args.project,
            account_id=account_id,
            display_name=f"GKE nodes of {args.name}",
            opts=self.child_opts(),
        )
        self.node_service_account_email = service_account_email(account_id, args.project)
        role_grants = [
            gcp.projects.IAMMember(
                f"{name}-nodes-{role.split('/')[-1]}",
                project=args.project,
                role=role,
                member=f"serviceAccount:{self.node_service_account_email}",
                opts=self.child_opts(depends_on=[self.node_service_account]),
            )
            for role in node_roles(config.image_streaming)
        ]

        self.cluster = gcp.container.Cluster(
            f"{name}-cluster",
            project=args.project,
            name=args.name,
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
            deletion_protection=args.deletion_protection,
            opts=self.child_opts(
                depends_on=role_grants,
                protect=args.protect,
                # The bootstrap pool's settings only matter at creation; a change to them
                # must never replace the cluster.
                ignore_changes=["nodeConfig", "initialNodeCount"],
            ),
        )

        cpu = config.cpu_pool
        sizing = pool_sizing(cpu.max_nodes, min_nodes=cpu.min_nodes, per_zone=True)
        self.cpu_pool = gcp.container.NodePool(
            f"{name}-cpu",
            project=args.project,
            cluster=self.cluster.name,
            location=args.location,
            name=CPU_POOL,
            initial_node_count=sizing.initial_node_count,
            autoscaling=sizing.autoscaling,
            management=gcp.container.NodePoolManagementArgs(
                auto_repair=True, auto_upgrade=auto_upgrade
            ),
            upgrade_settings=gcp.container.NodePoolUpgradeSettingsArgs(
                strategy="SURGE", max_surge=1, max_unavailable=0
            ),
            node_config=node_config(
                service_account=self.node_service_account_email,
                machine_type=cpu.machine_type,
                disk_size_gb=cpu.disk_size_gb,
                disk_type=cpu.disk_type,
                labels={"ai-infra/pool": CPU_POOL},
                resource_labels=args.labels,
                image_streaming=config.image_streaming,
                provisioning="spot" if cpu.spot else "on-demand",
            ),
            opts=self.child_opts(ignore_changes=["initialNodeCount"]),
        )
        self.handle = ClusterHandle(
            project=args.project,
            name=self.cluster.name,
            location=args.location,
            node_service_account=self.node_service_account_email,
            auto_upgrade=auto_upgrade,
            image_streaming=config.image_streaming,
            resource_labels=args.labels,
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
