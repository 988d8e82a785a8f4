"""TPU VM slices through Cloud TPU queued resources (`ai-infra:tpuVms`), for workflows that run
on TPU VMs directly, such as MaxText's `multihost_runner.py`. Each entry is one queued resource
holding `nodeCount` identical slices, with its own least-privilege service account and OS Login.
GKE slices are `tpuSlices`.
"""

from __future__ import annotations

from typing import Any

import pulumi
from pydantic import InstanceOf

from components.base import Component, WiringModel
from components.buckets import BucketsHandle, grant_access, grant_named_access
from components.context import StackContext
from components.identity import OS_LOGIN_METADATA, service_account
from components.logins import (
    VIEWER_DESCRIPTION,
    LoginGrants,
    Role,
    grant_logins,
    tpu_host_condition,
    viewer_role_id,
)
from components.network import ALL_INTERNAL, NetworkHandle, firewall_rule, system_tag
from components.startup import GUEST_ATTRIBUTES_METADATA, GUEST_RESERVED_METADATA
from components.storage import Storage, StorageHandle, VolumeMount, gcsfuse_flags
from components.tpu_vms import boot
from components.tpu_vms.config import TpuVmConfig
from components.tpu_vms.provider import QueuedResource, StartupWait
from components.tpu_vms.request import EXTERNAL_IPS, REPLACE_KEYS
from components.types import reservation_parts

NODE_ROLES: tuple[str, ...] = ("roles/logging.logWriter", "roles/monitoring.metricWriter")
"""What a TPU VM's own account needs: write its logs and metrics. Storage and other access
come only from an entry's `buckets` and `roles`."""
STARTUP_SCRIPT_KEY = "startup-script"
"""The metadata key TPU VMs run at boot, as Compute Engine VMs do."""
RESERVED_METADATA = GUEST_RESERVED_METADATA
"""Metadata keys (compared in lower case) an entry's `metadata` may not set: those of every
VM (`components.startup`); the startup script is `startupScript`."""
METADATA_BYTES_MAX = 512 * 1024
"""Compute Engine's limit on all metadata of one VM (compute/docs/metadata/overview)."""


_NESTED_INPUTS = frozenset({"metadata", "labels", "dataDisks", "additionalNetworks", "bootDisk"})


def replace_paths(config: TpuVmConfig) -> list[str]:
    """The queued resource's replacing inputs as `replace_on_changes` paths; a map or list of
    objects is replaced on any change below it too (`<key>.*`). The public IP changes in place
    but on TPU VMs with more than one network (`provider.IN_PLACE_KEYS`)."""
    keys = [*REPLACE_KEYS, *([EXTERNAL_IPS] if config.additional_networks else [])]
    return [f"{key}.*" if key in _NESTED_INPUTS else key for key in keys]


def reservation_name(reservation: str, project: str, zone: str) -> str:
    """The API's `projects/P/locations/ZONE/reservations/R` for a name or shared path."""
    owner, name = reservation_parts(reservation, project)
    return f"projects/{owner}/locations/{zone}/reservations/{name}"


def network_tag(context: StackContext, config: TpuVmConfig) -> str:
    """The tag the stack's firewall rules name this entry's TPU VMs by, beside its own `tags`:
    its slices reach each other, and no other system's VM or pod reaches them."""
    return system_tag(context.name(config.name), "tpu-vm")


def bucket_mounts(config: TpuVmConfig, storage: Storage) -> list[VolumeMount]:
    """The entry's `storage` buckets as mount steps: their names are known before anything is
    created, so the script stays a plain value the provider updates in place. No file cache:
    no local SSD scratch is made on TPU VMs."""
    found = []
    for mount in config.storage:
        volume = storage.volumes.get(mount.volume)
        if volume is None or volume.kind != "gcs":  # refused by the checks, at its path
            continue
        flags = gcsfuse_flags(volume.config.profile, cache_dir=None)
        found.append(
            VolumeMount(
                volume.name,
                "gcs",
                volume.instance,
                mount.mount_path,
                mount.read_only,
                tuple(f for f in flags if f != "--implicit-dirs=true"),
            )
        )
    return found


def node_metadata(config: TpuVmConfig, storage: Storage) -> dict[str, str]:
    """The metadata of every TPU VM: the entry's, the startup script rendered from its steps
    (bucket mounts, then `startupScript`) under its key, guest attributes for its readiness
    signal, and OS Login on, set last so that nothing overrides it."""
    script = boot.render(boot.steps(config.startup_script, bucket_mounts(config, storage)))
    return {
        **config.metadata,
        STARTUP_SCRIPT_KEY: script,
        **GUEST_ATTRIBUTES_METADATA,
        **OS_LOGIN_METADATA,
    }


