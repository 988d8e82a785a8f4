"""Slurm as the stack sees it: its build (one Slurm-GCP v6 cluster), checks at stack paths, the
accounts, tags, subnets, Filestore name, VM names, node accounts and bucket it claims, its
mounts, plan section, chips, VMs in the stack's VPC and stack outputs. With no `ai-infra:slurm`
it has none of them.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

import pulumi

from catalog import tpu as tpu_catalog
from components.base import PathPart, Problem, Source, under
from components.buckets import BucketsHandle
from components.context import StackContext
from components.identity import service_account_email
from components.network import NetworkHandle, system_tag
from components.slurm.checks import cpu_zones, gpu_subnets, stack_range_problems
from components.slurm.checks import problems as cluster_problems
from components.slurm.cluster import (
    SlurmCluster,
    SlurmClusterArgs,
    controller_permissions,
    ssh_command,
)
from components.slurm.config import ACCOUNT_ROLES, CpuNodesetConfig, SlurmConfig, account_id
from components.slurm.scripts import TOOLKIT_RELEASE
from components.storage import StorageHandle
from components.system import Claim, ClaimKind, Handles, Mounted, Section, StackView

if TYPE_CHECKING:
    from stacks.config import StackConfig

NODE_ACCOUNT_USE = (
    "is the account of {owner}; the Slurm controller may act as every node account, so it "
    "would gain that entry's access: name an account of the nodes' own, or leave it unset for "
    "the cluster's node account"
)
"""Why a nodeset may not run as an account the stack makes for another system (the GKE nodes,
a team, a workload identity, a TPU VM entry, a GPU cluster)."""


def build(
    config: SlurmConfig,
    *,
    context: StackContext,
    network: NetworkHandle,
    storage: StorageHandle,
    buckets: BucketsHandle,
    services: pulumi.ResourceOptions,
    source: Source,
) -> SlurmCluster:
    return SlurmCluster(
        source("slurm", "slurm"),
        SlurmClusterArgs(
            context=context, network=network, storage=storage, buckets=buckets, config=config
        ),
        services,
    )


def account_claims(context: StackContext) -> list[tuple[tuple[PathPart, ...], str]]:
    """The cluster's controller, TPU node, login and CPU node account ids."""
    return [(("slurm",), account_id(context, role)) for role in ACCOUNT_ROLES]


def network_tags(config: SlurmConfig) -> dict[str, list[str]]:
    """The tags `network.allow` opens the cluster by: all its VMs, the controller, the login
    VMs (`vms.slurm_tags`)."""
    cluster = config.cluster_name
    return {
        "slurm": [cluster],
        "slurmController": [system_tag(cluster, "controller")],
        "slurmLogin": [system_tag(cluster, "login")],
    }


def node_accounts(config: SlurmConfig) -> list[tuple[tuple[PathPart, ...], str]]:
    """The accounts nodesets name to run as, by the path of their `serviceAccountEmail`; the
    controller may act as each, so none may be another system's."""
    found: list[tuple[tuple[PathPart, ...], str]] = []
    for key, nodesets in (
        ("tpuNodesets", config.tpu_nodesets),
        ("cpuNodesets", config.cpu_nodesets),
    ):
        for i, nodeset in enumerate(nodesets):
            if nodeset.service_account_email is not None:
                found.append(
                    (("slurm", key, i, "serviceAccountEmail"), nodeset.service_account_email)
                )
    return found


