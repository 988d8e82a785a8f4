"""What the offline plan says of `ai-infra:slurm`: the controller, login groups, /home,
nodesets and partitions with what sets each apart, and the controller's role.
"""

from __future__ import annotations

from collections.abc import Collection

from components.context import StackContext
from components.identity import service_account_email
from components.slurm.cluster import ssh_command
from components.slurm.config import SlurmConfig, account_id
from components.slurm.nodesets import CpuNodesetConfig, cpu_zones
from components.slurm.partitions import PartitionConfig
from components.slurm.permissions import controller_permissions
from components.slurm.scripts import TOOLKIT_RELEASE


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
            f", tree topology: one leaf switch per slice of {per_slice} nodes, jobs wait for "
            "whole slices"
            if tpu and per_slice > 1
            else ""
        )
        lines.append(
            f"  partition {p.name}{' (default)' if p.default else ''}: "
            f"{', '.join(p.nodesets)}{', exclusive' if p.exclusive or tpu else ''}{topology}"
            f", {_resume(config, p)}"
        )
    controller = service_account_email(account_id(context, "ctl"), context.project)
    lines.append(
        f"  controller {controller}: custom role with "
        f"{len(controller_permissions(config))} permissions"
    )
    return [("Slurm (controller, login, nodesets, partitions)", lines)]


def _resume(config: SlurmConfig, partition: PartitionConfig) -> str:
    """How long Slurm waits for the partition's nodes before it marks them down."""
    if config.has_flex(partition):
        return "nodes waited for until flex-start capacity comes (ResumeTimeout 65535)"
    seconds = config.partition_conf(partition)["ResumeTimeout"]
    return f"nodes must register within {seconds} s (ResumeTimeout)"


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
