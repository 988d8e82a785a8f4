"""The problems of the GKE training environment's keys, each at its stack path (`tpuSlices[2]
.zone`): the cluster's own fields, slices and GPU pools against the catalogs and the cluster's
location, node pool names, the pods range, workload identities, teams and their quotas, the TPU
provisioner, and the Kueue flavors the slices make. `problems()` is the only entry point.
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime

from components import gpu_catalog, locations, network, tpu_catalog
from components.base import PathPart, Problem, duplicate_names, relative_path, slug, under
from components.buckets import unknown_buckets
from components.gke.config import (
    CPU_POOL,
    GKE_NODE_POOL_NAME_MAX,
    MAX_EXCLUSIONS,
    NO_UPGRADES_MAX,
    PROVISIONER_CHIPS_PER_NODE,
    PROVISIONER_MAX_PODS_PER_NODE,
    PROVISIONER_NAMESPACE,
    PROVISIONER_SOURCE,
    SYSTEM_MAX_PODS_PER_NODE,
    SYSTEM_POOL,
    WORKLOAD_POLICY_PREFIX,
    ClusterConfig,
    GkeConfig,
    GpuPoolConfig,
    MaintenanceExclusion,
    TpuProvisionerConfig,
    TpuSliceConfig,
    when,
)
from components.gke.gpu_direct import GPU_DIRECT_MACHINES
from components.gke.gpu_direct import network_names as gpu_network_names
from components.gke.kueue import CHARTS, provisioned_queue
from components.gke.quota import explicit_units, flavor_problems
from components.gpu_catalog import boot_disk_problem, gpu_problem, pool_capacity_problem
from components.identity import account_id_problems, duplicate_roles, service_account_email

RESERVED_NAMESPACES = frozenset(
    {
        "default",
        "kube-system",
        "kube-public",
        "kube-node-lease",
        "gke-managed-system",
        PROVISIONER_NAMESPACE,
    }
)
SYSTEM_NAMESPACES = RESERVED_NAMESPACES | {c.namespace for c in CHARTS.values()}
"""Namespaces the platform owns; no team or identity may create them."""
GKE_NAMESPACES = frozenset(
    {
        "gmp-system",
        "gmp-public",
        "config-management-system",
        "gatekeeper-system",
        "istio-system",
        "knative-serving",
    }
)
"""Namespaces GKE creates for managed Prometheus, Config Sync, Policy Controller and service
mesh; its own `gke-*` namespaces are covered by prefix (no complete list is published)."""
_ACCELERATOR = re.compile(r"[a-z0-9]{1,16}-[0-9]{1,5}")
"""An accelerator type's form, checked before the catalog reads it as a quota key, so a key
with whitespace or a newline cannot reach a flavor name."""


def namespace_owner(name: str) -> str | None:
    """Who creates namespace `name`, when it is not for a team or identity to create."""
    if name.startswith("kube-") or name == "default":
        return "Kubernetes"  # "kube-" is reserved for Kubernetes system namespaces
    if name in SYSTEM_NAMESPACES:
        return "the platform (JobSet, Kueue, the TPU provisioner)"
    if name.startswith("gke-") or name in GKE_NAMESPACES:
        return "GKE"
    return None


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


# ai-infra:cluster


def disabled_problems(config: GkeConfig) -> list[Problem]:
    """With `cluster.enabled: false` nothing runs on GKE: every key that would need the
    cluster is refused where it is written, rather than ignored."""
    found = [
        Problem(
            ("cluster", ClusterConfig.model_fields[key].alias or key),
            "has no effect with cluster.enabled: false (no GKE cluster is built); remove it "
            "or set enabled: true",
        )
        for key in sorted(config.cluster.model_fields_set - {"enabled"})
    ]
    for key, entries in (
        ("tpuSlices", config.tpu_slices),
        ("gpuPools", config.gpu_pools),
        ("workloadIdentities", config.workload_identities),
        ("teams", config.teams),
    ):
        if entries:
            found.append(
                Problem(
                    (key,),
                    "needs the GKE cluster, and cluster.enabled is false; remove the entries "
                    "or set cluster.enabled: true (TPU VMs outside GKE are ai-infra:tpuVms, "
                    "GPU VMs ai-infra:gpuClusters)",
                )
            )
    if config.tpu_provisioner.enabled:
        found.append(
            Problem(
                ("tpuProvisioner", "enabled"),
                "the TPU provisioner runs on the GKE cluster, and cluster.enabled is false; "
                "set it false or set cluster.enabled: true",
            )
        )
    if config.kueue.model_fields_set:
        found.append(
            Problem(
                ("kueue",),
                "Kueue runs on the GKE cluster, and cluster.enabled is false; remove "
                "ai-infra:kueue or set cluster.enabled: true",
            )
        )
    return found


def cluster_problems(config: GkeConfig) -> list[Problem]:
    found = []
    cpu = config.cluster.cpu_pool
    if cpu.max_nodes < cpu.min_nodes:
        found.append(
            Problem(("cpuPool", "maxNodes"), f"{cpu.max_nodes} is below minNodes {cpu.min_nodes}")
        )
    system = config.cluster.system_pool
    if system.max_nodes < system.min_nodes:
        found.append(
            Problem(
                ("systemPool", "maxNodes"),
                f"{system.max_nodes} is below minNodes {system.min_nodes}",
            )
        )
    found += _exclusion_problems(config.cluster.maintenance_exclusions)
    return found


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
        start = when(exclusion.start)
        end = when(exclusion.end) if exclusion.end else None
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


def pool_zone_problems(config: GkeConfig, zone: str) -> list[Problem]:
    """A `zone` problem when a node pool's zone does not exist or is outside the cluster's
    reach."""
    region = config.context.region
    if problem := locations.zone_problem(zone, region):
        return [Problem(("zone",), f"{problem}; node pools must be in the cluster's region")]
    if config.location != region and zone != config.location:
        return [
            Problem(
                ("zone",),
                f"the cluster is zonal in {config.location}, so its node pools cannot be in "
                f"{zone}; drop the zone or set cluster.regional: true",
            )
        ]
    return []


def pool_name_problems(pools: Mapping[tuple[PathPart, ...], Sequence[str]]) -> list[Problem]:
    """A `name` problem for every entry whose node pool name another pool already has.

    `pools` maps an entry's path (`("tpuSlices", 2)`) to the pool names it makes: multi-host
    slices make `<name>-0`, `<name>-1`, ...; single-host slices and GPU pools use their name.
    """
    owner: dict[str, tuple[PathPart, ...] | None] = {CPU_POOL: None, SYSTEM_POOL: None}
    found = []
    for path, names in pools.items():
        for name in names:
            if name not in owner:
                owner[name] = path
                continue
            other = owner[name]
            by = f"the {name} pool" if other is None else relative_path(other)
            found.append(
                Problem(
                    (*path, "name"),
                    f"node pool name '{name}' is already used by {by}; rename one",
                )
            )
            break
    return found


def reservation_problems(provisioning: str, reservation: str | None) -> list[Problem]:
    """Problems of a pool's `provisioning` and `reservation` fields, taken together."""
    if provisioning == "reservation" and not reservation:
        return [
            Problem(
                ("reservation",),
                "provisioning 'reservation' needs the reservation's name here",
            )
        ]
    if provisioning != "reservation" and reservation:
        return [
            Problem(
                ("reservation",),
                f"only used with provisioning 'reservation', not '{provisioning}'; remove it "
                "or set provisioning: reservation",
            )
        ]
    return []


