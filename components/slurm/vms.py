"""The Slurm controller (with the persistent disk that holds slurmctld's state) and the login
VMs of each group: private, shielded, OS Login, on SchedMD's image pinned beside the runtime
scripts (or one built from it), each booting with the script `boot.py` renders. Node VMs are
the controller's to create.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Mapping, Sequence

import pulumi
import pulumi_gcp as gcp

from components.base import Component
from components.context import StackContext
from components.identity import OS_LOGIN_METADATA, Identity
from components.network import NetworkHandle, system_tag
from components.slurm import boot
from components.slurm.config import (
    DEFAULT_SCOPES,
    SlurmConfig,
    needs_unsigned_modules,
)
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
    cluster = config.cluster_name
    zone = ctx.zone_of(config.controller.zone)
    state_disk = gcp.compute.Disk(
        f"{name}-state",
        project=ctx.project,
        zone=zone,
        name=state_disk_name(cluster),
        type=config.controller.state_disk.type,
        size=config.controller.state_disk.size_gb,
        labels=ctx.labels,
        opts=parent.child_opts(protect=ctx.protect),
    )

    def vm(
        resource: str,
        vm_name: str,
        role: str,
        identity: Identity,
        machine_type: str,
        image: str,
        disk_type: str,
        disk_size_gb: int,
        metadata: Mapping[str, pulumi.Input[str]],
        attached: list[gcp.compute.InstanceAttachedDiskArgs],
        depends_on: list[pulumi.Resource],
        protect: bool,
        secure_boot: bool,
        **options: object,
    ) -> gcp.compute.Instance:
        return gcp.compute.Instance(
            f"{name}-{resource}",
            project=ctx.project,
            zone=zone,
            name=vm_name,
            machine_type=machine_type,
            boot_disk=gcp.compute.InstanceBootDiskArgs(
                initialize_params=gcp.compute.InstanceBootDiskInitializeParamsArgs(
                    image=image, type=disk_type, size=disk_size_gb
                ),
            ),
            attached_disks=attached,
            # No access config: private, reaching Google APIs through Private Google Access
            # and the image registry through Cloud NAT.
            network_interfaces=[
                gcp.compute.InstanceNetworkInterfaceArgs(subnetwork=network.subnet_self_link)
            ],
            service_account=gcp.compute.InstanceServiceAccountArgs(
                email=identity.email, scopes=list(DEFAULT_SCOPES)
            ),
            shielded_instance_config=gcp.compute.InstanceShieldedInstanceConfigArgs(
                **shielded(secure_boot)
            ),
            metadata={**slurm_metadata(cluster, role, bucket_path), **metadata},
            labels=slurm_labels(ctx, cluster, role),
            tags=slurm_tags(cluster, role),
            allow_stopping_for_update=True,
            opts=parent.child_opts(
                depends_on=[identity.account, *depends_on], protect=protect, **options
            ),
        )

    controller = vm(
        "controller",
        config.controller_name,
        "controller",
        identities["ctl"],
        config.controller.machine_type,
        config.controller.image.path,
        config.controller.disk_type,
        config.controller.disk_size_gb,
        updates_metadata(config.controller.allow_automatic_updates),
        # setup.py mounts /dev/disk/by-id/google-<device_name> as slurmctld's state.
        [
            gcp.compute.InstanceAttachedDiskArgs(
                source=state_disk.self_link, device_name=state_disk_name(cluster)
            )
        ],
        # setup.py reads the bucket, and asks the TPU API about each nodeset while it writes
        # the Slurm configs (conf.py topology -> tpu.py), without retrying: the controller
        # starts after its grants.
        [state_disk, *controller_after, *identities["ctl"].grants, *files_ready],
        ctx.protect,
        not config.mounts_lustre(lustre),
    )
    generation = hashlib.sha256(
        json.dumps(
            [
                config.controller_name,
                zone,
                config.controller.image.path,
                config.controller.disk_type,
                config.controller.disk_size_gb,
            ]
        ).encode()
    ).hexdigest()[:12]
    controller_id = controller.instance_id.apply(lambda i: f"{generation}-{i}")
    logins: dict[str, list[gcp.compute.Instance]] = {}
    for group in config.login_groups:
        secure_boot = not (
            config.mounts_lustre(lustre)
            or needs_unsigned_modules(group.network_storage, group.storage, lustre)
        )
        logins[group.name] = [
            vm(
                f"login-{group.name}-{i}",
                vm_name,
                "login",
                identities["lgn"],
                group.machine_type,
                group.image.path,
                "pd-balanced",
                group.disk_size_gb,
                {
                    "slurm_login_group": group.name,
                    CONTROLLER_ID_KEY: controller_id,
                    **updates_metadata(group.allow_automatic_updates),
                },
                [],
                [*identities["lgn"].grants, *files_ready],
                False,
                secure_boot,
                replace_on_changes=[f"metadata.{CONTROLLER_ID_KEY}"],
                aliases=([pulumi.Alias(name=f"{name}-login-{i}")] if group.name == "login" else []),
            )
            for i, vm_name in enumerate(config.login_names(group))
        ]
    return controller, logins
