"""TPU VM slices through Cloud TPU queued resources (`ai-infra:tpuVms`), for workflows that run
on TPU VMs directly, such as MaxText's `multihost_runner.py`. Each entry is one queued resource
holding `nodeCount` identical slices, with its own least-privilege service account. GKE slices
are `tpuSlices`; queued resource start and end times are not offered yet.
"""

from __future__ import annotations

import pulumi
from pydantic import InstanceOf

from components.base import Component, WiringModel
from components.buckets import BucketsHandle, grant_access
from components.context import StackContext
from components.identity import service_account
from components.network import NetworkHandle
from components.tpu_vms.config import TpuVmConfig
from components.tpu_vms.provider import QueuedResource
from components.types import reservation_parts

NODE_ROLES: tuple[str, ...] = ("roles/logging.logWriter", "roles/monitoring.metricWriter")
"""What a TPU VM's own account needs: write its logs and metrics. Storage and other access
come only from an entry's `buckets` and `roles`."""
STARTUP_SCRIPT_KEY = "startup-script"
"""The metadata key TPU VMs run at boot, as Compute Engine VMs do."""
METADATA_BYTES_MAX = 512 * 1024
"""Compute Engine's limit on all metadata of one VM (compute/docs/metadata/overview)."""


def reservation_name(reservation: str, project: str, zone: str) -> str:
    """The API's `projects/P/locations/ZONE/reservations/R` for a name or shared path."""
    owner, name = reservation_parts(reservation, project)
    return f"projects/{owner}/locations/{zone}/reservations/{name}"


def node_metadata(config: TpuVmConfig) -> dict[str, str]:
    """The metadata of every TPU VM: the entry's, with `startupScript` under its key."""
    if config.startup_script is None:
        return dict(config.metadata)
    return {**config.metadata, STARTUP_SCRIPT_KEY: config.startup_script}


class TpuVmsArgs(WiringModel):
    context: InstanceOf[StackContext]
    """With `protect`, Pulumi refuses the replacement any change causes (killing what runs on
    the slices), and `pulumi destroy`, until protection is lifted."""
    network: InstanceOf[NetworkHandle]
    """The stack's network: the VMs' own unless the entry names another, and the subnet and
    NAT they wait for either way."""
    buckets: InstanceOf[BucketsHandle]
    config: TpuVmConfig


class TpuVms(Component):
    """One queued resource, its dedicated service account and that account's grants."""

    queued_resource: QueuedResource
    service_account_email: str
    node_names: list[str]
    ssh_commands: dict[str, str]
    """TPU VM name -> the gcloud command that opens a shell on its worker 0."""

    def __init__(self, name: str, args: TpuVmsArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ai-infra:tpu_vms:TpuVms", name, opts)
        ctx = args.context
        zone = ctx.zone_of(args.config.zone)
        config = args.config
        shape = config.shape
        waits_for: list[pulumi.Resource] = []
        if config.service_account is None:
            identity = service_account(
                self,
                name,
                project=ctx.project,
                account_id=ctx.name(config.name),
                display_name=f"TPU VMs {config.name}",
                roles=(*NODE_ROLES, *config.roles),
            )
            grants = grant_access(
                self,
                name,
                args.buckets,
                config.buckets,
                member=identity.member,
                depends_on=[identity.account],
            )
            self.service_account_email = identity.email
            # The VMs log from their first boot, and startup scripts may read buckets at once.
            waits_for = [*identity.ready, *grants]
        else:
            self.service_account_email = config.service_account

        props = {
            "project": ctx.project,
            "zone": zone,
            "queuedResourceId": config.name,
            "acceleratorType": shape.accelerator,
            "runtimeVersion": config.runtime,
            "nodeCount": config.node_count,
            "nodePrefix": config.prefix,
            "capacity": config.provisioning,
            "reservationName": (
                reservation_name(config.reservation, ctx.project, zone)
                if config.reservation
                else ""
            ),
            "serviceAccount": self.service_account_email,
            "network": config.network.network if config.network else args.network.self_link,
            "subnetwork": (
                config.network.subnetwork if config.network else args.network.subnet_self_link
            ),
            "enableExternalIps": config.enable_public_ips,
            "secureBoot": config.secure_boot,
            "metadata": node_metadata(config),
            "labels": {**ctx.labels, **config.labels},
            "tags": list(config.tags),
            "dataDisks": [{"sourceDisk": d.source_disk, "mode": d.mode} for d in config.data_disks],
            "timeoutSeconds": config.timeout_minutes * 60,
        }
        self.queued_resource = QueuedResource(
            f"{name}-qr",
            props,
            self.child_opts(
                depends_on=[*waits_for, args.network.component],
                delete_before_replace=True,
                protect=ctx.protect,
            ),
        )
        self.node_names = config.node_names
        internal = "" if config.enable_public_ips else " --internal-ip"
        self.ssh_commands = {
            node: (
                f"gcloud compute tpus tpu-vm ssh {node} --zone={zone} "
                f"--project={ctx.project} --worker=0{internal}"
            )
            for node in self.node_names
        }
        self.register_outputs(
            {
                "accelerator": shape.accelerator,
                "chips": config.chips,
                "nodeNames": self.node_names,
                "sshCommands": self.ssh_commands,
            }
        )
