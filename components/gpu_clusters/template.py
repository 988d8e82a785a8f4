"""A GPU cluster's instance template: the VMs' machine, GPUs, disks, NICs, capacity
(scheduling and reservation affinity), shielded boot, account, metadata and tags; and the
placement policy a group of them takes, compact or a workload policy, per the GPU catalog.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from catalog import gpu as gpu_catalog
from components.base import Component
from components.context import StackContext
from components.gpu_clusters import metadata
from components.gpu_clusters.config import GpuClusterConfig
from components.gpu_clusters.networks import network_tag
from components.identity import Identity
from components.placement import compact_policy, workload_policy

BOOT_DEVICE = "boot"
RESERVATION_KEY = "compute.googleapis.com/reservation-name"
"""The affinity key of a specific reservation (Cluster Toolkit v1.95.0
modules/compute/vm-instance/main.tf:289-298)."""


@dataclass(frozen=True)
class Placement:
    """A group's placement: a compact policy on its template, or a workload policy on the
    group itself; at most one, and none for a single VM."""

    compact: gcp.compute.ResourcePolicy | None = None
    workload: gcp.compute.ResourcePolicy | None = None


def placement(
    parent: Component, name: str, ctx: StackContext, config: GpuClusterConfig, base: str
) -> Placement:
    where = {"project": ctx.project, "region": ctx.region, "name": f"{base}-placement"}
    if config.placement == "compact":
        return Placement(
            compact=compact_policy(
                parent,
                f"{name}-placement",
                **where,
                max_distance=config.placement_max_distance,
            )
        )
    if config.placement != "workload":
        return Placement()
    capacity = gpu_catalog.series_capacity(config.machine_type)
    distance = gpu_catalog.topology_distance(config.machine_type, config.placement_max_distance)
    # Every field of a workload policy replaces it, and a named one is deleted before its
    # replacement is made (the bridge's rule), which Compute Engine refuses while the group
    # uses it. So each distance is a policy, and a resource, of its own: the new one is made,
    # the group moves to it in place, then the old one goes.
    role = f"placement-{distance.lower()}" if distance else "placement"
    where["name"] = f"{base}-{role}"
    return Placement(
        workload=workload_policy(
            parent,
            f"{name}-{role}",
            **where,
            topology=capacity.accelerator_topology if capacity else None,
            max_topology_distance=distance,
        )
    )


def _disks(
    config: GpuClusterConfig, labels: dict[str, str]
) -> list[gcp.compute.InstanceTemplateDiskArgs]:
    disks = [
        gcp.compute.InstanceTemplateDiskArgs(
            boot=True,
            auto_delete=True,
            device_name=BOOT_DEVICE,
            source_image=config.image_ref,
            disk_size_gb=config.disk_size_gb,
            disk_type=config.disk_type,
            labels=labels,
        )
    ]
    if config.data_disk is not None:
        disks.append(
            gcp.compute.InstanceTemplateDiskArgs(
                boot=False,
                auto_delete=True,
                device_name=metadata.DATA_DEVICE,
                disk_size_gb=config.data_disk.size_gb,
                disk_type=config.data_disk.type or config.disk_type,
                labels=labels,
            )
        )
    return disks


def instance_template(
    parent: Component,
    name: str,
    *,
    ctx: StackContext,
    config: GpuClusterConfig,
    base: str,
    labels: dict[str, str],
    identity: Identity,
    nics: list[gcp.compute.InstanceTemplateNetworkInterfaceArgs],
    vm_metadata: dict[str, pulumi.Input[str]],
    compact: gcp.compute.ResourcePolicy | None,
) -> gcp.compute.InstanceTemplate:
    return gcp.compute.InstanceTemplate(
        f"{name}-template",
        project=ctx.project,
        # Templates are immutable: a changed one is created beside the old under a fresh
        # suffix, the group moves to it, then the old one goes.
        name_prefix=f"{base}-",
        machine_type=config.machine_type,
        guest_accelerators=[
            gcp.compute.InstanceTemplateGuestAcceleratorArgs(
                type=config.gpu_type, count=config.gpu_count
            )
        ],
        disks=_disks(config, labels),
        network_interfaces=nics,
        scheduling=_scheduling(config, compact=compact is not None),
        reservation_affinity=_reservation_affinity(config),
        # Secure Boot stays off: it refuses unsigned kernel modules, and the driver the DLVM
        # builds from `install-nvidia-driver` is unsigned (NVIDIA, "precompiled and signed
        # drivers ... required when nodes are enabled with Secure Boot"). vTPM and integrity
        # monitoring still apply.
        shielded_instance_config=gcp.compute.InstanceTemplateShieldedInstanceConfigArgs(
            enable_secure_boot=False, enable_vtpm=True, enable_integrity_monitoring=True
        ),
        service_account=gcp.compute.InstanceTemplateServiceAccountArgs(
            email=identity.email,
            # Access is decided by the account's IAM roles, not by scopes.
            scopes=["cloud-platform"],
        ),
        metadata=vm_metadata,
        labels=labels,
        tags=[network_tag(base)],
        advanced_machine_features=(
            gcp.compute.InstanceTemplateAdvancedMachineFeaturesArgs(
                threads_per_core=config.threads_per_core
            )
            if config.threads_per_core
            else None
        ),
        resource_policies=compact.self_link if compact else None,
        opts=parent.child_opts(depends_on=identity.ready),
    )


def _scheduling(
    config: GpuClusterConfig, *, compact: bool
) -> gcp.compute.InstanceTemplateSchedulingArgs:
    """How the VMs are had and what happens at host maintenance. GPUs cannot live-migrate
    ("GPU machine types": host maintenance), so every VM terminates; automatic restart is off
    with compact placement and for Spot and flex-start VMs, as both Google tools default
    (cluster provisioning tool v0.6.0 aiinfra-compute/main.tf:46-49, Cluster Toolkit v1.95.0
    vm-instance/main.tf:50-66)."""
    provisioning = config.provisioning
    restart = not compact and provisioning not in ("spot", "flex-start")
    if provisioning == "spot":
        return gcp.compute.InstanceTemplateSchedulingArgs(
            on_host_maintenance="TERMINATE",
            automatic_restart=False,
            preemptible=True,
            provisioning_model="SPOT",
            instance_termination_action="STOP",
        )
    if provisioning == "flex-start":
        # Slurm-GCP's flex-start template (Cluster Toolkit v1.95.0 partition.tf:76-77,
        # resume.py update_props_dws): FLEX_START, deleted at the end of the run.
        return gcp.compute.InstanceTemplateSchedulingArgs(
            on_host_maintenance="TERMINATE",
            automatic_restart=False,
            provisioning_model="FLEX_START",
            instance_termination_action="DELETE",
            max_run_duration=gcp.compute.InstanceTemplateSchedulingMaxRunDurationArgs(
                seconds=config.run_seconds
            ),
        )
    if config.bound:
        # "Create a MIG that uses the bulk mode", reservation-bound template: terminate on
        # maintenance, delete at the reservation's end.
        return gcp.compute.InstanceTemplateSchedulingArgs(
            on_host_maintenance="TERMINATE",
            automatic_restart=restart,
            provisioning_model="RESERVATION_BOUND",
            instance_termination_action="DELETE",
        )
    return gcp.compute.InstanceTemplateSchedulingArgs(
        on_host_maintenance="TERMINATE",
        automatic_restart=restart,
        preemptible=False,
        provisioning_model="STANDARD",
    )


def _reservation_affinity(
    config: GpuClusterConfig,
) -> gcp.compute.InstanceTemplateReservationAffinityArgs | None:
    """A named reservation, any matching one, or none at all for flex-start (which must not
    consume reservations; pulumi-gcp's resize-request example, Slurm-GCP's flex template)."""
    if config.provisioning == "flex-start":
        return gcp.compute.InstanceTemplateReservationAffinityArgs(type="NO_RESERVATION")
    if config.provisioning != "reservation":
        return None
    if config.reservation is None:
        return gcp.compute.InstanceTemplateReservationAffinityArgs(type="ANY_RESERVATION")
    return gcp.compute.InstanceTemplateReservationAffinityArgs(
        type="SPECIFIC_RESERVATION",
        specific_reservation=gcp.compute.InstanceTemplateReservationAffinitySpecificReservationArgs(
            key=RESERVATION_KEY, values=[config.reservation]
        ),
    )