# ai-infra:tpuSlices and ai-infra:gpuPools


def slice_problems(config: GkeConfig) -> list[Problem]:
    """Per-entry checks of `ai-infra:tpuSlices`, each at `[i].<field>`."""
    found = []
    networks = [n.name for n in config.network.additional_node_networks]
    for i, entry in enumerate(config.tpu_slices):
        zone = config.context.zone_of(entry.zone)
        own = _slice_problems(entry, zone) + _slice_network_problems(entry, networks)
        found += [p.under(i) for p in own]
    return found


def _slice_network_problems(entry: TpuSliceConfig, networks: list[str]) -> list[Problem]:
    """A slice's additional node networks and host maintenance interval."""
    found = []
    family = tpu_catalog.resolve(entry.accelerator).family
    listed = entry.additional_node_networks or []
    if listed and (problem := tpu_catalog.node_network_problem(family)):
        found.append(Problem(("additionalNodeNetworks",), problem))
    for j, name in enumerate(listed):
        if name in listed[:j]:
            found.append(
                Problem(
                    ("additionalNodeNetworks", j),
                    f"'{name}' is listed twice; a host takes one NIC per network",
                )
            )
        elif name not in networks:
            found.append(
                Problem(
                    ("additionalNodeNetworks", j),
                    f"no network.additionalNodeNetworks entry is named '{name}' (known: "
                    f"{', '.join(networks) or 'none'}); add it there or fix the name",
                )
            )
    if entry.host_maintenance_interval == "PERIODIC" and entry.provisioning != "reservation":
        found.append(
            Problem(
                ("hostMaintenanceInterval",),
                f"PERIODIC takes capacity reserved with a PERIODIC maintenance interval (GKE "
                "refuses it on a reservation without one, as xpk explains the error), and no "
                f"documented case has it on {entry.provisioning} TPU capacity; set "
                "provisioning: reservation with such a reservation, or use AS_NEEDED",
            )
        )
    return found


def _slice_problems(entry: TpuSliceConfig, zone: str) -> list[Problem]:
    found = []
    family = tpu_catalog.resolve(entry.accelerator).family
    if entry.topology is not None:
        try:
            tpu_catalog.resolve(entry.accelerator, entry.topology)
        except tpu_catalog.CatalogError as error:
            found.append(Problem(("topology",), str(error)))
    found += reservation_problems(entry.provisioning, entry.reservation)
    longest = f"{entry.name}-{max(entry.count - 1, 0)}"
    if len(longest) > GKE_NODE_POOL_NAME_MAX:
        found.append(
            Problem(
                ("name",),
                f"node pool name '{longest}' is longer than GKE's "
                f"{GKE_NODE_POOL_NAME_MAX} characters; shorten the slice name",
            )
        )
    inherited = "" if entry.zone else f"the slice inherits gcp:zone {zone}: "
    zone_problem = tpu_catalog.zone_problem(family, zone)
    if entry.provisioning == "flex-start" and family.flex_start_unsupported:
        offered = ", ".join(f.prefix for f in tpu_catalog.FAMILIES if f.flex_start)
        found.append(
            Problem(
                ("provisioning",),
                f"GKE offers no flex-start for {family.prefix}; use on-demand, spot or a "
                f"reservation, or a family that has it ({offered})",
            )
        )
    elif entry.provisioning == "flex-start" and zone_problem is None:
        zone_problem = tpu_catalog.flex_start_zone_problem(family, zone)
    if zone_problem and not entry.allow_unlisted_zone:
        found.append(Problem(("zone",), inherited + zone_problem))
    return found


