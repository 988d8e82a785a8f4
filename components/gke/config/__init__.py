"""What the user writes for the GKE training environment: `ai-infra:cluster`, `tpuSlices`,
`gpuPools`, `workloadIdentities`, `tpuProvisioner`, `kueue` and `teams`, and `GkeConfig`, which
holds them with the stack context and resolves what they inherit (the cluster's name and
location, deletion protection, the provisioner's zone and node account, the Kueue flavors, the
DCN groups). Each key's models are a module of their own: cluster, pools, provisioner, teams.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property

from catalog import tpu as tpu_catalog
from components.context import StackContext
from components.gke.config.cluster import (
    CPU_POOL,
    GKE_NODE_POOL_NAME_MAX,
    GPU_MAX_PODS_PER_NODE,
    MAX_EXCLUSIONS,
    MAX_NODES_PER_POOL,
    MAX_PROVISIONED_SLICES_PER_SHAPE,
    MAX_SLICES_PER_ENTRY,
    NO_UPGRADES_MAX,
    PROVISIONER_KSA,
    PROVISIONER_NAMESPACE,
    SYSTEM_MAX_PODS_PER_NODE,
    SYSTEM_POOL,
    TPU_MAX_PODS_PER_NODE,
    ClusterConfig,
    CpuPoolConfig,
    GkeName,
    GkeVersion,
    HostMaintenanceInterval,
    MaintenanceExclusion,
    Provisioning,
    ReleaseChannel,
    Rfc3339,
    SecurityGroup,
    SystemPoolConfig,
    TimeOfDay,
    when,
)
from components.gke.config.pools import (
    Accelerator,
    GpuPoolConfig,
    TpuSliceConfig,
)
from components.gke.config.provisioner import (
    GO_DURATION_MAX_NS,
    PROVISIONER_ACCOUNT,
    PROVISIONER_CHIPS_PER_NODE,
    PROVISIONER_MAX_PODS_PER_NODE,
    PROVISIONER_SOURCE,
    WORKLOAD_POLICY_PREFIX,
    AdditionalNodeNetwork,
    GoDuration,
    KubernetesLabelKey,
    SliceCount,
    TpuProvisionerConfig,
)
from components.gke.config.teams import (
    DiskStorageClass,
    GroupEmail,
    KueueConfig,
    PodSecurityLevel,
    Quantity,
    QuotaShare,
    Share,
    TeamConfig,
    TeamLimits,
    WorkloadIdentityConfig,
)
from components.gke.quota import (
    Allocation,
    Flavor,
    HostQuota,
    allocate,
    derive_flavors,
    host_quota,
    tpu_flavor_name,
)
from components.identity import service_account_email
from components.network import (
    NetworkConfig,
    NodeNetwork,
)
from components.types import (
    artifact_repository,
)

DCN_GROUP_MAX = 17
"""Keeps `<prefix>-<network>-dcn-<group>`, the rule of a group on a node network, within
Compute Engine's 63 characters (prefix and network name take 20 each)."""
PROVISIONED_DCN_GROUP = "provisioned"


def dcn_group_id(name: str) -> str:
    """A short stable id of a DCN group (a flavor's name, or `provisioned`): the name itself
    when it fits, else its head and a hash of the whole."""
    if len(name) <= DCN_GROUP_MAX:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[: DCN_GROUP_MAX - 9].rstrip('-')}-{digest}"


@dataclass(frozen=True)
class DcnGroup:
    """Hosts that may talk over the additional node networks: the slices of one Kueue flavor
    (a multislice job spans slices of one flavor), or every pool the TPU provisioner creates
    (it gives them all the same tags). A rule per network admits the group's tag from itself
    only."""

    id: str
    tag: str
    networks: tuple[str, ...]
    """Node network names some member attaches to, in the stack's order."""
    members: tuple[str, ...]
    """Who: slice entry names, or the provisioner's pools."""
    team: str | None = None
    """The team whose own slices these are, if any."""


