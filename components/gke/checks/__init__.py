"""The problems of the GKE training environment's keys, each at its stack path (`tpuSlices[2]
.zone`): the cluster's own fields, slices and GPU pools against the catalogs and the cluster's
location, node pool names, the pods range, workload identities, teams and their quotas, the TPU
provisioner, and the Kueue flavors the slices make. `problems()` and `warnings()` are the
entry points; each part of the config has a module of its own (cluster, pools, teams,
provisioner).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from components import network
from components.base import Problem, duplicate_names, under
from components.gke.checks.cluster import (
    channel_warnings,
    cluster_problems,
    disabled_problems,
    pool_name_problems,
    pool_zone_problems,
    version_at_least,
)
from components.gke.checks.pools import (
    gpu_direct_problems,
    gpu_pool_problems,
    idle_network_warnings,
    one_nic_warnings,
    slice_problems,
    version_problems,
)
from components.gke.checks.provisioner import (
    flex_start_conflicts,
    node_account_problems,
    provisioned_warnings,
    provisioner_problems,
)
from components.gke.checks.teams import (
    cpu_warnings,
    identity_problems,
    namespace_owner,
    share_warnings,
    team_problems,
)
from components.gke.checks.tenancy import tenancy_problems
from components.gke.config import (
    CPU_POOL,
    PROVISIONER_MAX_PODS_PER_NODE,
    SYSTEM_MAX_PODS_PER_NODE,
    SYSTEM_POOL,
    GkeConfig,
    TpuProvisionerConfig,
)
from components.gke.quota import flavor_problems


def problems(
    config: GkeConfig,
    *,
    network_config: network.NetworkConfig | None,
    buckets: Sequence[str],
) -> list[Problem]:
    """Every problem of the GKE keys, at stack paths. `network_config` is the stack's network
    when its own checks passed (the pods range is then sized against the pools), else None."""
    if not config.cluster.enabled:
        return disabled_problems(config)
    found = under("cluster", cluster_problems(config))
    slices = under(
        "tpuSlices",
        duplicate_names([s.name for s in config.tpu_slices], "tpuSlices")
        + slice_problems(config)
        + version_problems(config.tpu_slices, config.cluster.version),
    )
    pools = under(
        "gpuPools",
        duplicate_names([g.name for g in config.gpu_pools], "gpuPools")
        + gpu_pool_problems(config.gpu_pools)
        + gpu_direct_problems(config),
    )
    found += slices + pools
    for key, entries in (("tpuSlices", config.tpu_slices), ("gpuPools", config.gpu_pools)):
        for i, entry in enumerate(entries):
            if entry.zone is not None:
                found += under((key, i), pool_zone_problems(config, entry.zone))
    found += under("workloadIdentities", identity_problems(config, buckets=buckets))
    provisioner = under("tpuProvisioner", provisioner_problems(config, network_config))
    found += provisioner
    found += flex_start_conflicts(config)
    if slices or pools:
        # What follows adds up the slices' nodes and chips, which needs valid entries.
        return found
    config = countable(config, provisioner)
    found += pool_name_problems(
        {("tpuSlices", i): s.pool_names for i, s in enumerate(config.tpu_slices)}
        | {("gpuPools", i): [g.name] for i, g in enumerate(config.gpu_pools)}
    )
    # The provisioner's own additionalNodeNetworks report this at their own key.
    if (
        config.multi_networking
        and not config.cluster.dataplane_v2
        and not (
            config.tpu_provisioner.additional_node_networks
            and not any(config.slice_node_networks(s) for s in config.tpu_slices)
        )
    ):
        found.append(
            Problem(
                ("cluster", "dataplaneV2"),
                "pools attach to additional node networks (TPU slices' DCN NICs or GPU pools' "
                "GPU NICs), which need GKE multi-networking, which needs Dataplane V2 ('Set up "
                "multi-network support for Pods'); set dataplaneV2: true (this replaces the "
                "cluster), or opt the slices out with additionalNodeNetworks: [] and the GPU "
                "pools with gpuDirect: false",
            )
        )
    if network_config is not None:
        found += under("network", network.capacity_problems(network_config, pod_blocks(config)))
        found += under(
            "network",
            network.node_network_capacity_problems(network_config, config.node_network_users()),
        )
    found += under("teams", team_problems(config, buckets=buckets))
    found += tenancy_problems(config)
    found += flavor_problems(config.flavors)
    return found


def pod_blocks(config: GkeConfig) -> list[tuple[str, int, int]]:
    """(pool, most nodes, max pods per node) of every pool, for sizing the pods range; the
    provisioner's pools take its own fixed pod density."""
    cluster = config.cluster
    pools = [
        (CPU_POOL, cluster.cpu_pool.max_nodes * config.zones, cluster.max_pods_per_node),
        (SYSTEM_POOL, cluster.system_pool.max_nodes * config.zones, SYSTEM_MAX_PODS_PER_NODE),
    ]
    pools += [(s.name, s.nodes, s.max_pods_per_node) for s in config.tpu_slices]
    pools += [(g.name, g.max_nodes, g.max_pods_per_node) for g in config.gpu_pools]
    pools.append(
        ("the TPU provisioner's pools", config.provisioned_nodes(), PROVISIONER_MAX_PODS_PER_NODE)
    )
    return pools


def countable(config: GkeConfig, found: Iterable[Problem]) -> GkeConfig:
    """`config` as its nodes and chips can be added up despite the problems `found` (at their
    stack paths): the provisioner's pools count once its quota's shapes resolve, so they are
    left out while `tpuProvisioner.quota` has a problem."""
    if any(p.path[:2] == ("tpuProvisioner", "quota") for p in found):
        return replace(config, tpu_provisioner=TpuProvisionerConfig())
    return config


def max_nodes(config: GkeConfig) -> int:
    """Nodes the cluster's pools can reach together, for a valid config."""
    if not config.cluster.enabled:
        return 0
    return sum(nodes for _, nodes, _ in pod_blocks(config))


def warnings(config: GkeConfig) -> list[Problem]:
    """What a valid config may say but probably does not mean, at stack paths: a team's
    explicit share of TPU capacity that is not a whole number of slices, and CPU or memory
    quota below what the nodes behind the team's accelerator quota offer."""
    found = share_warnings(config) + cpu_warnings(config) + provisioned_warnings(config)
    found += one_nic_warnings(config)
    return found + channel_warnings(config) + idle_network_warnings(config)


__all__ = [
    "countable",
    "max_nodes",
    "namespace_owner",
    "node_account_problems",
    "pod_blocks",
    "problems",
    "version_at_least",
    "warnings",
]
