"""The instance templates the Slurm controller creates CPU and GPU nodes from, one per
nodeset (Toolkit's controller builds them from each `schedmd-slurm-gcp-v6-nodeset`):
machine, disks, network, account, scheduling and the Slurm boot metadata. Counts, zones and
scripts live in the nodeset's YAML (`files.py`), not here.
"""

from __future__ import annotations

import hashlib
import json

import pulumi_gcp as gcp

from components.base import Component
from components.context import StackContext
from components.identity import Identity
from components.network import NetworkHandle
from components.slurm.config import CpuNodesetConfig, SlurmConfig
from components.slurm.vms import shielded, slurm_labels, slurm_metadata, updates_metadata


def node_template(
    parent: Component,
    resource: str,
    *,
    ctx: StackContext,
    config: SlurmConfig,
    nodeset: CpuNodesetConfig,
    network: NetworkHandle,
    bucket_path: str,
    identity: Identity | None,
) -> gcp.compute.InstanceTemplate:
    """The nodes' template. Slurm-GCP caches a template's properties by its name for as long
    as the controller runs (util.py `template_info`, file_cache), so every change gets a new
    name: the properties' hash ends it. `identity` is the cluster's CPU node account, if it
    has one."""
    cluster = config.cluster_name
    email = nodeset.service_account_email or (identity.email if identity else "")
    gpus = nodeset.gpus()
    labels = {**slurm_labels(ctx, cluster, "compute"), "slurm_nodeset": nodeset.name}
    ssd = nodeset.local_ssd
    metadata = {
        **slurm_metadata(cluster, "compute", bucket_path, ssd.mount_path if ssd else None),
        **updates_metadata(nodeset.allow_automatic_updates),
    }
    # Everything the template is made of, and nothing else (counts, zones and scripts
    # live in the nodeset's YAML): a change to any of it, and only that, renames it.
    properties = {
        "machine_type": nodeset.machine_type,
        "gpus": gpus.model_dump() if gpus else None,
        "disk": [nodeset.disk_type, nodeset.disk_size_gb, nodeset.image.path],
        "spot": nodeset.spot,
        "account": [email, list(nodeset.service_account_scopes)],
        "public_ip": nodeset.enable_public_ips,
        "secure_boot": config.secure_boot(nodeset),
        "labels": labels,
        "metadata": metadata,
        "subnet": network.subnet_name,
        "project": ctx.project,
    }
    # Properties added since templates were first named count only when a nodeset sets
    # them, so that one which sets none keeps its template (and its name).
    properties |= {
        key: value
        for key, value in {
            "bandwidth_tier": nodeset.bandwidth_tier if nodeset.nic_type else None,
            "additional_disks": [d.model_dump() for d in nodeset.additional_disks],
            "local_ssds": ssd.count if ssd else None,
            "flex": nodeset.dws_flex.model_dump() if nodeset.flex and nodeset.dws_flex else None,
        }.items()
        if value
    }
    digest = hashlib.sha256(json.dumps(properties, sort_keys=True).encode()).hexdigest()
    return gcp.compute.InstanceTemplate(
        resource,
        project=ctx.project,
        name=f"{cluster}-{nodeset.name}-{digest[:10]}",
        machine_type=nodeset.machine_type,
        disks=_disks(nodeset, cluster),
        guest_accelerators=(
            [gcp.compute.InstanceTemplateGuestAcceleratorArgs(type=gpus.type, count=gpus.count)]
            if gpus is not None
            else []
        ),
        network_interfaces=[
            gcp.compute.InstanceTemplateNetworkInterfaceArgs(
                subnetwork=network.subnet_self_link,
                nic_type=nodeset.nic_type,
                access_configs=(
                    [gcp.compute.InstanceTemplateNetworkInterfaceAccessConfigArgs()]
                    if nodeset.enable_public_ips
                    else []
                ),
            )
        ],
        network_performance_config=(
            gcp.compute.InstanceTemplateNetworkPerformanceConfigArgs(
                total_egress_bandwidth_tier="TIER_1"
            )
            if nodeset.bandwidth_tier == "tier_1_enabled"
            else None
        ),
        service_account=gcp.compute.InstanceTemplateServiceAccountArgs(
            email=email, scopes=list(nodeset.service_account_scopes)
        ),
        scheduling=_scheduling(nodeset),
        reservation_affinity=(
            # Flex-start VMs consume no reservation (Toolkit's partition.tf for dws_flex).
            gcp.compute.InstanceTemplateReservationAffinityArgs(type="NO_RESERVATION")
            if nodeset.flex
            else None
        ),
        shielded_instance_config=gcp.compute.InstanceTemplateShieldedInstanceConfigArgs(
            **shielded(config.secure_boot(nodeset))
        ),
        # Threads per core 1, as Toolkit's nodeset (advanced_machine_features): one Slurm
        # CPU per core.
        advanced_machine_features=gcp.compute.InstanceTemplateAdvancedMachineFeaturesArgs(
            threads_per_core=1
        ),
        metadata=metadata,
        labels=labels,
        tags=[cluster],
        opts=parent.child_opts(
            depends_on=[identity.account] if identity and not nodeset.service_account_email else []
        ),
    )


