"""The instance templates the Slurm controller creates CPU and GPU nodes from, one per
nodeset (Toolkit's controller builds them from each `schedmd-slurm-gcp-v6-nodeset`):
machine, disks, network, account, scheduling and the Slurm boot metadata. Counts, zones and
scripts live in the nodeset's YAML (`files.py`), not here.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection

import pulumi_gcp as gcp

from catalog import gpu as gpu_catalog
from components.base import Component
from components.context import StackContext
from components.identity import Identity
from components.network import NetworkHandle, rdma_nics, vpc_with_subnet
from components.slurm.config import SlurmConfig
from components.slurm.nodesets import CpuNodesetConfig
from components.slurm.vms import (
    shielded,
    slurm_labels,
    slurm_metadata,
    slurm_tags,
    updates_metadata,
)


def gpu_network_base(ctx: StackContext, config: SlurmConfig, nodeset: CpuNodesetConfig) -> str:
    """The cloud names of a nodeset's GPU networks start so: `<base>-net<k>`, `<base>-rdma`,
    `<base>-rdma-subnet<j>`."""
    return ctx.name("slurm", config.cluster_name, nodeset.name)


def gpu_nics(
    parent: Component,
    resource: str,
    *,
    ctx: StackContext,
    config: SlurmConfig,
    nodeset: CpuNodesetConfig,
) -> list[gcp.compute.InstanceTemplateNetworkInterfaceArgs]:
    """The NICs after the first, each on a network of the nodeset's own, as the GPU catalog's
    layout has them: a VPC per NIC admitting the nodeset's subnet (a second host NIC at the
    host MTU, GPUDirect-TCPX(O) NICs at the GPU MTU), or for RDMA the MRDMA NICs in one VPC
    with the zone's RoCE profile, a subnet each and no firewall (Cluster Toolkit v1.95.0
    modules/network/gpu-rdma-vpc)."""
    layout = nodeset.nic_layout
    if layout is None:
        return []
    base = gpu_network_base(ctx, config, nodeset)
    cidrs = nodeset.gpu_network_cidrs()
    own = layout.host_nics - 1 if layout.rdma else len(cidrs)
    nics = []
    for k, cidr in enumerate(cidrs[:own], start=1):
        vpc, subnet = vpc_with_subnet(
            parent,
            project=ctx.project,
            region=ctx.region,
            cidr=cidr,
            mtu=layout.host_mtu if k < layout.host_nics else layout.gpu_mtu,
            description=f"Slurm {config.cluster_name} nodeset {nodeset.name}: NIC {k}",
            vpc=(f"{resource}-net{k}", f"{base}-net{k}"),
            subnet=(f"{resource}-subnet{k}", f"{base}-net{k}"),
            firewall=(f"{resource}-internal{k}", f"{base}-net{k}"),
        )
        nics.append(
            gcp.compute.InstanceTemplateNetworkInterfaceArgs(
                network=vpc.self_link, subnetwork=subnet.self_link, nic_type="GVNIC"
            )
        )
    if not layout.rdma:
        return nics
    zone = (nodeset.zones or [ctx.zone])[0]
    return nics + rdma_nics(
        parent,
        f"{resource}-rdma",
        project=ctx.project,
        region=ctx.region,
        name=f"{base}-rdma",
        mtu=layout.gpu_mtu,
        profile=gpu_catalog.roce_profile(ctx.project, zone),
        cidrs=cidrs[own:],
    )


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
    lustre: Collection[str] = (),
) -> gcp.compute.InstanceTemplate:
    """The nodes' template. Slurm-GCP caches a template's properties by its name for as long
    as the controller runs (util.py `template_info`, file_cache), so every change gets a new
    name: the properties' hash ends it. `identity` is the cluster's CPU node account, if it
    has one; `lustre` names the `ai-infra:storage` Lustre volumes (their client needs Secure
    Boot off)."""
    cluster = config.cluster_name
    email = nodeset.service_account_email or (identity.email if identity else "")
    gpus = nodeset.gpus()
    labels = {**slurm_labels(ctx, cluster, "compute"), "slurm_nodeset": nodeset.name}
    tags = slurm_tags(cluster, "compute")
    ssd = nodeset.local_ssd
    metadata: dict[str, str] = {
        **slurm_metadata(cluster, "compute", bucket_path, ssd.mount_path if ssd else None),
        **updates_metadata(nodeset.allow_automatic_updates),
    }
    return gcp.compute.InstanceTemplate(
        resource,
        project=ctx.project,
        name=_template_name(
            ctx,
            config,
            nodeset,
            subnet=network.subnet_name,
            email=email,
            labels=labels,
            metadata=metadata,
            tags=tags,
            secure_boot=config.secure_boot(nodeset, lustre),
        ),
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
                # The GPU layouts' host NICs are gVNIC (gpu_catalog.GpuNicLayout).
                nic_type=nodeset.nic_type or ("GVNIC" if nodeset.nic_layout else None),
                access_configs=(
                    [gcp.compute.InstanceTemplateNetworkInterfaceAccessConfigArgs()]
                    if nodeset.enable_public_ips
                    else []
                ),
            ),
            *gpu_nics(parent, resource, ctx=ctx, config=config, nodeset=nodeset),
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
            **shielded(config.secure_boot(nodeset, lustre))
        ),
        # Threads per core 1 by default, as Toolkit's nodeset (advanced_machine_features):
        # one Slurm CPU per core.
        advanced_machine_features=gcp.compute.InstanceTemplateAdvancedMachineFeaturesArgs(
            threads_per_core=nodeset.threads_per_core
        ),
        metadata=metadata,
        labels=labels,
        tags=tags,
        opts=parent.child_opts(
            depends_on=[identity.account] if identity and not nodeset.service_account_email else []
        ),
    )


def _template_name(
    ctx: StackContext,
    config: SlurmConfig,
    nodeset: CpuNodesetConfig,
    *,
    subnet: str,
    email: str,
    labels: dict[str, str],
    metadata: dict[str, str],
    tags: list[str],
    secure_boot: bool,
) -> str:
    """`<cluster>-<nodeset>-<hash>` of everything the template is made of, and nothing else
    (counts, zones and scripts live in the nodeset's YAML): a change to any of it, and only
    that, renames it."""
    gpus = nodeset.gpus()
    ssd = nodeset.local_ssd
    properties = {
        "machine_type": nodeset.machine_type,
        "gpus": gpus.model_dump() if gpus else None,
        "disk": [nodeset.disk_type, nodeset.disk_size_gb, nodeset.image.path],
        "spot": nodeset.spot,
        "account": [email, list(nodeset.service_account_scopes)],
        "public_ip": nodeset.enable_public_ips,
        "secure_boot": secure_boot,
        "labels": labels,
        "metadata": metadata,
        "tags": tags,
        "subnet": subnet,
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
            "gpu_networks": nodeset.gpu_network_cidrs(),
            "threads_per_core": nodeset.threads_per_core if nodeset.threads_per_core != 1 else None,
        }.items()
        if value
    }
    digest = hashlib.sha256(json.dumps(properties, sort_keys=True).encode()).hexdigest()
    return f"{config.cluster_name}-{nodeset.name}-{digest[:10]}"


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
