"""The Slurm controller (with the persistent disk that holds slurmctld's state) and the login
VMs of each group: private, shielded, OS Login, on SchedMD's image pinned beside the runtime
scripts (or one built from it), each booting with the script `boot.py` renders. Node VMs are
the controller's to create.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from components.base import Component
from components.context import StackContext
from components.identity import OS_LOGIN_METADATA, Identity
from components.network import NetworkHandle, system_tag
from components.slurm import boot
from components.slurm.config import SlurmConfig
from components.slurm.fields import DEFAULT_SCOPES, needs_unsigned_modules
from components.slurm.files import UNIVERSE_DOMAIN, state_disk_name

CONTROLLER_ID_KEY = "ai_infra_controller_id"
"""Login VMs carry the controller's identity, and are replaced when it changes: a new
controller serves /opt/apps (and, without Filestore, /home) afresh, which a login VM mounts
only at setup (Toolkit's login.tf `replace_triggered_by` the controller). The value is the
hash of the controller inputs whose change replaces it (known before `pulumi up`, so the
offline plan shows the logins' replacement) and its instance id (new with any replacement)."""


def slurm_metadata(
    cluster: str, role: str, bucket_path: str, local_ssd_mount: str | None = None
) -> dict[str, str]:
    """What every VM of the cluster carries in its metadata: what Slurm-GCP's setup reads
    (bucket, cluster, role, universe), OS Login on and project SSH keys off, and the boot
    script, in metadata rather than `metadata_startup_script` so that a new script updates an
    instance in place instead of replacing it."""
    return {
        "slurm_bucket_path": bucket_path,
        "slurm_cluster_name": cluster,
        "slurm_instance_role": role,
        "universe_domain": UNIVERSE_DOMAIN,
        **OS_LOGIN_METADATA,
        "startup-script": boot.render(
            boot.BootScript(
                kind="vm",
                install_tpu_script=role == "controller",
                local_ssd_mount=local_ssd_mount,
            )
        ),
    }


def updates_metadata(allow: bool) -> dict[str, str]:
    """Metadata that turns the image's automatic OS updates off (Compute Engine "Create an
    HPC-ready VM instance": disable automatic updates; Toolkit's `allow_automatic_updates`)."""
    return {} if allow else {"google_disable_automatic_updates": "TRUE"}


def slurm_tags(cluster: str, role: str) -> list[str]:
    """A VM's network tags: the cluster's name, which upstream's tpu.py gives the TPU VMs it
    creates and the cluster's own rule admits, and its role's (`<cluster>-controller`,
    `-login`, `-compute`), which `network.allow` entries open one role by."""
    return [cluster, system_tag(cluster, role)]


def slurm_labels(ctx: StackContext, cluster: str, role: str) -> dict[str, str]:
    """The labels slurmsync.py finds the cluster's instances by, beside the stack's."""
    return {**ctx.labels, "slurm_cluster_name": cluster, "slurm_instance_role": role}


def shielded(secure_boot: bool) -> dict[str, bool]:
    """Shielded VM options: vTPM and integrity monitoring always; Secure Boot where the image
    loads no unsigned kernel modules (slurm-gcp docs/images.md, "Shielded VM Support")."""
    return {
        "enable_secure_boot": secure_boot,
        "enable_vtpm": True,
        "enable_integrity_monitoring": True,
    }


@dataclass(frozen=True)
class VmPlace:
    """What every VM of the cluster shares: its parent, the name resources are prefixed with,
    the stack, the config, the zone, the subnet and the bucket path."""

    parent: Component
    name: str
    ctx: StackContext
    config: SlurmConfig
    zone: str
    network: NetworkHandle
    bucket_path: str


@dataclass(frozen=True)
class VmSpec:
    """One VM: its role, account, machine, boot image and disk, extra metadata and disks."""

    resource: str
    vm_name: str
    role: str
    identity: Identity
    machine_type: str
    image: str
    disk_type: str
    disk_size_gb: int
    metadata: Mapping[str, pulumi.Input[str]]
    secure_boot: bool
    attached: Sequence[gcp.compute.InstanceAttachedDiskArgs] = ()


def _vm(
    place: VmPlace,
    spec: VmSpec,
    *,
    depends_on: Sequence[pulumi.Resource],
    protect: bool,
    replace_on_changes: Sequence[str] = (),
    aliases: Sequence[pulumi.Alias] = (),
) -> gcp.compute.Instance:
    """A private, shielded VM of the cluster on the stack's subnet, with Slurm's metadata."""
    cluster = place.config.cluster_name
    return gcp.compute.Instance(
        f"{place.name}-{spec.resource}",
        project=place.ctx.project,
        zone=place.zone,
        name=spec.vm_name,
        machine_type=spec.machine_type,
        boot_disk=gcp.compute.InstanceBootDiskArgs(
            initialize_params=gcp.compute.InstanceBootDiskInitializeParamsArgs(
                image=spec.image, type=spec.disk_type, size=spec.disk_size_gb
            ),
        ),
        attached_disks=list(spec.attached),
        # No access config: private, reaching Google APIs through Private Google Access
        # and the image registry through Cloud NAT.
        network_interfaces=[
            gcp.compute.InstanceNetworkInterfaceArgs(subnetwork=place.network.subnet_self_link)
        ],
        service_account=gcp.compute.InstanceServiceAccountArgs(
            email=spec.identity.email, scopes=list(DEFAULT_SCOPES)
        ),
        shielded_instance_config=gcp.compute.InstanceShieldedInstanceConfigArgs(
            **shielded(spec.secure_boot)
        ),
        metadata={**slurm_metadata(cluster, spec.role, place.bucket_path), **spec.metadata},
        labels=slurm_labels(place.ctx, cluster, spec.role),
        tags=slurm_tags(cluster, spec.role),
        allow_stopping_for_update=True,
        opts=place.parent.child_opts(
            depends_on=[spec.identity.account, *depends_on],
            protect=protect,
            replace_on_changes=list(replace_on_changes),
            aliases=list(aliases),
        ),
    )


def controller_vm(
    place: VmPlace,
    identity: Identity,
    *,
    after: Sequence[pulumi.Resource],
    files_ready: Sequence[pulumi.Resource],
    lustre: Collection[str] = (),
) -> gcp.compute.Instance:
    """The controller with the persistent disk that holds slurmctld's state; it starts after
    `after`, its own grants and `files_ready`."""
    ctx, config = place.ctx, place.config
    cluster = config.cluster_name
    state_disk = gcp.compute.Disk(
        f"{place.name}-state",
        project=ctx.project,
        zone=place.zone,
        name=state_disk_name(cluster),
        type=config.controller.state_disk.type,
        size=config.controller.state_disk.size_gb,
        labels=ctx.labels,
        opts=place.parent.child_opts(protect=ctx.protect),
    )
    controller = config.controller
    return _vm(
        place,
        VmSpec(
            resource="controller",
            vm_name=config.controller_name,
            role="controller",
            identity=identity,
            machine_type=controller.machine_type,
            image=controller.image.path,
            disk_type=controller.disk_type,
            disk_size_gb=controller.disk_size_gb,
            metadata=updates_metadata(controller.allow_automatic_updates),
            secure_boot=not config.mounts_lustre(lustre),
            # setup.py mounts /dev/disk/by-id/google-<device_name> as slurmctld's state.
            attached=[
                gcp.compute.InstanceAttachedDiskArgs(
                    source=state_disk.self_link, device_name=state_disk_name(cluster)
                )
            ],
        ),
        # setup.py reads the bucket, and asks the TPU API about each nodeset while it writes
        # the Slurm configs (conf.py topology -> tpu.py), without retrying: the controller
        # starts after its grants.
        depends_on=[state_disk, *after, *identity.grants, *files_ready],
        protect=ctx.protect,
    )


def controller_id(place: VmPlace, controller: gcp.compute.Instance) -> pulumi.Output[str]:
    """`CONTROLLER_ID_KEY`'s value: the hash of the controller inputs whose change replaces
    it, and its instance id."""
    config = place.config
    generation = hashlib.sha256(
        json.dumps(
            [
                config.controller_name,
                place.zone,
                config.controller.image.path,
                config.controller.disk_type,
                config.controller.disk_size_gb,
            ]
        ).encode()
    ).hexdigest()[:12]
    return controller.instance_id.apply(lambda i: f"{generation}-{i}")


def login_vms(
    place: VmPlace,
    identity: Identity,
    *,
    controller: pulumi.Output[str],
    after: Sequence[pulumi.Resource],
    lustre: Collection[str] = (),
) -> dict[str, list[gcp.compute.Instance]]:
    """Each login group's VMs, replaced when the controller (`controller`, its id) is."""
    config = place.config
    logins: dict[str, list[gcp.compute.Instance]] = {}
    for group in config.login_groups:
        secure_boot = not (
            config.mounts_lustre(lustre)
            or needs_unsigned_modules(group.network_storage, group.storage, lustre)
        )
        logins[group.name] = [
            _vm(
                place,
                VmSpec(
                    resource=f"login-{group.name}-{i}",
                    vm_name=vm_name,
                    role="login",
                    identity=identity,
                    machine_type=group.machine_type,
                    image=group.image.path,
                    disk_type="pd-balanced",
                    disk_size_gb=group.disk_size_gb,
                    metadata={
                        "slurm_login_group": group.name,
                        CONTROLLER_ID_KEY: controller,
                        **updates_metadata(group.allow_automatic_updates),
                    },
                    secure_boot=secure_boot,
                ),
                depends_on=[*identity.grants, *after],
                protect=False,
                replace_on_changes=[f"metadata.{CONTROLLER_ID_KEY}"],
                aliases=(
                    [pulumi.Alias(name=f"{place.name}-login-{i}")] if group.name == "login" else []
                ),
            )
            for i, vm_name in enumerate(config.login_names(group))
        ]
    return logins


def controller_and_logins(
    parent: Component,
    name: str,
    *,
    ctx: StackContext,
    config: SlurmConfig,
    network: NetworkHandle,
    bucket_path: str,
    identities: Mapping[str, Identity],
    controller_after: Sequence[pulumi.Resource],
    files_ready: Sequence[pulumi.Resource],
    lustre: Collection[str] = (),
) -> tuple[gcp.compute.Instance, dict[str, list[gcp.compute.Instance]]]:
    """The controller with its state disk, and the login groups' VMs. Both start once the
    bucket holds the script zips and `config.yaml` (`files_ready`): their boot would wait for
    them anyway, retrying, but a VM need not run before it can set up. The controller also
    starts after `controller_after` and its grants."""
    place = VmPlace(
        parent=parent,
        name=name,
        ctx=ctx,
        config=config,
        zone=ctx.zone_of(config.controller.zone),
        network=network,
        bucket_path=bucket_path,
    )
    controller = controller_vm(
        place, identities["ctl"], after=controller_after, files_ready=files_ready, lustre=lustre
    )
    logins = login_vms(
        place,
        identities["lgn"],
        controller=controller_id(place, controller),
        after=files_ready,
        lustre=lustre,
    )
    return controller, logins