def version_problems(slices: list[TpuSliceConfig], version: str | None) -> list[Problem]:
    """`[i].accelerator` problems when `cluster.version` is set below what a slice needs."""
    if version is None:
        return []
    found = []
    for i, entry in enumerate(slices):
        family = tpu_catalog.resolve(entry.accelerator).family
        needs = [(family.min_gke_version, f"{family.prefix} node pools")]
        if entry.provisioning == "flex-start":
            needs.append((tpu_catalog.FLEX_START_MIN_GKE_VERSION, "flex-start TPU pools"))
        for minimum, what in needs:
            if minimum is not None and not version_at_least(version, minimum):
                found.append(
                    Problem(
                        (i, "accelerator"),
                        f"{what} need GKE {minimum} or later, but cluster.version is "
                        f"{version}; raise cluster.version",
                    )
                )
    return found


def gpu_pool_problems(pools: list[GpuPoolConfig]) -> list[Problem]:
    """Per-entry checks of `ai-infra:gpuPools`, each at `[i].<field>`."""
    found = []
    for i, entry in enumerate(pools):
        own = []
        if entry.max_nodes < entry.min_nodes:
            own.append(
                Problem(("maxNodes",), f"{entry.max_nodes} is below minNodes {entry.min_nodes}")
            )
        if entry.provisioning == "flex-start" and entry.min_nodes:
            own.append(
                Problem(
                    ("minNodes",),
                    "flex-start pools rest at 0 nodes and grow per provisioning request; set "
                    "minNodes: 0",
                )
            )
        own += reservation_problems(entry.provisioning, entry.reservation)
        if problem := gpu_problem(
            entry.machine_type, entry.accelerator_type, entry.accelerator_count
        ):
            own.append(Problem(("acceleratorType",), problem))
        if problem := boot_disk_problem(entry.machine_type, entry.disk_type):
            own.append(Problem(("diskType",), f"{problem}; set diskType accordingly"))
        if problem := pool_capacity_problem(entry.machine_type, entry.provisioning):
            own.append(Problem(("provisioning",), problem))
        if len(entry.name) > GKE_NODE_POOL_NAME_MAX:
            own.append(
                Problem(
                    ("name",),
                    f"'{entry.name}' is {len(entry.name)} characters; GKE node pool names "
                    f"are at most {GKE_NODE_POOL_NAME_MAX}, so shorten it",
                )
            )
        found += [p.under(i) for p in own]
    return found


def gpu_direct_problems(config: GkeConfig) -> list[Problem]:
    """`gpuPools[i]` problems of the GPU NICs a fast-path machine's nodes take: a range for
    their subnets, each holding every node, names that fit, and GKE `Network` names that are
    not the stack's node networks'."""
    found = []
    node_networks = {n.name for n in config.network.additional_node_networks}
    net = config.network
    taken = {
        "network.subnetCidr": net.subnet_cidr,
        "network.podsCidr": net.pods_cidr,
        "network.servicesCidr": net.services_cidr,
        "network.masterCidr": net.master_cidr,
        **{
            f"network.additionalNodeNetworks {n.name}": n.subnet_cidr
            for n in net.additional_node_networks
        },
    }
    for i, pool in enumerate(config.gpu_pools):
        own = []
        layout = pool.fast_path
        if layout is None:
            if pool.gpu_subnet_cidr is not None:
                own.append(
                    Problem(
                        ("gpuSubnetCidr",),
                        f"only for pools of {', '.join(GPU_DIRECT_MACHINES)} with gpuDirect on; "
                        "remove it",
                    )
                )
            found += [p.under(i) for p in own]
            continue
        if pool.gpu_subnet_cidr is None:
            own.append(
                Problem(
                    ("gpuSubnetCidr",),
                    f"{pool.machine_type} nodes take {layout.nics - 1} more NICs for GPU "
                    "traffic, each in a subnet of its own; give the first subnet's range (e.g. "
                    "10.140.0.0/24; the next ones follow at its size), or set gpuDirect: false "
                    "to run NCCL over one NIC",
                )
            )
        else:
            subnet_problems = _gpu_subnet_problems(pool)
            own += subnet_problems or _gpu_overlap_problems(pool, taken)
            if not subnet_problems:
                taken |= {
                    f"gpuPools[{i}] GPU subnet {k}": c for k, c in enumerate(pool.gpu_subnets())
                }
        longest = f"{config.context.prefix}-{pool.name}-gpu{layout.nics}-internal"
        if len(longest) > 63:
            own.append(
                Problem(
                    ("name",),
                    f"names its GPU networks like '{longest}', longer than Compute Engine's 63 "
                    "characters; shorten the pool name or ai-infra:prefix",
                )
            )
        if clash := node_networks & set(gpu_network_names(pool.name, layout)):
            own.append(
                Problem(
                    ("name",),
                    f"its GPU NICs' GKE Network objects would take the name(s) "
                    f"{', '.join(sorted(clash))} of network.additionalNodeNetworks; rename one",
                )
            )
        found += [p.under(i) for p in own]
    return found


