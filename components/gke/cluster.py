"""The GKE cluster: VPC-native, private nodes, Workload Identity, shielded nodes, the default
pool removed, a least-privilege node service account and the CPU pool that runs controllers.
Accelerator pools are `tpu_slices.py` and `gpu_pools.py`; every pool shares `node_pools.py`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp
import yaml
from pydantic import InstanceOf

from components.base import Component, WiringModel, slug
from components.gke.admission import SYSTEM_TAINT
from components.gke.config import CPU_POOL, SYSTEM_MAX_PODS_PER_NODE, SYSTEM_POOL, GkeConfig
from components.gke.node_pools import CLOUD_PLATFORM_SCOPE, node_config, pool_sizing
from components.identity import Identity, grant_name, grant_opts, service_account
from components.network import NetworkConfig, NetworkHandle, gke_node_tag
from components.types import repository_parts

NODE_SA_ROLES: tuple[str, ...] = (
    # GKE's minimum for a custom node service account: logs, metrics, autoscaling metrics
    # ("Configure GKE node service accounts"). It replaces the four legacy roles.
    "roles/container.defaultNodeServiceAccount",
)
"""What a GKE node needs on the project. Pulling private images is `IMAGE_READER` on each
repository the stack names (`image_reads`), never on the whole project: a host-network pod
acts as its node's account."""
IMAGE_READER = "roles/artifactregistry.reader"
IMAGE_STREAMING_ROLE = "roles/serviceusage.serviceUsageConsumer"
"""Image streaming with a custom node service account needs it on the project that hosts the
images ("Use Image streaming", requirements)."""


def node_roles(image_streaming: bool) -> tuple[str, ...]:
    return (*NODE_SA_ROLES, IMAGE_STREAMING_ROLE) if image_streaming else NODE_SA_ROLES


def image_reads(
    parent: Component,
    owner: str,
    repositories: Sequence[str],
    *,
    member: str,
    depends_on: Sequence[pulumi.Resource] = (),
) -> list[gcp.artifactregistry.RepositoryIamMember]:
    """Artifact Registry reader for `member` on each repository (`ArtifactRepository`), one
    grant each, named `<owner>-repo-<repository>-artifactregistry.reader`."""
    grants = []
    for repository in repositories:
        location, project, repository_id = repository_parts(repository)
        grants.append(
            gcp.artifactregistry.RepositoryIamMember(
                grant_name(owner, IMAGE_READER, f"repo-{slug(repository)}"),
                # The full id carries project and location (the provider parses them from
                # it), so no region-like `location` input reads as a place resources live.
                repository=f"projects/{project}/locations/{location}/repositories/{repository_id}",
                role=IMAGE_READER,
                member=member,
                opts=grant_opts(parent, depends_on),
            )
        )
    return grants


def node_identity(
    parent: Component,
    owner: str,
    config: GkeConfig,
    *,
    account_id: str,
    display_name: str,
    repositories: Sequence[str],
) -> Identity:
    """A node account: GKE's node roles on the project and image reads on `repositories`."""
    identity = service_account(
        parent,
        owner,
        project=config.context.project,
        account_id=account_id,
        display_name=display_name,
        roles=node_roles(config.cluster.image_streaming),
    )
    identity.grants += image_reads(
        parent, owner, repositories, member=identity.member, depends_on=[identity.account]
    )
    return identity


@dataclass(frozen=True)
class ClusterHandle:
    """What a node pool, and anything else on the cluster, needs of it."""

    project: str
    name: pulumi.Output[str]
    location: str
    node_service_account: str
    auto_upgrade: bool
    """Whether TPU slice pools auto-upgrade: on a release channel, where GKE requires it; the
    CPU and GPU pools always do."""
    image_streaming: bool
    resource_labels: dict[str, str]
    """GCP labels for the nodes' VMs."""
    node_tags: list[str]
    """Network tags of every node, which the stack's firewall rules name GKE nodes by."""
    cluster: gcp.container.Cluster
    """The cluster itself: the identity pool PROJECT.svc.id.goog exists once it does."""
    cpu_pool: gcp.container.NodePool
    """The pool teams' CPU pods run on."""
    system_pool: gcp.container.NodePool
    """The pool controllers run on; the Kubernetes provider and the charts wait for it."""
    node_identity: Identity
    team_node_identities: dict[str, Identity]
    """The node account of each team's own slices (`tpuSlices[].team`), by team."""
    kubeconfig: pulumi.Output[str]