def describe(
    config: SlurmConfig, context: StackContext, lustre: Collection[str] = ()
) -> list[tuple[str, list[str]]]:
    """The plan's section: the controller, login groups with their SSH commands, /home,
    nodesets (CPU machines; TPU workers per slice), partitions and the controller's role."""
    zone = context.zone_of(config.controller.zone)
    home = config.home
    lines = [
        f"  cluster {config.cluster_name}: controller {config.controller_name} "
        f"({config.controller.machine_type}) in {zone}, Slurm-GCP scripts of Cluster Toolkit "
        f"{TOOLKIT_RELEASE}" + (f" from {config.scripts_mirror}" if config.scripts_mirror else ""),
        f"  bucket path gs://{config.bucket_name(context.project, context.prefix)}/"
        f"{config.cluster_name}-files",
        (
            f"  /home: Filestore {home.tier} {home.capacity_gb} GiB "
            f"{context.name('slurm', config.cluster_name, 'home')}"
            if home.filestore
            else "  /home: on the controller's boot disk (lost when the controller is replaced)"
        ),
    ]
    lines += [
        f"  mount {s.local_mount}: {s.fs_type} {s.server_ip}:{s.remote_mount} on every VM"
        for s in config.network_storage
    ]
    for group in config.login_groups:
        lines.append(f"  login group {group.name}: {group.count} x {group.machine_type}")
        lines += [
            f"    ssh: {ssh_command(vm, zone, context.project)}" for vm in config.login_names(group)
        ]
    for c in config.all_cpu_nodesets:
        lines.append(
            f"  nodeset {c.name}: {c.machine_type} in {', '.join(cpu_zones(c, context))}, "
            f"{c.node_count_static} static + up to {c.node_count_dynamic_max} dynamic nodes"
            f"{''.join(f', {f}' for f in _cpu_flags(c, config, lustre))}"
        )
    for n in config.tpu_nodesets:
        shape = n.node_type or (
            f"{n.accelerator_config.version} {n.accelerator_config.topology}"
            if n.accelerator_config
            else "?"
        )
        disks = "read-only" if n.data_disks_read_only else "read-write"
        flags = [
            f
            for f, on in (
                ("preemptible", n.preemptible),
                ("reserved", n.reserved),
                (f"{len(n.data_disks)} data disk(s) {disks}", bool(n.data_disks)),
            )
            if on
        ]
        lines.append(
            f"  nodeset {n.name}: {shape} in {context.zone_of(n.zone)}, {n.workers_per_slice} "
            f"worker(s) per slice, {n.node_count_static} static + up to "
            f"{n.node_count_dynamic_max} dynamic nodes"
            + (f" ({n.max_vms // n.workers_per_slice} slices)" if n.workers_per_slice > 1 else "")
            + f", runtime tpu-vm-tf-{n.tf}"
            f"{''.join(f', {f}' for f in flags)}"
        )
    workers = {n.name: n.workers_per_slice for n in config.tpu_nodesets}
    for p in config.all_partitions:
        tpu = config.is_tpu_partition(p)
        per_slice = max((workers.get(n, 1) for n in p.nodesets), default=1)
        topology = (
            f", tree topology: one leaf switch per slice of {per_slice} nodes"
            if tpu and per_slice > 1
            else ""
        )
        lines.append(
            f"  partition {p.name}{' (default)' if p.default else ''}: "
            f"{', '.join(p.nodesets)}{', exclusive' if p.exclusive or tpu else ''}{topology}"
        )
    controller = service_account_email(account_id(context, "ctl"), context.project)
    lines.append(
        f"  controller {controller}: custom role with "
        f"{len(controller_permissions(config))} permissions"
    )
    return [("Slurm (controller, login, nodesets, partitions)", lines)]


NIC_LABELS = {
    "virtio_enabled": "VirtIO NIC",
    "gvnic_enabled": "gVNIC",
    "tier_1_enabled": "gVNIC with Tier_1 bandwidth",
}


def _cpu_flags(
    nodeset: CpuNodesetConfig, config: SlurmConfig, lustre: Collection[str] = ()
) -> list[str]:
    """What sets a CPU or GPU nodeset apart, for its plan line."""
    gpus = nodeset.gpus()
    ssd = nodeset.local_ssd
    flex = nodeset.dws_flex
    distance = nodeset.placement_max_distance
    layout = nodeset.nic_layout
    return [
        flag
        for flag, on in (
            (f"{gpus.count} x {gpus.type}" if gpus else "", gpus is not None),
            ("spot", nodeset.spot),
            (f"reservation {nodeset.reservation}", nodeset.reservation is not None),
            (
                f"flex-start up to {flex.max_run_duration} s" if flex else "",
                nodeset.flex,
            ),
            (
                "compact placement" + (f" at max distance {distance}" if distance else ""),
                nodeset.enable_placement,
            ),
            (NIC_LABELS.get(nodeset.bandwidth_tier, ""), nodeset.nic_type is not None),
            (
                f"{layout.nics - 1} more NICs ({layout.transport}) from "
                f"{nodeset.gpu_network_cidrs()[0]}"
                if layout
                else "",
                layout is not None,
            ),
            (
                (f"{ssd.count} local SSDs" if ssd.count else "its local SSDs")
                + f" at {ssd.mount_path}"
                if ssd
                else "",
                ssd is not None,
            ),
            (f"{len(nodeset.additional_disks)} extra disk(s)", bool(nodeset.additional_disks)),
            ("automatic updates off", not nodeset.allow_automatic_updates),
            ("secure boot off", not config.secure_boot(nodeset, lustre)),
        )
        if on
    ]