def _gpu_overlap_problems(pool: GpuPoolConfig, taken: Mapping[str, str]) -> list[Problem]:
    """A node has a NIC in each GPU subnet beside the cluster's own ranges, so none may overlap
    them, the node networks' or another pool's GPU subnets (GKE "Set up multi-network
    support for Pods": pod networks of one cluster must not overlap)."""
    for cidr in pool.gpu_subnets():
        for where, other in taken.items():
            if ipaddress.IPv4Network(cidr).overlaps(ipaddress.IPv4Network(other)):
                return [
                    Problem(
                        ("gpuSubnetCidr",),
                        f"GPU subnet {cidr} overlaps {where} {other}; pick a free range for "
                        "the pool's GPU subnets",
                    )
                ]
    return []


def _gpu_subnet_problems(pool: GpuPoolConfig) -> list[Problem]:
    try:
        subnets = pool.gpu_subnets()
    except ValueError:
        return [
            Problem(
                ("gpuSubnetCidr",),
                f"{pool.gpu_subnet_cidr} and the subnets after it run past the IPv4 address "
                "space; start lower",
            )
        ]
    usable = ipaddress.IPv4Network(subnets[0]).num_addresses - 4
    if usable < pool.max_nodes:
        return [
            Problem(
                ("gpuSubnetCidr",),
                f"each GPU subnet ({subnets[0]} and the next {len(subnets) - 1}) has {usable} "
                f"usable addresses, but the pool grows to {pool.max_nodes} nodes, each taking "
                "one; widen it",
            )
        ]
    return []


# ai-infra:workloadIdentities and ai-infra:teams


def identity_problems(config: GkeConfig, *, buckets: Iterable[str]) -> list[Problem]:
    """Checks of `ai-infra:workloadIdentities` against the rest of the stack: account ids,
    bucket names, and who creates each namespace."""
    identities = config.workload_identities
    found = duplicate_names([i.name for i in identities], "workloadIdentities")
    team_names, known_buckets = {t.name for t in config.teams}, list(buckets)
    created: dict[str, int] = {}
    for i, identity in enumerate(identities):
        entry: list[Problem] = account_id_problems(config.context.name(identity.name))
        entry += duplicate_roles(identity.roles)
        entry += unknown_buckets(identity.buckets, known_buckets)
        system_owner = namespace_owner(identity.namespace)
        if system_owner is not None and not identity.create_namespace:
            # A KSA there bound to a Google account with roles would hand those roles to
            # whatever Kubernetes or GKE runs in that namespace.
            entry.append(
                Problem(
                    ("namespace",),
                    f"namespace '{identity.namespace}' belongs to {system_owner}; run workloads "
                    "in a namespace of your own",
                )
            )
        if identity.create_namespace:
            owner = "a team" if identity.namespace in team_names else system_owner
            if owner:
                entry.append(
                    Problem(
                        ("createNamespace",),
                        f"namespace '{identity.namespace}' is created by {owner}; set "
                        "createNamespace: false",
                    )
                )
            elif identity.namespace in created:
                entry.append(
                    Problem(
                        ("createNamespace",),
                        f"namespace '{identity.namespace}' is already created by "
                        f"workloadIdentities[{created[identity.namespace]}]; set "
                        "createNamespace: false",
                    )
                )
            else:
                created[identity.namespace] = i
        found += [p.under(i) for p in entry]
    return found


