"""GPU clusters as managed instance groups: the cluster Google's AI infra cluster provisioning
tool stood up from environment variables, from one typed `ai-infra:gpuClusters` entry. A zonal
MIG of private, shielded GPU VMs that `pulumi up` waits for, its own least-privilege service
account, its network (the stack's, a new one, one VPC per NIC, or host VPCs plus an RDMA VPC),
Filestore shares, a GPU dashboard, and a startup script rendered from typed steps. GPUs
scheduled by Kubernetes are `ai-infra:gpuPools`.
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp
from pydantic import InstanceOf

from components.base import Component, WiringModel
from components.buckets import BucketsHandle, grant_named_access
from components.context import StackContext
from components.gpu_clusters import boot, metadata, monitoring, networks, template
from components.gpu_clusters.checks import account_id, group_name
from components.gpu_clusters.config import CLUSTER_LABEL, GpuClusterConfig
from components.gpu_clusters.networks import network_tag
from components.gpu_clusters.provider import FlexCapacity, StartupWait
from components.identity import Identity, custom_role_grant, service_account
from components.logins import (
    VIEWER_DESCRIPTION,
    LoginGrants,
    Role,
    grant_logins,
    instance_condition,
    viewer_role_id,
)
from components.network import NetworkHandle
from components.storage import StorageHandle

__all__ = ["GpuCluster", "GpuClusterArgs", "network_tag"]

RAY_DISCOVERY_PERMISSIONS = (
    "compute.instanceGroupManagers.get",
    "compute.instanceGroupManagers.list",
)
"""What the Ray head election calls: `gcloud compute instance-groups managed list-instances`
(listManagedInstances) needs `compute.instanceGroupManagers.list` (its help text, gcloud
578.0.0); `.get` reads the group itself. Neither reads instances or their metadata, unlike
roles/compute.viewer's `compute.instances.get`, which shows every VM's startup script."""


HOSTS_PERMISSIONS = (
    *RAY_DISCOVERY_PERMISSIONS,
    "compute.instances.getGuestAttributes",
)
"""What each VM's host list reads with SSH among the VMs: the group's members, as Ray does,
and each member's host keys (`gcloud compute instances get-guest-attributes
--query-path=hostkeys/`, as gcloud's ssh_utils.py GetHostKeysFromGuestAttributes reads them,
gcloud 528.0.0); held by a condition to the cluster's own VMs and group."""


LOGIN_VIEWER_PERMISSIONS = (
    "compute.instances.get",
    "compute.instances.getGuestAttributes",
    "compute.projects.get",
    *RAY_DISCOVERY_PERMISSIONS,
)
"""What a login reads: `gcloud compute ssh` gets the instance, the project and, as the VMs set
`enable-guest-attributes`, their host keys from guest attributes `hostkeys/` (googlecloudsdk
surface/compute/ssh.py and command_lib/compute/ssh_utils.py GetProject,
GetHostKeysFromGuestAttributes, gcloud 528.0.0); `python -m hosts` lists the group's
instances (`instance-groups managed list-instances`). tests/components/test_logins_gcloud.py
runs gcloud against exactly these."""


class GpuClusterArgs(WiringModel):
    context: InstanceOf[StackContext]
    config: GpuClusterConfig
    network: InstanceOf[NetworkHandle]
    """The stack's network, which `network: default` joins."""
    buckets: InstanceOf[BucketsHandle]
    storage: InstanceOf[StorageHandle]
    """The stack's volumes, which the `storage` list mounts."""


class GpuCluster(Component):
    """A zonal managed instance group of GPU VMs with its account, network and shares."""

    instance_group: pulumi.Output[str]
    filestore_ips: pulumi.Output[list[str]]
    jupyter_urls_command: str
    """Lists each VM with its Jupyter proxy URL once the VMs are up."""
    errors_command: str
    """Lists why the group could not create or repair VMs (stockouts, quota, a refused
    config): what a failed `pulumi up` of the group points at."""

    def __init__(self, name: str, args: GpuClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ai-infra:gpu_clusters:GpuCluster", name, opts)
        ctx = args.context
        config = args.config
        zone = ctx.zone_of(config.zone)
        base = group_name(ctx, config.name)
        labels = {**ctx.labels, **config.labels, CLUSTER_LABEL: config.name}
        identity = self._identity(name, args, base, zone)
        self._logins(name, args, base, zone, identity)
        nics, network_names = networks.networks(self, name, args, base, zone)
        host_cidr = (
            args.network.subnet_cidr if config.network == "default" else config.nic_cidrs()[0]
        )
        shares = networks.shares(self, name, args, zone, base, labels, network_names[0], host_cidr)
        self.filestore_ips = pulumi.Output.all(*[ip for _, ip in shares])
        placed = template.placement(self, name, ctx, config, base)
        vm_template = template.instance_template(
            self,
            name,
            ctx=ctx,
            config=config,
            base=base,
            labels=labels,
            identity=identity,
            nics=nics,
            vm_metadata=self._metadata(args, base, zone),
            compact=placed.compact,
        )
        self.group = self._group(name, args, base, zone, vm_template, placed.workload)
        self.instance_group = self.group.instance_group
        if config.provisioning == "flex-start":
            self._flex_capacity(name, args, base, zone)
        elif config.startup_timeout_minutes:
            self._startup_wait(name, args, zone, vm_template)
        if config.ops_agent:
            gcp.monitoring.Dashboard(
                f"{name}-dashboard",
                project=ctx.project,
                dashboard_json=monitoring.dashboard(
                    f"GPU cluster {base}",
                    {CLUSTER_LABEL: config.name, "ai-infra-stack": ctx.prefix},
                ),
                opts=self.child_opts(),
            )
        self.jupyter_urls_command = (
            f"gcloud compute instances list --project={ctx.project} --zones={zone} "
            f"--filter=labels.{CLUSTER_LABEL}={config.name} "
            "--format='value(name,metadata.items.proxy-url)'"
        )
        self.errors_command = (
            f"gcloud compute instance-groups managed list-errors {base} "
            f"--project={ctx.project} --zone={zone}"
        )
        self.register_outputs(
            {
                "instanceGroup": self.instance_group,
                "filestoreIps": self.filestore_ips,
                "jupyterUrls": self.jupyter_urls_command,
                "errors": self.errors_command,
            }
        )

    def _metadata(self, args: GpuClusterArgs, base: str, zone: str) -> dict[str, pulumi.Input[str]]:
        """The program's metadata and the startup script, rendered once the Filestore and
        storage addresses are known."""
        config = args.config
        gcs_names = {m.bucket: args.buckets.gcs_name(m.bucket) for m in config.gcs_mounts}
        mounted = sorted({m.volume for m in config.storage})
        endpoints = pulumi.Output.all(*[args.storage.endpoint(v) for v in mounted])
        script = pulumi.Output.all(self.filestore_ips, endpoints).apply(
            lambda found: boot.render(
                metadata.steps(
                    config,
                    group=base,
                    zone=zone,
                    gcs_names=gcs_names,
                    filestore_ips=found[0],
                    storage=args.storage.storage,
                    endpoints=dict(zip(mounted, found[1], strict=True)),
                )
            )
        )
        return {**metadata.program_metadata(config), "startup-script": script}

    def _startup_wait(
        self,
        name: str,
        args: GpuClusterArgs,
        zone: str,
        vm_template: gcp.compute.InstanceTemplate,
    ) -> None:
        """`pulumi up` waits for every VM's startup script (`provider.StartupWait`)."""
        config = args.config
        StartupWait(
            f"{name}-startup",
            {
                "project": args.context.project,
                "zone": zone,
                "group": self.group.name,
                "size": config.instance_count,
                # A new template waits again: VMs it creates run the new script.
                "template": vm_template.self_link,
                "timeoutSeconds": config.startup_timeout_minutes * 60,
            },
            self.child_opts(depends_on=[self.group]),
        )

    def _group(
        self,
        name: str,
        args: GpuClusterArgs,
        base: str,
        zone: str,
        template: gcp.compute.InstanceTemplate,
        workload: gcp.compute.ResourcePolicy | None,
    ) -> gcp.compute.InstanceGroupManager:
        """The group. It waits for its VMs: the provider polls until the group is stable and
        fails `pulumi up` at the timeout when a VM cannot be created (stockout, quota, a
        refused config), instead of reporting success with no VMs. The provider's update
        waits with the create timeout (terraform-provider-google
        resource_compute_instance_group_manager.go, computeIGMWaitForInstanceStatus), so both
        are set alike. A flex-start group cannot wait: it sits at zero until its resize
        request is served."""
        ctx = args.context
        config = args.config
        flex = config.provisioning == "flex-start"
        timeout = f"{config.ready_timeout_minutes}m"
        return gcp.compute.InstanceGroupManager(
            f"{name}-mig",
            project=ctx.project,
            zone=zone,
            name=base,
            base_instance_name=base,
            # A flex-start group's size is what its resize requests add (FlexCapacity keeps
            # it); setting it here would fight them on the next `pulumi up`.
            target_size=None if flex else config.instance_count,
            versions=[
                gcp.compute.InstanceGroupManagerVersionArgs(
                    name="default", instance_template=template.self_link
                )
            ],
            # The boot disk is not stateful: a recreated VM boots the template's image (a
            # stateful boot disk would keep the old image and driver for ever; Compute Engine,
            # "Configuring stateful persistent disks": keep boot disks stateless). The data
            # disk keeps the users' files across recreation.
            stateful_disks=(
                [
                    gcp.compute.InstanceGroupManagerStatefulDiskArgs(
                        device_name=metadata.DATA_DEVICE,
                        delete_rule="ON_PERMANENT_INSTANCE_DELETION",
                    )
                ]
                if config.data_disk is not None
                else None
            ),
            # A new template reaches running VMs only when they are recreated; nothing restarts
            # a training job behind its users' backs.
            update_policy=gcp.compute.InstanceGroupManagerUpdatePolicyArgs(
                type="OPPORTUNISTIC",
                minimal_action="RESTART",
                replacement_method="RECREATE",
                max_surge_fixed=0,
                max_unavailable_fixed=1,
            ),
            # As pulumi-gcp's own resize-request example: a flex-start VM that fails is not
            # recreated behind the request's back.
            instance_lifecycle_policy=(
                gcp.compute.InstanceGroupManagerInstanceLifecyclePolicyArgs(
                    default_action_on_failure="DO_NOTHING"
                )
                if flex
                else None
            ),
            resource_policies=(
                gcp.compute.InstanceGroupManagerResourcePoliciesArgs(
                    workload_policy=workload.self_link
                )
                if workload
                else None
            ),
            wait_for_instances=not flex,
            wait_for_instances_status=None if flex else "STABLE",
            opts=self.child_opts(
                protect=ctx.protect,
                custom_timeouts=pulumi.CustomTimeouts(create=timeout, update=timeout),
                ignore_changes=["targetSize"] if flex else None,
            ),
        )

    def _flex_capacity(self, name: str, args: GpuClusterArgs, base: str, zone: str) -> None:
        """Flex-start capacity: the group kept at `instanceCount` VMs by resize requests, each
        served at once when capacity frees up; its VMs run `maxRunHours` and are deleted, and
        the next `pulumi up` asks again (`provider.FlexCapacity`)."""
        ctx = args.context
        config = args.config
        FlexCapacity(
            f"{name}-capacity",
            {
                "project": ctx.project,
                "zone": zone,
                "group": self.group.name,
                "size": config.instance_count,
                "runSeconds": config.run_seconds,
                "requestPrefix": f"{base}-request",
                "description": f"flex-start VMs of GPU cluster {config.name}",
            },
            self.child_opts(depends_on=[self.group]),
        )

    def _logins(
        self, name: str, args: GpuClusterArgs, base: str, zone: str, identity: Identity
    ) -> None:
        """OS Login on this cluster's VMs only (a condition on the names the group gives
        them, `<base>-xxxx`), and reading them and their group."""
        where = f"projects/{args.context.project}/zones/{zone}"
        vms = f"{where}/instances/{base}-"
        grant_logins(
            self,
            f"{name}-login",
            project=args.context.project,
            logins=args.config.logins,
            grants=LoginGrants(
                login_condition=instance_condition(vms, f"VMs of GPU cluster {base}"),
                viewer=Role(
                    viewer_role_id(base, "gpu"),
                    f"Reach GPU cluster {base}",
                    VIEWER_DESCRIPTION,
                    LOGIN_VIEWER_PERMISSIONS,
                ),
                viewer_condition=instance_condition(
                    vms,
                    f"GPU cluster {base}, its group and project",
                    group=f"{where}/instanceGroupManagers/{base}",
                ),
                account=identity.email,
            ),
            depends_on=[identity.account],
        )

    def _identity(self, name: str, args: GpuClusterArgs, base: str, zone: str) -> Identity:
        """The VMs' own account: logs, metrics, the buckets it mounts, (for Ray) listing the
        group's own members, and (for SSH among the VMs) their host keys."""
        ctx = args.context
        config = args.config
        identity = service_account(
            self,
            name,
            project=ctx.project,
            account_id=account_id(ctx, config.name),
            display_name=f"GPU cluster {config.name} VMs",
            roles=["roles/logging.logWriter", "roles/monitoring.metricWriter"],
        )
        if config.orchestrator == "ray":
            # Role ids take letters, digits, '_' and '.'.
            _, grant = custom_role_grant(
                self,
                f"{name}-ray-discovery",
                name,
                project=ctx.project,
                role_id=f"{base.replace('-', '_')}_ray",
                title=f"Ray discovery of GPU cluster {base}",
                description="List the managed instances of a GPU cluster's group",
                permissions=RAY_DISCOVERY_PERMISSIONS,
                member=identity.member,
                depends_on=[identity.account],
            )
            identity.grants.append(grant)
        if config.ssh_among_vms:
            where = f"projects/{ctx.project}/zones/{zone}"
            _, grant = custom_role_grant(
                self,
                f"{name}-hosts",
                name,
                project=ctx.project,
                role_id=f"{base.replace('-', '_')}_hosts",
                title=f"Host list of GPU cluster {base}",
                description="List a GPU cluster's members and read their published host keys",
                permissions=HOSTS_PERMISSIONS,
                member=identity.member,
                depends_on=[identity.account],
                condition=instance_condition(
                    f"{where}/instances/{base}-",
                    f"GPU cluster {base} and its group",
                    group=f"{where}/instanceGroupManagers/{base}",
                ),
            )
            identity.grants.append(grant)
        # One grant per bucket, with the widest access any of its mounts needs.
        access: dict[str, str] = {}
        for mount in config.gcs_mounts:
            role_name = (
                "roles/storage.objectViewer" if mount.read_only else "roles/storage.objectUser"
            )
            if access.get(mount.bucket) != "roles/storage.objectUser":
                access[mount.bucket] = role_name
        for bucket, role_name in args.storage.bucket_roles(config.storage).items():
            if access.get(bucket) != "roles/storage.objectUser":
                access[bucket] = role_name
        for bucket, role_name in access.items():
            identity.grants.append(
                grant_named_access(
                    self,
                    name,
                    args.buckets,
                    bucket,
                    role=role_name,
                    member=identity.member,
                    depends_on=[identity.account],
                )
            )
        return identity
