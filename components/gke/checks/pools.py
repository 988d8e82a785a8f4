"""Problems of `ai-infra:tpuSlices` and `ai-infra:gpuPools`: slices against the catalog and
their node networks, GPU pools and their fast path's subnets, and the warnings of NICs that
carry nothing.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping

from catalog import gpu as gpu_catalog
from catalog import tpu as tpu_catalog
from catalog.gpu import boot_disk_problem, gpu_problem, pool_capacity_problem
from components.base import Problem
from components.gke.checks.cluster import reservation_problems, version_at_least
from components.gke.config import (
    GKE_NODE_POOL_NAME_MAX,
    GkeConfig,
    GpuPoolConfig,
    TpuSliceConfig,
)
from components.gke.gpu_direct import GPU_DIRECT_MACHINES
from components.gke.gpu_direct import network_names as gpu_network_names
from components.ranges import Blocks


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
    blocks = Blocks()
    for where, cidr in taken.items():
        blocks.add(ipaddress.IPv4Network(cidr), where)
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
            own += subnet_problems or _gpu_overlap_problems(pool, taken, blocks)
            if not subnet_problems:
                for k, cidr in enumerate(pool.gpu_subnets()):
                    taken[f"gpuPools[{i}] GPU subnet {k}"] = cidr
                    blocks.add(ipaddress.IPv4Network(cidr), f"gpuPools[{i}] GPU subnet {k}")
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


def _gpu_overlap_problems(
    pool: GpuPoolConfig, taken: Mapping[str, str], blocks: Blocks
) -> list[Problem]:
    """A node has a NIC in each GPU subnet beside the cluster's own ranges, so none may overlap
    them, the node networks' or another pool's GPU subnets (GKE "Set up multi-network
    support for Pods": pod networks of one cluster must not overlap). `blocks` holds
    `taken`'s ranges in its order."""
    for cidr in pool.gpu_subnets():
        if (where := blocks.first_overlap(ipaddress.IPv4Network(cidr))) is not None:
            return [
                Problem(
                    ("gpuSubnetCidr",),
                    f"GPU subnet {cidr} overlaps {where} {taken[where]}; pick a free range for "
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


def one_nic_warnings(config: GkeConfig) -> list[Problem]:
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


def idle_network_warnings(config: GkeConfig) -> list[Problem]:
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