def team_problems(config: GkeConfig, *, buckets: Iterable[str]) -> list[Problem]:
    """Checks of `ai-infra:teams` against the rest of the stack: namespaces, accounts, quota
    shares against the capacity behind them, buckets and groups."""
    teams = config.teams
    sources = config.quota_sources()
    found = duplicate_names([t.name for t in teams], "teams")
    known_buckets = list(buckets)
    claimed: dict[str, int] = {}
    fractions: dict[str, float] = {}
    groups: dict[str, tuple[int, str]] = {}  # slug -> (team index, group) first listing it
    queues = {provisioned_queue(t.name): t.name for t in teams} if config.provisioned() else {}
    for i, team in enumerate(teams):
        entry: list[Problem] = []
        if team.name in queues:
            entry.append(
                Problem(
                    ("name",),
                    f"'{team.name}' names team {queues[team.name]}'s queue for "
                    "provisioner-created slices (its ClusterQueue and LocalQueue); choose "
                    "another team name",
                )
            )
        if owner := namespace_owner(team.name):
            entry.append(
                Problem(
                    ("name",),
                    f"namespace '{team.name}' belongs to {owner}; choose another team name",
                )
            )
        entry += account_id_problems(config.context.name(team.name))
        entry += duplicate_roles(team.roles)
        if team.tpu_host_network and team.pod_security == "restricted":
            entry.append(
                Problem(
                    ("tpuHostNetwork",),
                    "the restricted level refuses the host network outright; use podSecurity: "
                    "baseline with tpuHostNetwork, or drop tpuHostNetwork",
                )
            )
        if team.gpu_direct_pods and team.pod_security == "restricted":
            entry.append(
                Problem(
                    ("gpuDirectPods",),
                    "the restricted level refuses host paths and NET_ADMIN outright; use "
                    "podSecurity: baseline with gpuDirectPods, or drop gpuDirectPods",
                )
            )
        if team.gpu_direct_pods and not any(p.fast_path for p in config.gpu_pools):
            entry.append(
                Problem(
                    ("gpuDirectPods",),
                    "no gpuPools entry is built on its fast path (A3, A3 Mega, A3 Ultra or A4 "
                    "with GPU NICs), so there is nothing it would allow; drop gpuDirectPods",
                )
            )
        for key, share in team.quota.items():
            if key not in sources:
                entry.append(
                    Problem(
                        ("quota", key),
                        f"no TPU slice or GPU pool named '{key}'; known: "
                        f"{', '.join(sources) or 'none'}",
                    )
                )
                continue
            claimed[key] = claimed.get(key, 0) + explicit_units(share, sources[key])
            if isinstance(share, float):
                fractions[key] = fractions.get(key, 0) + share
            # Fractions are checked before rounding: 60% + 50% of 8 chips rounds to 4 + 4.
            if fractions.get(key, 0) > 1 + 1e-9:
                entry.append(
                    Problem(
                        ("quota", key),
                        f"teams' fractions of '{key}' add up to {fractions[key]:.0%}; lower "
                        "them to 100% or less",
                    )
                )
            elif claimed[key] > sources[key]:
                entry.append(
                    Problem(
                        ("quota", key),
                        f"teams' shares of '{key}' add up to {claimed[key]}, but it provides "
                        f"{sources[key]}; lower the shares or add capacity",
                    )
                )
        entry += unknown_buckets(team.buckets, known_buckets)
        entry += _group_problems(team.groups, i, groups)
        if team.groups and not config.cluster.rbac_security_group:
            entry.append(
                Problem(
                    ("groups",),
                    "Google groups in RBAC need ai-infra:cluster.rbacSecurityGroup "
                    "(gke-security-groups@<your domain>) with these groups as members",
                )
            )
        found += [p.under(i) for p in entry]
    return found


def warnings(config: GkeConfig) -> list[Problem]:
    """What a valid config may say but probably does not mean, at stack paths: a team's
    explicit share of TPU capacity that is not a whole number of slices, and CPU or memory
    quota below what the nodes behind the team's accelerator quota offer."""
    found = _share_warnings(config) + _cpu_warnings(config) + _provisioned_warnings(config)
    found += _one_nic_warnings(config)
    return found + _channel_warnings(config) + _idle_network_warnings(config)


def _one_nic_warnings(config: GkeConfig) -> list[Problem]:
    """A GPU pool of a machine built for GPUDirect or RDMA whose NCCL traffic would run over
    the node's one NIC."""
    found = []
    for i, pool in enumerate(config.gpu_pools):
        layout = gpu_catalog.nic_layout(pool.machine_type)
        if layout is None or pool.fast_path is not None:
            continue
        why = (
            "gpuDirect is false"
            if pool.machine_type in GPU_DIRECT_MACHINES
            else "its GKE fast path (NVIDIA's DRA driver and compute domains) is not built here"
        )
        found.append(
            Problem(
                ("gpuPools", i, "gpuDirect"),
                f"{pool.machine_type} has {layout.gpu_nics} {layout.transport.upper()} NICs for "
                f"GPU traffic, but {why}: multi-node NCCL runs over the node's one NIC",
            )
        )
    return found


def _idle_network_warnings(config: GkeConfig) -> list[Problem]:
    """A node network no slice or provisioner pool attaches to: its VPC, subnet and firewall
    rule are built for nothing."""
    used = config.node_network_users()
    return [
        Problem(
            ("network", "additionalNodeNetworks", i),
            f"no TPU slice or TPU provisioner pool attaches to {n.name} (v6e and tpu7x slices "
            "attach unless they list their own), so its VPC, subnet and firewall rule serve "
            "nothing; remove it, or name it in a slice's additionalNodeNetworks",
        )
        for i, n in enumerate(config.network.additional_node_networks)
        if n.name not in used
    ]


NO_CHANNEL_REMOVAL = "2027-06-14"
"""GKE "Use release channels": not enrolling a cluster in a release channel is deprecated,
allowed only for existing customers, and removed on June 14, 2027, when GKE enrolls the
remaining clusters in Stable."""