@dataclass(frozen=True)
class GkeConfig:
    """Every GKE key of one stack, with the stack context, and what they resolve to."""

    context: StackContext
    cluster: ClusterConfig
    tpu_slices: list[TpuSliceConfig]
    gpu_pools: list[GpuPoolConfig]
    workload_identities: list[WorkloadIdentityConfig]
    tpu_provisioner: TpuProvisionerConfig
    kueue: KueueConfig
    teams: list[TeamConfig]
    network: NetworkConfig
    """The stack's network, for the node networks pools attach to and the plan's account of
    each slice's NICs."""
    lustre_csi_driver: bool = False
    """Whether a team mounts a Managed Lustre volume of `ai-infra:storage`: the cluster then
    runs GKE's Managed Lustre CSI driver, off by default ("About the Managed Lustre CSI
    driver")."""

    @property
    def cluster_name(self) -> str:
        return self.cluster.name or self.context.name("gke")

    @property
    def location(self) -> str:
        """The region, or the zone of a zonal cluster."""
        return self.context.region if self.cluster.regional else self.context.zone

    @property
    def zones(self) -> int:
        """Zones the cluster's CPU pool has nodes in: a regional cluster's three, or one."""
        return 3 if self.cluster.regional else 1

    @property
    def deletion_protection(self) -> bool:
        if self.cluster.deletion_protection is None:
            return self.context.protect
        return self.cluster.deletion_protection

    @property
    def auto_upgrade(self) -> bool:
        """Whether TPU slice pools auto-upgrade; GKE requires it on a release channel."""
        return self.cluster.release_channel != "NONE"

    @property
    def node_account_id(self) -> str:
        """The node service account's id; teams and identities must not take it."""
        return self.context.name("nodes")

    @property
    def node_service_account(self) -> str:
        return service_account_email(self.node_account_id, self.context.project)

    def team_node_account_id(self, team: str) -> str:
        """The node account of the slices dedicated to `team` (`tpuSlices[].team`)."""
        return self.context.name(team, "nodes")

    @property
    def dedicated_teams(self) -> list[str]:
        """Teams that own slices of their own, in the order their first slice is listed."""
        return list(dict.fromkeys(s.team for s in self.tpu_slices if s.team is not None))

    def slice_node_account(self, entry: TpuSliceConfig) -> str:
        """The account a slice's nodes run as: its team's own, or the cluster's."""
        if entry.team is None:
            return self.node_service_account
        return service_account_email(self.team_node_account_id(entry.team), self.context.project)

    def image_repositories(self, team: str | None = None) -> list[str]:
        """The Artifact Registry repositories nodes pull from: with `team`, those its own
        nodes need (`cluster.imageRepositories` and the team's); else every one the stack
        names, the TPU provisioner's image's included (the system pool pulls it)."""
        repositories = list(self.cluster.image_repositories)
        for entry in self.teams:
            if team is None or entry.name == team:
                repositories += entry.image_repositories
        if team is None and self.tpu_provisioner.enabled and self.tpu_provisioner.image:
            own = artifact_repository(self.tpu_provisioner.image)
            repositories += [own] if own else []
        return list(dict.fromkeys(repositories))

    def priority_classes(self, team: TeamConfig) -> list[str]:
        """The WorkloadPriorityClasses a team's jobs may name."""
        if team.priority_classes is None:
            return list(self.kueue.priority_classes)
        return list(team.priority_classes)

    @property
    def provisioner_account_id(self) -> str:
        """Reserved whether or not the provisioner is enabled."""
        return self.context.name(PROVISIONER_ACCOUNT)

    @property
    def provisioner_zone(self) -> str:
        return self.context.zone_of(self.tpu_provisioner.zone)

    @property
    def provisioner_node_service_account(self) -> str:
        """The account of the nodes the TPU provisioner creates."""
        return self.tpu_provisioner.node_service_account or self.node_service_account

    @property
    def tpu_chips(self) -> int:
        return sum(s.chips for s in self.tpu_slices)

    @property
    def pool_names(self) -> list[str]:
        """Every node pool the program creates: the CPU pool, the slices' and the GPU pools'."""
        slices = [pool for s in self.tpu_slices for pool in s.pool_names]
        return [CPU_POOL, SYSTEM_POOL, *slices, *(g.name for g in self.gpu_pools)]

    def slice_node_networks(self, entry: TpuSliceConfig) -> list[NodeNetwork]:
        """The additional node networks a slice's hosts attach to, in NIC order; for an entry
        whose problems are empty."""
        networks = self.network.node_networks(self.context.prefix)
        if entry.additional_node_networks is not None:
            return [networks[name] for name in entry.additional_node_networks]
        if entry.shape.family.additional_node_networks is None:
            return []
        return list(networks.values())

    @property
    def provisioner_node_networks(self) -> list[NodeNetwork]:
        """The stack's additional node networks the pools the TPU provisioner creates attach
        to: those `tpuProvisioner.additionalNodeNetworks` names by VPC and subnet, or, when it
        names none, all of them when every shape in its quota belongs to a family that takes
        them (the controller gives every pool it creates the same networks), else none."""
        config = self.tpu_provisioner
        if not config.enabled or not config.quota:
            return []
        stack = self.network.node_networks(self.context.prefix)
        if config.additional_node_networks:
            own = {(n.vpc, n.subnet): n for n in stack.values()}
            named = [(e.network, e.subnetwork) for e in config.additional_node_networks]
            return [own[pair] for pair in named if pair in own]
        if any(s.family.additional_node_networks is None for s in config.shapes().values()):
            return []
        return list(stack.values())

    @property
    def provisioner_additional_networks(self) -> list[tuple[str, str]]:
        """(VPC, subnet) names of the interfaces beyond the first on the pools the provisioner
        creates (`GCP_NODE_ADDITIONAL_NETWORKS`): those `tpuProvisioner.additionalNodeNetworks`
        names, or else the stack's node networks when its quota's families take them."""
        explicit = self.tpu_provisioner.additional_node_networks
        if explicit:
            return [(n.network, n.subnetwork) for n in explicit]
        return [(n.vpc, n.subnet) for n in self.provisioner_node_networks]

    @property
    def multi_networking(self) -> bool:
        """Whether any pool attaches to an additional node network; the cluster then needs
        multi-networking."""
        return (
            bool(self.provisioner_additional_networks)
            or any(self.slice_node_networks(s) for s in self.tpu_slices)
            or any(g.fast_path for g in self.gpu_pools)
        )

    def dcn_tag(self, group: str) -> str:
        """The network tag of a DCN group's hosts."""
        return self.context.name("dcn", dcn_group_id(group))

    def slice_dcn_tags(self, entry: TpuSliceConfig) -> list[str]:
        """A slice's DCN group tag, when its hosts attach to node networks."""
        if not self.slice_node_networks(entry):
            return []
        return [self.dcn_tag(tpu_flavor_name(entry))]

    def dcn_groups(self) -> list[DcnGroup]:
        """The DCN groups, each with the node networks its members attach to; for a valid
        config."""
        order = [n.name for n in self.network.additional_node_networks]
        groups: dict[str, tuple[set[str], list[str], str | None]] = {}
        for entry in self.tpu_slices:
            attached = {n.name for n in self.slice_node_networks(entry)}
            if attached:
                networks, members, _ = groups.setdefault(
                    tpu_flavor_name(entry), (set(), [], entry.team)
                )
                networks |= attached
                members.append(entry.name)
        provisioned = {n.name for n in self.provisioner_node_networks}
        if provisioned:
            groups[PROVISIONED_DCN_GROUP] = (provisioned, ["the TPU provisioner's pools"], None)
        return [
            DcnGroup(
                id=dcn_group_id(name),
                tag=self.dcn_tag(name),
                networks=tuple(n for n in order if n in networks),
                members=tuple(members),
                team=team,
            )
            for name, (networks, members, team) in groups.items()
        ]

    def node_network_users(self) -> dict[str, list[tuple[str, int]]]:
        """Network name -> (who, most nodes) of every pool that attaches to it, for sizing the
        additional subnets; for a valid config."""
        users: dict[str, list[tuple[str, int]]] = {}
        for entry in self.tpu_slices:
            for network in self.slice_node_networks(entry):
                users.setdefault(network.name, []).append((f"'{entry.name}'", entry.nodes))
        for network in self.provisioner_node_networks:
            users.setdefault(network.name, []).append(
                ("the TPU provisioner's pools", self.provisioned_nodes())
            )
        return users

    def provisioned(self) -> dict[str, tuple[tpu_catalog.TpuShape, int]]:
        """Quota source name (`tpuProvisioner.v5p-32`) -> the shape and the chips the
        provisioner may create of it; empty when it is off. For a valid config."""
        config = self.tpu_provisioner
        if not config.enabled:
            return {}
        return {
            f"{PROVISIONER_SOURCE}{accelerator}": (shape, config.quota[accelerator] * shape.chips)
            for accelerator, shape in config.shapes().items()
        }

    def provisioned_nodes(self) -> int:
        """The most nodes the provisioner's pools reach, for a valid config."""
        config = self.tpu_provisioner
        if not config.enabled:
            return 0
        return sum(config.quota[a] * shape.hosts for a, shape in config.shapes().items())

    def quota_sources(self) -> dict[str, int]:
        """Every name a team's quota may use, with the chips or GPUs behind it."""
        return (
            {s.name: s.chips for s in self.tpu_slices}
            | {g.name: g.gpus for g in self.gpu_pools}
            | {name: chips for name, (_, chips) in self.provisioned().items()}
        )

    @cached_property
    def flavors(self) -> list[Flavor]:
        """The Kueue flavors, derived once; for a valid config."""
        return derive_flavors(self.tpu_slices, self.gpu_pools, self.provisioned())

    @cached_property
    def allocation(self) -> Allocation:
        """Each team's nominal quota per flavor, and the cohort's; for a valid config."""
        return allocate(self.flavors, {team.name: team.quota for team in self.teams})

    def cpu_quota(self, team: TeamConfig) -> dict[str, str]:
        """The team's `cpu` flavor quota: what it sets, else what the nodes behind its
        accelerator quota offer pods; for a valid config."""
        derived = self.host_quota(team.name)
        return {"cpu": team.cpu or derived.cpu, "memory": team.memory or derived.memory}

    def host_quota(self, team: str | None = None, *, provisioned: bool = False) -> HostQuota:
        """The CPU and memory of the nodes behind a team's accelerator quota, or (None) the
        cohort's: in its ClusterQueue, or with `provisioned` in its queue for what the TPU
        provisioner creates; for a valid config."""
        quotas = self.allocation.cohort if team is None else self.allocation.teams[team]
        return host_quota([f for f in self.flavors if f.provisioned == provisioned], quotas)

    @property
    def provisioned_flavors(self) -> list[Flavor]:
        return [f for f in self.flavors if f.provisioned]