LOCAL_SSD_GB = 375
"""Every Local SSD disk holds 375 GB (Toolkit's internal_instance_template: `local-ssd` disks
are 375 GB SCRATCH disks on the NVMe interface)."""


def _disks(nodeset: CpuNodesetConfig, cluster: str) -> list[gcp.compute.InstanceTemplateDiskArgs]:
    """The boot disk, the nodeset's extra persistent disks and its local SSDs; a machine type
    that brings its own local SSDs gets them without asking."""
    labels = {"slurm_cluster_name": cluster, "slurm_instance_role": "compute"}
    disks = [
        gcp.compute.InstanceTemplateDiskArgs(
            source_image=nodeset.image.path,
            disk_type=nodeset.disk_type,
            disk_size_gb=nodeset.disk_size_gb,
            boot=True,
            auto_delete=True,
            labels=labels,
        )
    ]
    disks += [
        gcp.compute.InstanceTemplateDiskArgs(
            device_name=disk.device_name,
            disk_type=disk.disk_type,
            disk_size_gb=disk.disk_size_gb,
            type="PERSISTENT",
            boot=False,
            auto_delete=True,
            labels=labels,
        )
        for disk in nodeset.additional_disks
    ]
    ssds = nodeset.local_ssd.count if nodeset.local_ssd and nodeset.local_ssd.count else 0
    disks += [
        gcp.compute.InstanceTemplateDiskArgs(
            disk_type="local-ssd",
            disk_size_gb=LOCAL_SSD_GB,
            type="SCRATCH",
            interface="NVME",
            boot=False,
            auto_delete=True,
        )
        for _ in range(ssds)
    ]
    return disks


def _scheduling(nodeset: CpuNodesetConfig) -> gcp.compute.InstanceTemplateSchedulingArgs:
    """GPUs, Spot and flex-start VMs cannot migrate live (Compute Engine "Host events"), so
    every node terminates on host maintenance. Flex-start nodes are FLEX_START VMs deleted
    after their run duration, as Toolkit's partition.tf and nodeset build them for dws_flex
    (provisioning model, max run duration, termination action DELETE)."""
    if nodeset.flex and nodeset.dws_flex is not None:
        return gcp.compute.InstanceTemplateSchedulingArgs(
            on_host_maintenance="TERMINATE",
            automatic_restart=False,
            provisioning_model="FLEX_START",
            instance_termination_action="DELETE",
            max_run_duration=gcp.compute.InstanceTemplateSchedulingMaxRunDurationArgs(
                seconds=nodeset.dws_flex.max_run_duration
            ),
        )
    return gcp.compute.InstanceTemplateSchedulingArgs(
        on_host_maintenance="TERMINATE",
        automatic_restart=not nodeset.spot,
        preemptible=nodeset.spot,
        provisioning_model="SPOT" if nodeset.spot else "STANDARD",
        instance_termination_action="DELETE" if nodeset.spot else None,
    )