class TpuVmsArgs(WiringModel):
    context: InstanceOf[StackContext]
    """With `protect`, Pulumi refuses the replacement any change causes (killing what runs on
    the slices), and `pulumi destroy`, until protection is lifted."""
    network: InstanceOf[NetworkHandle]
    """The stack's network: the VMs' own unless the entry names another, and the subnet and
    NAT they wait for either way."""
    buckets: InstanceOf[BucketsHandle]
    storage: InstanceOf[StorageHandle]
    """The stack's volumes, whose buckets `storage` mounts."""
    config: TpuVmConfig


def queued_resource_props(args: TpuVmsArgs, account: str) -> dict[str, Any]:
    """The queued resource's inputs, as the provider takes them."""
    ctx = args.context
    config = args.config
    zone = ctx.zone_of(config.zone)
    shape = config.shape
    return {
        "project": ctx.project,
        "zone": zone,
        "queuedResourceId": config.name,
        "acceleratorType": shape.accelerator,
        "runtimeVersion": config.runtime,
        "nodeCount": config.node_count,
        "nodePrefix": config.prefix,
        "capacity": config.provisioning,
        "reservationName": (
            reservation_name(config.reservation, ctx.project, zone) if config.reservation else ""
        ),
        "serviceAccount": account,
        "network": config.network.network if config.network else args.network.self_link,
        "subnetwork": (
            config.network.subnetwork if config.network else args.network.subnet_self_link
        ),
        "enableExternalIps": config.enable_public_ips,
        "queueCount": config.queue_count or 0,
        "additionalNetworks": [
            {"network": n.network, "subnetwork": n.subnetwork, "queueCount": n.queue_count or 0}
            for n in config.additional_networks
        ],
        "secureBoot": config.secure_boot,
        "bootDisk": config.boot_disk_config,
        "metadata": node_metadata(config, args.storage.storage),
        "labels": {**ctx.labels, **config.labels},
        "tags": list(dict.fromkeys([*config.tags, network_tag(ctx, config)])),
        "dataDisks": [{"sourceDisk": d.source_disk, "mode": d.mode} for d in config.data_disks],
        "timeoutSeconds": config.timeout_minutes * 60,
        "queueingPolicy": config.queueing_policy,
        "apiVersion": config.api_version,
    }


LOGIN_VIEWER_PERMISSIONS = ("tpu.nodes.get", "tpu.queuedResources.get", "compute.projects.get")
"""What a login reads: gcloud's `tpu-vm ssh` gets the node and its guest attributes (the
workers' host names for IAP) and the project, `queued-resources ssh` the queued resource first
(googlecloudsdk command_lib/compute/tpus/tpu_vm/ssh.py PrepareNodeForSSH and util.py
GetProject, surface/compute/tpus/queued_resources/ssh.py, gcloud 528.0.0)."""
SUDO_PERMISSIONS = ("tpu.nodes.update", "tpu.operations.get")
"""What gcloud's `tpu-vm ssh` does next, with or without OS Login: writes the user's key into
the node's `ssh-keys` metadata and waits for the update (AddSSHKeyIfNeeded, gcloud 528.0.0).
Updating a node's metadata can set its startup script, root on its VMs, and Cloud TPU has no
per-node IAM: only `sudo: true` members, root on these VMs anyway, get it; the others reach
the VMs through `python -m hosts`, which runs gcloud's `--plain` SSH with their OS Login key
and needs no update (docs/tpu-vms.md)."""