def problems(view: StackView) -> list[Problem]:
    """The cluster's own problems, and its ranges against the stack VPC's."""
    config = view.config
    if config.slurm is None:
        return []
    found = under(
        "slurm",
        cluster_problems(
            config.slurm,
            config.context,
            buckets=[b.name for b in config.buckets],
            storage=config.resolved_storage,
        ),
    )
    ranges = {
        c.what: c.value
        for c in view.claimed(ClaimKind.RANGE, system="stack")
        if c.path[1:2] != ("additionalNodeNetworks",)
    }
    return found + under("slurm", stack_range_problems(config.slurm, ranges))


def claims(config: StackConfig) -> list[Claim]:
    """The cluster's accounts, its VMs' tags, its nodesets' GPU subnets, its /home's Filestore
    name, the names its controller gives TPU VMs, the accounts its nodesets run as and its
    bucket."""
    cluster = config.slurm
    if cluster is None:
        return []
    ctx = config.context
    found = [Claim(ClaimKind.ACCOUNT, value, path) for path, value in account_claims(ctx)]
    found += [
        Claim(ClaimKind.TAG, tag, ("slurm",), opening, opens=True)
        for opening, tags in network_tags(cluster).items()
        for tag in tags
    ]
    compute = system_tag(cluster.cluster_name, "compute")
    found.append(Claim(ClaimKind.TAG, compute, ("slurm",), "slurm"))
    found += [
        Claim(ClaimKind.RANGE, cidr, ("slurm",), where)
        for where, cidr in gpu_subnets(cluster).items()
    ]
    if cluster.home.filestore:
        home = ctx.name("slurm", cluster.cluster_name, "home")
        found.append(Claim(ClaimKind.FILESTORE, home, ("slurm",)))
    # Slurm-GCP names a nodeset's TPU VMs <clusterName>-<nodeset>-<index>.
    for i, nodeset in enumerate(cluster.tpu_nodesets):
        prefix = f"{cluster.cluster_name}-{nodeset.name}"
        what = (
            f"Slurm nodeset {prefix} ({prefix}-<n>), whose controller deletes its nodes by name "
            "when it suspends them"
        )
        found.append(
            Claim(ClaimKind.VM_NAME, prefix, ("slurm", "tpuNodesets", i), what, pattern=True)
        )
    found += [
        Claim(ClaimKind.ACCOUNT_USE, email, path, NODE_ACCOUNT_USE, chosen=True)
        for path, email in node_accounts(cluster)
    ]
    bucket = cluster.bucket_name(ctx.project, ctx.prefix)
    return [*found, Claim(ClaimKind.BUCKET, bucket, ("slurm",))]


def mounts(config: StackConfig) -> list[Mounted]:
    """What every VM, each login group and each nodeset mounts."""
    cluster = config.slurm
    if cluster is None:
        return []
    tags = tuple(network_tags(cluster)["slurm"])
    found = [
        Mounted(f"Slurm {cluster.cluster_name} (every VM)", mount, tags)
        for mount in cluster.storage
    ]
    for group in cluster.login_groups:
        found += [Mounted(f"Slurm login group {group.name}", m, tags) for m in group.storage]
    for nodeset in [*cluster.cpu_nodesets, *cluster.tpu_nodesets]:
        found += [Mounted(f"Slurm nodeset {nodeset.name}", m, tags) for m in nodeset.storage]
    return found


def build_step(view: StackView, handles: Handles, source: Source) -> SlurmCluster | None:
    config = view.config
    if config.slurm is None:
        return None
    stack = handles["stack"]
    return build(
        config.slurm,
        context=config.context,
        network=stack.network,
        storage=handles["storage"],
        buckets=stack.buckets,
        services=stack.after_services,
        source=source,
    )


def sections(view: StackView) -> list[Section]:
    config = view.config
    if config.slurm is None:
        return []
    return describe(config.slurm, config.context, config.resolved_storage.lustre_names)


def outputs(config: StackConfig, handles: Handles) -> dict[str, Any]:
    cluster: SlurmCluster | None = handles["slurm"]
    return {} if cluster is None else {"slurm": cluster.exports}


def tpu_chips(config: StackConfig) -> int:
    """The TPU nodesets' chips at their most: one Slurm node per TPU VM."""
    nodesets = config.slurm.tpu_nodesets if config.slurm is not None else []
    return sum(
        (n.node_count_static + n.node_count_dynamic_max)
        * tpu_catalog.resolve(n.node_type or f"{n.family}-{n.cores}").chips_per_host
        for n in nodesets
    )


def vms_in_vpc(config: StackConfig) -> list[str]:
    if config.slurm is None:
        return []
    return [
        f"Slurm cluster {config.slurm.cluster_name}'s controller, login VMs and the TPU VMs it "
        "creates"
    ]
