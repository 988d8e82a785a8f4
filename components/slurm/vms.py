"""The Slurm controller (with the persistent disk that holds slurmctld's state) and the login
VMs: private, shielded, OS Login, on SchedMD's image pinned beside the runtime scripts, each
booting with the script `boot.py` renders. TPU VMs are the controller's to create.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pulumi
import pulumi_gcp as gcp

from components.base import Component
from components.context import StackContext
from components.identity import Identity
from components.network import NetworkHandle
from components.slurm import boot, scripts
from components.slurm.config import DEFAULT_SCOPES, SlurmConfig
from components.slurm.files import LOGIN_GROUP, UNIVERSE_DOMAIN, state_disk_name


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
) -> tuple[gcp.compute.Instance, list[gcp.compute.Instance]]:
    """The controller with its state disk, and the login nodes. They need not wait for the
    bucket: their boot retries until the zips are there, and setup.py until config.yaml is.
    The controller starts after `controller_after` and its grants."""
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
        disk_type: str,
        disk_size_gb: int,
        metadata: dict[str, str],
        attached: list[gcp.compute.InstanceAttachedDiskArgs],
        depends_on: list[pulumi.Resource],
        protect: bool,
    ) -> gcp.compute.Instance:
        return gcp.compute.Instance(
            f"{name}-{resource}",
            project=ctx.project,
            zone=zone,
            name=vm_name,
            machine_type=machine_type,
            boot_disk=gcp.compute.InstanceBootDiskArgs(
                initialize_params=gcp.compute.InstanceBootDiskInitializeParamsArgs(
                    image=scripts.IMAGE, type=disk_type, size=disk_size_gb
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
                enable_secure_boot=True,
                enable_vtpm=True,
                enable_integrity_monitoring=True,
            ),
            metadata={
                "slurm_bucket_path": bucket_path,
                "slurm_cluster_name": cluster,
                "slurm_instance_role": role,
                "universe_domain": UNIVERSE_DOMAIN,
                "enable-oslogin": "TRUE",
                "block-project-ssh-keys": "TRUE",
                # In metadata rather than `metadata_startup_script`, so that a new script
                # updates the VM in place instead of replacing it.
                "startup-script": boot.render(
                    boot.BootScript(kind="vm", install_tpu_script=role == "controller")
                ),
                **metadata,
            },
            # slurmsync.py finds the cluster's instances by these labels.
            labels={**ctx.labels, "slurm_cluster_name": cluster, "slurm_instance_role": role},
            tags=[cluster],
            allow_stopping_for_update=True,
            opts=parent.child_opts(depends_on=[identity.account, *depends_on], protect=protect),
        )

    controller = vm(
        "controller",
        f"{cluster}-controller",
        "controller",
        identities["ctl"],
        config.controller.machine_type,
        config.controller.disk_type,
        config.controller.disk_size_gb,
        {},
        # setup.py mounts /dev/disk/by-id/google-<device_name> as slurmctld's state.
        [
            gcp.compute.InstanceAttachedDiskArgs(
                source=state_disk.self_link, device_name=state_disk_name(cluster)
            )
        ],
        # setup.py reads the bucket, and asks the TPU API about each nodeset while it writes
        # the Slurm configs (conf.py topology -> tpu.py), without retrying: the controller
        # starts after its grants.
        [state_disk, *controller_after, *identities["ctl"].grants],
        ctx.protect,
    )
    logins = [
        vm(
            f"login-{i}",
            f"{cluster}-login-{i}",
            "login",
            identities["lgn"],
            config.login.machine_type,
            "pd-balanced",
            config.login.disk_size_gb,
            {"slurm_login_group": LOGIN_GROUP},
            [],
            identities["lgn"].grants,
            False,
        )
        for i in range(config.login.count)
    ]
    return controller, logins