class GkeClusterArgs(WiringModel):
    config: InstanceOf[GkeConfig]
    network_config: NetworkConfig
    network: InstanceOf[NetworkHandle]


class GkeCluster(Component):
    """The cluster, its node service account and its CPU pool."""

    handle: ClusterHandle

    def __init__(self, name: str, args: GkeClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ai-infra:gke:GkeCluster", name, opts)
        config = args.config
        ctx = config.context
        nodes = node_identity(
            self,
            f"{name}-nodes",
            config,
            account_id=config.node_account_id,
            display_name=f"GKE nodes of {config.cluster_name}",
            repositories=config.image_repositories(),
        )
        # The nodes of a team's own slices run as an account of their own, which reads only
        # the images that team may run: its host-network pods act as it.
        team_nodes = {
            team: node_identity(
                self,
                f"{name}-nodes-{team}",
                config,
                account_id=config.team_node_account_id(team),
                display_name=f"GKE nodes of team {team}'s slices",
                repositories=config.image_repositories(team),
            )
            for team in config.dedicated_teams
        }
        cluster = gcp.container.Cluster(
            f"{name}-cluster",
            cluster_args(config, args.network_config, args.network, nodes.email),
            self.child_opts(
                depends_on=nodes.grants,
                protect=ctx.protect,
                # The bootstrap pool's settings only matter at creation; a change to them
                # must never replace the cluster.
                ignore_changes=["nodeConfig", "initialNodeCount"],
            ),
        )
        cpu_pool, system_pool = self._pools(name, config, cluster, nodes.email)
        ca_certificate = cluster.master_auth.apply(lambda auth: auth.cluster_ca_certificate)
        kubeconfig = pulumi.Output.secret(
            pulumi.Output.all(cluster.name, cluster.endpoint, ca_certificate).apply(
                lambda parts: _kubeconfig(parts[0], parts[1], parts[2])
            )
        )
        self.handle = ClusterHandle(
            project=ctx.project,
            name=cluster.name,
            location=config.location,
            node_service_account=nodes.email,
            auto_upgrade=config.auto_upgrade,
            image_streaming=config.cluster.image_streaming,
            resource_labels=ctx.labels,
            node_tags=[gke_node_tag(ctx.prefix)],
            cluster=cluster,
            cpu_pool=cpu_pool,
            system_pool=system_pool,
            node_identity=nodes,
            team_node_identities=team_nodes,
            kubeconfig=kubeconfig,
        )
        self.register_outputs(
            {"name": cluster.name, "endpoint": cluster.endpoint, "nodeServiceAccount": nodes.email}
        )

    def _pools(
        self, name: str, config: GkeConfig, cluster: gcp.container.Cluster, account: str
    ) -> tuple[gcp.container.NodePool, gcp.container.NodePool]:
        """The CPU pool, for teams' CPU pods, and the system pool, tainted so that only the
        controllers (Kueue, JobSet, the provisioner, given a toleration) and GKE's own
        system pods (which tolerate this taint, "Isolate your workloads in dedicated node
        pools") run there. A new pool rather than a taint on the CPU pool: a running stack
        gains it beside the CPU pool, the charts move their pods over, and nothing serving
        is replaced."""
        cpu = config.cluster.cpu_pool
        system = config.cluster.system_pool
        return (
            self._pool(
                f"{name}-cpu",
                config,
                cluster,
                account,
                pool=CPU_POOL,
                machine_type=cpu.machine_type,
                nodes=(cpu.min_nodes, cpu.max_nodes),
                disk=(cpu.disk_size_gb, cpu.disk_type),
                spot=cpu.spot,
            ),
            self._pool(
                f"{name}-system",
                config,
                cluster,
                account,
                pool=SYSTEM_POOL,
                machine_type=system.machine_type,
                nodes=(system.min_nodes, system.max_nodes),
                max_pods=SYSTEM_MAX_PODS_PER_NODE,
                taints=[
                    gcp.container.NodePoolNodeConfigTaintArgs(
                        key=SYSTEM_TAINT, value="true", effect="NO_SCHEDULE"
                    )
                ],
            ),
        )

    def _pool(
        self,
        resource: str,
        config: GkeConfig,
        cluster: gcp.container.Cluster,
        account: str,
        *,
        pool: str,
        machine_type: str,
        nodes: tuple[int, int],
        disk: tuple[int, str] = (100, "pd-balanced"),
        spot: bool = False,
        max_pods: int | None = None,
        taints: list[gcp.container.NodePoolNodeConfigTaintArgs] | None = None,
    ) -> gcp.container.NodePool:
        """An autoscaled CPU pool across the cluster's zones; `nodes` are per zone."""
        sizing = pool_sizing(nodes[1], min_nodes=nodes[0], per_zone=True)
        return gcp.container.NodePool(
            resource,
            project=config.context.project,
            cluster=cluster.name,
            location=config.location,
            name=pool,
            initial_node_count=sizing.initial_node_count,
            autoscaling=sizing.autoscaling,
            max_pods_per_node=max_pods,
            # Auto-upgraded whatever the channel: they run the controllers, system pods and
            # CPU work, and surge one node at a time. Without a channel GKE lets each pool
            # choose (GKE "About release channels"); only TPU slices must not be upgraded.
            management=gcp.container.NodePoolManagementArgs(auto_repair=True, auto_upgrade=True),
            upgrade_settings=gcp.container.NodePoolUpgradeSettingsArgs(
                strategy="SURGE", max_surge=1, max_unavailable=0
            ),
            node_config=node_config(
                service_account=account,
                machine_type=machine_type,
                disk_size_gb=disk[0],
                disk_type=disk[1],
                labels={"ai-infra/pool": pool},
                resource_labels=config.context.labels,
                tags=[gke_node_tag(config.context.prefix)],
                image_streaming=config.cluster.image_streaming,
                provisioning="spot" if spot else "on-demand",
                taints=taints,
            ),
            opts=self.child_opts(ignore_changes=["initialNodeCount"]),
        )


def cluster_args(
    config: GkeConfig, network_config: NetworkConfig, network: NetworkHandle, account: str
) -> gcp.container.ClusterArgs:
    """The cluster's inputs: private nodes behind authorized networks, Workload Identity,
    shielded nodes, the release channel and maintenance policy, add-ons and observability."""
    cluster = config.cluster
    return gcp.container.ClusterArgs(
        project=config.context.project,
        name=config.cluster_name,
        location=config.location,
        network=network.self_link,
        subnetwork=network.subnet_self_link,
        networking_mode="VPC_NATIVE",
        ip_allocation_policy=gcp.container.ClusterIpAllocationPolicyArgs(
            cluster_secondary_range_name=network.pods_range_name,
            services_secondary_range_name=network.services_range_name,
        ),
        default_max_pods_per_node=cluster.max_pods_per_node,
        private_cluster_config=gcp.container.ClusterPrivateClusterConfigArgs(
            enable_private_nodes=True,
            enable_private_endpoint=False,
            master_ipv4_cidr_block=network_config.master_cidr,
            master_global_access_config=(
                gcp.container.ClusterPrivateClusterConfigMasterGlobalAccessConfigArgs(enabled=True)
            ),
        ),
        master_authorized_networks_config=gcp.container.ClusterMasterAuthorizedNetworksConfigArgs(
            cidr_blocks=[
                gcp.container.ClusterMasterAuthorizedNetworksConfigCidrBlockArgs(
                    cidr_block=n.cidr, display_name=n.name
                )
                for n in network_config.authorized_networks
            ],
            gcp_public_cidrs_access_enabled=False,
        ),
        workload_identity_config=gcp.container.ClusterWorkloadIdentityConfigArgs(
            workload_pool=f"{config.context.project}.svc.id.goog"
        ),
        enable_shielded_nodes=True,
        # The default pool exists only while the cluster is created; it still must not run
        # as the default compute service account.
        remove_default_node_pool=True,
        initial_node_count=1,
        node_config=gcp.container.ClusterNodeConfigArgs(
            machine_type="e2-medium",
            service_account=account,
            tags=[gke_node_tag(config.context.prefix)],
            oauth_scopes=[CLOUD_PLATFORM_SCOPE],
            workload_metadata_config=gcp.container.ClusterNodeConfigWorkloadMetadataConfigArgs(
                mode="GKE_METADATA"
            ),
            shielded_instance_config=gcp.container.ClusterNodeConfigShieldedInstanceConfigArgs(
                enable_secure_boot=True, enable_integrity_monitoring=True
            ),
        ),
        release_channel=gcp.container.ClusterReleaseChannelArgs(
            channel="UNSPECIFIED" if cluster.release_channel == "NONE" else cluster.release_channel
        ),
        min_master_version=cluster.version,
        datapath_provider="ADVANCED_DATAPATH" if cluster.dataplane_v2 else "LEGACY_DATAPATH",
        # Pools with additional node networks need it; it needs Dataplane V2 ("Set up
        # multi-network support for Pods"). The provider updates it in place
        # (terraform-provider-google DesiredEnableMultiNetworking); unset leaves it alone.
        enable_multi_networking=True if config.multi_networking else None,
        addons_config=gcp.container.ClusterAddonsConfigArgs(
            gcs_fuse_csi_driver_config=gcp.container.ClusterAddonsConfigGcsFuseCsiDriverConfigArgs(
                enabled=cluster.gcs_fuse_csi_driver
            ),
            gce_persistent_disk_csi_driver_config=(
                gcp.container.ClusterAddonsConfigGcePersistentDiskCsiDriverConfigArgs(enabled=True)
            ),
            gcp_filestore_csi_driver_config=(
                gcp.container.ClusterAddonsConfigGcpFilestoreCsiDriverConfigArgs(enabled=True)
            ),
            # Unset keeps what the cluster has: the block is optional and computed in
            # terraform-provider-google's schema, so the last Lustre grant going leaves it on.
            lustre_csi_driver_config=(
                gcp.container.ClusterAddonsConfigLustreCsiDriverConfigArgs(enabled=True)
                if config.lustre_csi_driver
                else None
            ),
        ),
        node_pool_defaults=gcp.container.ClusterNodePoolDefaultsArgs(
            node_config_defaults=gcp.container.ClusterNodePoolDefaultsNodeConfigDefaultsArgs(
                gcfs_config=gcp.container.ClusterNodePoolDefaultsNodeConfigDefaultsGcfsConfigArgs(
                    enabled=cluster.image_streaming
                )
            )
        ),
        maintenance_policy=maintenance_policy(config),
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
                security_group=cluster.rbac_security_group
            )
            if cluster.rbac_security_group
            else None
        ),
        resource_labels=config.context.labels,
        deletion_protection=config.deletion_protection,
    )


def maintenance_policy(config: GkeConfig) -> gcp.container.ClusterMaintenancePolicyArgs:
    """The daily window and the exclusions the config lists."""
    cluster = config.cluster
    return gcp.container.ClusterMaintenancePolicyArgs(
        daily_maintenance_window=gcp.container.ClusterMaintenancePolicyDailyMaintenanceWindowArgs(
            start_time=cluster.maintenance_start_time
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
            for exclusion in cluster.maintenance_exclusions
        ]
        or None,
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