__all__ = [
    "CPU_POOL",
    "DCN_GROUP_MAX",
    "GKE_NODE_POOL_NAME_MAX",
    "GO_DURATION_MAX_NS",
    "GPU_MAX_PODS_PER_NODE",
    "MAX_EXCLUSIONS",
    "MAX_NODES_PER_POOL",
    "MAX_PROVISIONED_SLICES_PER_SHAPE",
    "MAX_SLICES_PER_ENTRY",
    "NO_UPGRADES_MAX",
    "PROVISIONED_DCN_GROUP",
    "PROVISIONER_ACCOUNT",
    "PROVISIONER_CHIPS_PER_NODE",
    "PROVISIONER_KSA",
    "PROVISIONER_MAX_PODS_PER_NODE",
    "PROVISIONER_NAMESPACE",
    "PROVISIONER_SOURCE",
    "SYSTEM_MAX_PODS_PER_NODE",
    "SYSTEM_POOL",
    "TPU_MAX_PODS_PER_NODE",
    "WORKLOAD_POLICY_PREFIX",
    "Accelerator",
    "AdditionalNodeNetwork",
    "ClusterConfig",
    "CpuPoolConfig",
    "DcnGroup",
    "DiskStorageClass",
    "GkeConfig",
    "GkeName",
    "GkeVersion",
    "GoDuration",
    "GpuPoolConfig",
    "GroupEmail",
    "HostMaintenanceInterval",
    "KubernetesLabelKey",
    "KueueConfig",
    "MaintenanceExclusion",
    "PodSecurityLevel",
    "Provisioning",
    "Quantity",
    "QuotaShare",
    "ReleaseChannel",
    "Rfc3339",
    "SecurityGroup",
    "Share",
    "SliceCount",
    "SystemPoolConfig",
    "TeamConfig",
    "TeamLimits",
    "TimeOfDay",
    "TpuProvisionerConfig",
    "TpuSliceConfig",
    "WorkloadIdentityConfig",
    "dcn_group_id",
    "when",
]