def _channel_warnings(config: GkeConfig) -> list[Problem]:
    if config.cluster.release_channel != "NONE":
        return []
    provisioner = (
        " The TPU provisioner (at 6789e2a) creates its pools with auto-upgrade off, which GKE "
        "refuses on a channel: before then it needs a controller that creates pools with "
        "auto-upgrade on and a node-pool exclusion holding their upgrades, as fixed slices have."
        if config.tpu_provisioner.enabled
        else ""
    )
    return [
        Problem(
            ("cluster", "releaseChannel"),
            f"NONE is deprecated by GKE: only existing customers may set it, and on "
            f"{NO_CHANNEL_REMOVAL} GKE enrolls such clusters in the Stable channel. Switching "
            "to a channel replaces the TPU slice pools created without their upgrade hold."
            + provisioner,
        )
    ]


def _provisioned_warnings(config: GkeConfig) -> list[Problem]:
    """Provisioner capacity that no team's quota takes stays with the cohort, which no team's
    provisioner queue borrows from: the provisioner never creates it."""
    found = []
    for flavor in config.provisioned_flavors:
        held = config.allocation.cohort[flavor.name]
        if not held:
            continue
        (source,) = flavor.sources
        accelerator = source.name.removeprefix(PROVISIONER_SOURCE)
        found.append(
            Problem(
                ("tpuProvisioner", "quota", accelerator),
                f"{held} of its {source.units} chips go to no team (whole slices do not divide "
                "among the teams that name no share of it) and stay with the cohort, from which "
                "provisioner queues never borrow, so no job can use them; give them to a team "
                f"(quota: {{{source.name}: ...}}) or lower this count",
            )
        )
    return found


def _cpu_warnings(config: GkeConfig) -> list[Problem]:
    """A team whose `cpu` or `memory` is below the nodes behind its accelerator quota must
    borrow to run a job on all of it, and is then reclaimed by any other team's job that asks
    for its own nominal CPU; one whose GPU pools the catalog cannot size gets none of theirs."""
    found = []
    for i, team in enumerate(config.teams):
        derived = config.host_quota(team.name)
        for key, own, needed in (
            ("cpu", team.cpu, derived.cpu),
            ("memory", team.memory, derived.memory),
        ):
            if own is not None and quantity(own) < quantity(needed):
                found.append(
                    Problem(
                        ("teams", i, key),
                        f"{own} is below the {needed} the nodes behind the team's accelerator "
                        "quota offer pods: a job on all of that quota borrows the rest and is "
                        "preempted when another team reclaims it; raise it or leave it unset",
                    )
                )
        if derived.unsized and (team.cpu is None or team.memory is None):
            found.append(
                Problem(
                    ("teams", i, "cpu"),
                    f"the catalog has no vCPU and memory figures for the nodes of "
                    f"{', '.join(derived.unsized)}, so they add nothing to the team's derived "
                    "CPU and memory quota; set cpu and memory",
                )
            )
    return found