class TpuVms(Component):
    """One queued resource, its dedicated service account and that account's grants."""

    queued_resource: QueuedResource
    service_account_email: str
    node_names: list[str]
    ssh_commands: dict[str, str]
    """TPU VM name -> the gcloud command that opens a shell on its worker 0 (from inside the
    VPC when the VMs have no public IPs)."""
    iap_ssh_commands: dict[str, str]
    """TPU VM name -> the same through Identity-Aware Proxy, from anywhere: only gcloud's
    alpha `tpu-vm ssh` has `--tunnel-through-iap` (the GA command has none)."""

    def __init__(self, name: str, args: TpuVmsArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ai-infra:tpu_vms:TpuVms", name, opts)
        ctx = args.context
        zone = ctx.zone_of(args.config.zone)
        config = args.config
        account, waits_for = self._identity(name, args)
        self._logins(name, args, account)
        props = queued_resource_props(args, self.service_account_email)
        if config.network is None:
            waits_for.append(self._internal_rule(name, args))
        self.queued_resource = QueuedResource(
            f"{name}-qr",
            props,
            self.child_opts(
                depends_on=[*waits_for, args.network.component],
                delete_before_replace=True,
                # What the provider's diff replaces on, for the offline plan. In `pulumi up`
                # the provider's own diff decides: it reports no changed keys, so the engine
                # has none to hold against this list.
                replace_on_changes=replace_paths(config),
                protect=ctx.protect,
            ),
        )
        self.node_names = config.node_names
        if config.startup_timeout_minutes:
            self._startup_wait(name, args, zone)
        internal = "" if config.enable_public_ips else " --internal-ip"
        where = f"--zone={zone} --project={ctx.project} --worker=0"
        self.ssh_commands = {
            node: f"gcloud compute tpus tpu-vm ssh {node} {where}{internal}"
            for node in self.node_names
        }
        self.iap_ssh_commands = {
            node: f"gcloud alpha compute tpus tpu-vm ssh {node} {where} --tunnel-through-iap"
            for node in self.node_names
        }
        self.register_outputs(
            {
                "accelerator": config.shape.accelerator,
                "chips": config.chips,
                "nodeNames": self.node_names,
                "sshCommands": self.ssh_commands,
                "iapSshCommands": self.iap_ssh_commands,
            }
        )

    def _identity(
        self, name: str, args: TpuVmsArgs
    ) -> tuple[list[pulumi.Resource], list[pulumi.Resource]]:
        """The VMs' account, dedicated unless the entry names one, with its roles and bucket
        grants: the account resource (none for an existing one), and what the VMs wait for
        (they log from their first boot, and startup scripts may read buckets at once)."""
        ctx = args.context
        config = args.config
        if config.service_account is not None:
            self.service_account_email = config.service_account
            return [], []
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
        grants += [
            grant_named_access(
                self,
                name,
                args.buckets,
                bucket,
                role=role,
                member=identity.member,
                depends_on=[identity.account],
            )
            for bucket, role in sorted(args.storage.bucket_roles(config.storage).items())
            # A bucket `buckets` grants keeps the access given there.
            if bucket not in config.buckets
        ]
        self.service_account_email = identity.email
        return [identity.account], [*identity.ready, *grants]

    def _internal_rule(self, name: str, args: TpuVmsArgs) -> pulumi.Resource:
        """The slices' hosts talk to each other (JAX's coordinator, multislice over DCN); an
        entry on a network of its own brings its own rules."""
        ctx = args.context
        tag = network_tag(ctx, args.config)
        return firewall_rule(
            self,
            f"{name}-internal",
            project=ctx.project,
            network=args.network.name,
            name=f"{tag}-internal",
            description=f"TPU VMs {args.config.name}: its slices' hosts to each other",
            source_tags=[tag],
            target_tags=[tag],
            allows=ALL_INTERNAL,
        )

    def _startup_wait(self, name: str, args: TpuVmsArgs, zone: str) -> None:
        config = args.config
        StartupWait(
            f"{name}-startup",
            {
                "project": args.context.project,
                "zone": zone,
                "queuedResourceId": config.name,
                "nodes": self.node_names,
                "workers": config.shape.hosts,
                "apiVersion": config.api_version,
                # A replacement (after a preemption, say) has new VMs to wait for.
                "requestedAt": self.queued_resource.created,
                "timeoutSeconds": config.startup_timeout_minutes * 60,
            },
            self.child_opts(depends_on=[self.queued_resource]),
        )

    def _logins(self, name: str, args: TpuVmsArgs, account: list[pulumi.Resource]) -> None:
        """OS Login for this entry's `logins` on TPU VM hosts only (`tpu_host_condition`, so no
        other Compute Engine VM of the project), reading TPU nodes, and for sudo members
        writing a node's metadata, on the project: IAM Conditions know no Cloud TPU resource
        ("Resource attributes for IAM Conditions" lists none), and a TPU VM's hosts are named
        by Cloud TPU when it makes them, so nothing narrower can be written ahead. The account
        grant and IAP stay as narrow as on GPU clusters."""
        ctx = args.context
        base = ctx.name(args.config.name)
        grant_logins(
            self,
            f"{name}-login",
            project=ctx.project,
            logins=args.config.logins,
            grants=LoginGrants(
                login_condition=tpu_host_condition(ctx.project, ctx.zone_of(args.config.zone)),
                viewer=Role(
                    viewer_role_id(base, "tpu"),
                    f"Reach TPU VMs {base}",
                    VIEWER_DESCRIPTION,
                    LOGIN_VIEWER_PERMISSIONS,
                ),
                viewer_condition=None,
                account=self.service_account_email,
                sudo_role=Role(
                    f"{base.replace('-', '_')}_tpu_keys",
                    f"SSH keys of TPU VMs {base}",
                    "What only logins with sudo get: they are root on the VMs anyway",
                    SUDO_PERMISSIONS,
                ),
            ),
            depends_on=account,
        )