_UNITS = {"": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_UNITS |= {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50}


def quantity(text: str) -> float:
    """A Kubernetes quantity as written in config (`200`, `500m`, `800Gi`) as a number."""
    number = text.rstrip("kmMGTPi")
    return float(number) * _UNITS[text[len(number) :]]


def _share_warnings(config: GkeConfig) -> list[Problem]:
    """A team's explicit share of TPU capacity that is not a whole number of slices: a job
    runs on whole slices, so the part of the share beyond them only ever lends to the
    cohort."""
    slice_units = {s.name: s.slice_units for f in config.flavors for s in f.sources}
    capacity = config.quota_sources()
    found = []
    for i, team in enumerate(config.teams):
        for key, share in team.quota.items():
            unit = slice_units.get(key, 1)
            chips = explicit_units(share, capacity[key])
            if unit <= 1 or chips % unit == 0:
                continue
            whole = chips - chips % unit
            runs = f"{whole // unit} slice(s)" if whole else "no job"
            fits = f"{whole} or {whole + unit}" if whole else f"{unit}"
            found.append(
                Problem(
                    ("teams", i, "quota", key),
                    f"{chips} chips is not a whole number of '{key}' slices ({unit} chips "
                    f"each): the team runs {runs} on its own quota and {chips % unit} chips "
                    f"only lend to others; give {fits} chips, or the fraction that makes them",
                )
            )
    return found


def _group_problems(
    team_groups: list[str], i: int, groups: dict[str, tuple[int, str]]
) -> list[Problem]:
    """`groups[j]` problems for a group that repeats one listed before, up to case or
    punctuation (both would get one IAM grant); `groups` records the first listing."""
    found = []
    for j, group in enumerate(team_groups):
        first = groups.setdefault(slug(group), (i, group))
        if first == (i, group) and group not in team_groups[:j]:
            continue
        if first[1] == group and first[0] != i:
            continue  # teams may share a group; it is granted once
        found.append(
            Problem(
                ("groups", j),
                f"'{group}' repeats '{first[1]}' (teams[{first[0]}]) up to case or "
                "punctuation, and both would get one IAM grant; list each group once, "
                "written the same way",
            )
        )
    return found


# ai-infra:tpuProvisioner


def node_account_problems(
    config: GkeConfig, accounts: Sequence[tuple[tuple[PathPart, ...], str]]
) -> list[Problem]:
    """A `tpuProvisioner.nodeServiceAccount` problem when its nodes would run as an account
    the program creates for something else (`accounts`: every system's claimed account ids):
    the provisioner's own would let any pod on them create and delete node pools, a team's or
    a VM's would hand its grants to every pod on those nodes. The cluster's node account is
    the default and fine."""
    node_account = config.tpu_provisioner.node_service_account
    if not config.tpu_provisioner.enabled or node_account is None:
        return []
    for path, account_id in accounts:
        if path == ("cluster",):
            continue
        if service_account_email(account_id, config.context.project) == node_account:
            owner = (
                "the provisioner's own account"
                if path == ("tpuProvisioner",)
                else (f"the account of {relative_path(path)}")
            )
            return [
                Problem(
                    ("tpuProvisioner", "nodeServiceAccount"),
                    f"'{node_account}' is {owner}; nodes must not run as it. Leave "
                    "nodeServiceAccount unset (the cluster's node account) or name an account "
                    "made for nodes",
                )
            ]
    return []


def flex_start_conflicts(config: GkeConfig) -> list[Problem]:
    """`tpuSlices[i].provisioning` problems for flex-start TPU slices beside the provisioner:
    it acts on any pending JobSet pod that selects a TPU topology, copies the pod's own node
    selectors (such as `ai-infra/capacity: flex-start`) onto a new on-demand pool, and keeps
    that pool until the JobSet ends (creation_controller.go and gke.go at 6789e2a), so
    flex-start work would run on on-demand capacity. Only a label on the pod stops it, and
    Kueue's ProvisioningRequestConfig can add node selectors, not labels."""
    if not config.tpu_provisioner.enabled:
        return []
    return [
        Problem(
            ("tpuSlices", i, "provisioning"),
            "flex-start TPU slices cannot share a cluster with the TPU provisioner, which "
            "would create an on-demand pool for their pending pods; use spot, on-demand or a "
            "reservation here, or turn tpuProvisioner off",
        )
        for i, entry in enumerate(config.tpu_slices)
        if entry.provisioning == "flex-start"
    ]


def provisioner_problems(
    config: GkeConfig, network_config: network.NetworkConfig | None = None
) -> list[Problem]:
    """Cross-checks of `ai-infra:tpuProvisioner`; the stack root checks that its account id
    and Kubernetes service account have no other owner, and that its nodes' account is not
    another's."""
    provisioner = config.tpu_provisioner
    found: list[Problem] = []
    if not provisioner.enabled:
        if provisioner.quota:
            found.append(
                Problem(
                    ("quota",),
                    "quota for provisioner-created slices needs enabled: true; without the "
                    "controller Kueue would admit jobs onto capacity nobody creates",
                )
            )
        return found
    channel = config.cluster.release_channel
    if channel != "NONE":
        found.append(
            Problem(
                ("enabled",),
                "the TPU provisioner manages node pools itself and requires a cluster without "
                f"a release channel; set ai-infra:cluster.releaseChannel: NONE (now {channel})",
            )
        )
    if provisioner.image is None:
        found.append(
            Problem(
                ("image",),
                "is required when enabled: build and push the controller image (upstream "
                "tpu-provisioner README) and give its reference, pinned by digest "
                "(REGISTRY/PATH@sha256:...)",
            )
        )
    zone_problems = []
    if provisioner.zone is not None:
        zone_problems = pool_zone_problems(config, provisioner.zone)
        found += zone_problems
    quota_problems = _provisioner_quota_problems(config, zone_ok=not zone_problems)
    found += quota_problems
    if network_config is not None:
        vpc = network_config.vpc_name(config.context.prefix)
        found += _network_problems(provisioner, vpc)
        found += _stack_network_problems(config)
    if provisioner.additional_node_networks and not config.cluster.dataplane_v2:
        # GKE multi-networking, which additional node networks need, runs on Dataplane V2
        # only (GKE "Set up multi-network support for Pods", requirements).
        found.append(
            Problem(
                ("additionalNodeNetworks",),
                "additional node networks need GKE multi-networking, which needs Dataplane "
                "V2; set ai-infra:cluster.dataplaneV2: true",
            )
        )
    if provisioner.confidential_storage and not provisioner.boot_disk_kms_key:
        found.append(
            Problem(
                ("confidentialStorage",),
                "confidential boot disks need bootDiskKmsKey (GKE NodeConfig: "
                "boot_disk_kms_key is required with enable_confidential_storage)",
            )
        )
    if not quota_problems:
        found += _shape_setting_problems(config)
    return found


def _network_problems(provisioner: TpuProvisionerConfig, cluster_vpc: str) -> list[Problem]:
    """Each additional interface in a VPC of its own, none the cluster's (Compute Engine
    "Multiple network interfaces": every interface of a VM is in a different VPC)."""
    found = []
    seen: dict[str, int] = {}
    for i, extra in enumerate(provisioner.additional_node_networks):
        path = ("additionalNodeNetworks", i, "network")
        if extra.network in seen:
            found.append(
                Problem(
                    path,
                    f"'{extra.network}' is also additionalNodeNetworks[{seen[extra.network]}]; "
                    "a VM has one interface per VPC",
                )
            )
        elif extra.network == cluster_vpc:
            found.append(
                Problem(
                    path,
                    f"'{extra.network}' is the cluster's own VPC, which the node's first "
                    "interface is in; use another VPC",
                )
            )
        seen.setdefault(extra.network, i)
    return found


def _stack_network_problems(config: GkeConfig) -> list[Problem]:
    """`additionalNodeNetworks` entries that name the stack's own node networks are checked as
    the stack's networks are when the provisioner attaches to them by default: the quota's
    families must take a second NIC (the controller gives every pool the same ones), and an
    entry naming one of the stack's VPCs must name its subnet (the subnets' capacity is
    checked with the slices')."""
    provisioner = config.tpu_provisioner
    stack = {n.vpc: n for n in config.network.node_networks(config.context.prefix).values()}
    found = []
    for i, extra in enumerate(provisioner.additional_node_networks):
        own = stack.get(extra.network)
        if own is None:
            continue
        if extra.subnetwork != own.subnet:
            found.append(
                Problem(
                    ("additionalNodeNetworks", i, "subnetwork"),
                    f"'{extra.network}' is the VPC of network.additionalNodeNetworks "
                    f"{own.name}, whose only subnet is '{own.subnet}'; name that subnet",
                )
            )
            continue
        for accelerator, shape in provisioner.shapes().items():
            if problem := tpu_catalog.node_network_problem(shape.family):
                found.append(
                    Problem(
                        ("additionalNodeNetworks", i),
                        f"the controller gives every pool it creates this NIC, and "
                        f"{accelerator} pools take none: {problem}",
                    )
                )
                break
    return found


def _shape_setting_problems(config: GkeConfig) -> list[Problem]:
    """Settings that every pool the provisioner creates takes, against the quota's shapes."""
    provisioner = config.tpu_provisioner
    found = []
    if provisioner.confidential_storage:
        pd = sorted(
            a
            for a, s in provisioner.shapes().items()
            if s.family.boot_disk_type != ("hyperdisk-balanced")
        )
        if pd:
            found.append(
                Problem(
                    ("confidentialStorage",),
                    f"confidential mode is for Hyperdisk boot disks, but {', '.join(pd)} boot "
                    "from pd-balanced; drop those shapes or confidentialStorage",
                )
            )
    taken = {
        config.context.name(s.name): i
        for i, s in enumerate(config.tpu_slices)
        if s.shape.needs_workload_policy
    }
    for accelerator, shape in provisioner.shapes().items():
        policy = f"{WORKLOAD_POLICY_PREFIX}{shape.topology}"
        if shape.family.workload_policy_for_multi_host and policy in taken:
            found.append(
                Problem(
                    ("quota", accelerator),
                    f"the provisioner places {accelerator} by workload policy '{policy}', "
                    f"which is also tpuSlices[{taken[policy]}]'s own policy name; rename "
                    "that slice",
                )
            )
    return found


def _provisioner_quota_problems(config: GkeConfig, *, zone_ok: bool) -> list[Problem]:
    provisioner = config.tpu_provisioner
    zone = config.provisioner_zone
    found = []
    disks: dict[str, list[str]] = {}
    for accelerator in provisioner.quota:
        path = ("quota", accelerator)
        if not _ACCELERATOR.fullmatch(accelerator):
            found.append(
                Problem(
                    path, "is not an accelerator type; write it as the catalog does, e.g. v5p-32"
                )
            )
            continue
        try:
            shape = tpu_catalog.resolve(accelerator)
        except tpu_catalog.CatalogError as error:
            found.append(Problem(path, str(error)))
            continue
        if not shape.family.gke:
            found.append(
                Problem(
                    path,
                    f"GKE has no {shape.family.prefix} node pools here; request it as TPU VMs "
                    "(ai-infra:tpuVms)",
                )
            )
            continue
        nodes = math.ceil(shape.chips / PROVISIONER_CHIPS_PER_NODE)
        if nodes * shape.chips_per_host != shape.chips:
            found.append(
                Problem(
                    path,
                    f"the provisioner sizes a pool as ceil(chips / {PROVISIONER_CHIPS_PER_NODE}) "
                    f"= {nodes} nodes of the requested machine type, so {accelerator} "
                    f"({shape.chips} chips on {shape.machine_type}) would bill "
                    f"{nodes * shape.chips_per_host} chips; give it a fixed tpuSlices entry, "
                    "or use a shape of 1 chip, 4 chips or 4-chip hosts",
                )
            )
            continue
        if zone_ok and (problem := tpu_catalog.zone_problem(shape.family, zone)):
            where = (
                "" if provisioner.zone else f"the provisioner creates pools in gcp:zone {zone}: "
            )
            found.append(Problem(path, where + problem.split("; pick")[0]))
        disks.setdefault(shape.family.boot_disk_type, []).append(accelerator)
    if len(disks) > 1:
        kinds = "; ".join(f"{disk} for {', '.join(names)}" for disk, names in disks.items())
        found.append(
            Problem(
                ("quota",),
                f"the controller gives every pool it creates one boot disk type "
                f"(GCP_NODE_DISK_TYPE), but these shapes need different ones ({kinds}); "
                "provision the other family as fixed tpuSlices",
            )
        )
    return found
