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

from components import gpu_catalog
from components.base import Component, WiringModel
from components.buckets import BucketsHandle, grant_named_access
from components.context import StackContext
from components.gpu_clusters import boot, metadata, monitoring
from components.gpu_clusters.checks import account_id, group_name, warnings
from components.gpu_clusters.config import CLUSTER_LABEL, GpuClusterConfig, NfsShare
from components.gpu_clusters.provider import FlexCapacity, StartupWait
from components.identity import (
    Identity,
    custom_role_grant,
    service_account,
)
from components.logins import LoginGrants, grant_logins, instance_condition, viewer_role_id
from components.network import (
    ALL_INTERNAL,
    NetworkHandle,
    cloud_nat,
    filestore_ip,
    firewall_rule,
    iap_ssh_rule,
    rdma_nics,
    system_tag,
    vpc_with_subnet,
)
from components.nfs import client_rules, export_options
from components.placement import compact_policy, workload_policy
from components.storage import StorageHandle

BOOT_DEVICE = "boot"
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


def network_tag(base: str) -> str:
    """The tag the firewall rules name a GPU cluster's VMs by: on the stack's network, its
    VMs (and Ray's ports, which run unauthenticated) reach each other and nothing else does."""
    return system_tag(base, "gpu-vm")


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


RESERVATION_KEY = "compute.googleapis.com/reservation-name"
"""The affinity key of a specific reservation (Cluster Toolkit v1.95.0
modules/compute/vm-instance/main.tf:289-298)."""


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
        for warning in warnings(config):
            pulumi.log.warn(f"gpuClusters {config.name}: {warning}", self)

        identity = self._identity(name, args, base, zone)
        self._logins(name, args, base, zone, identity)
        nics, network_names = self._networks(name, args, base, zone)
        host_cidr = (
            args.network.subnet_cidr if config.network == "default" else config.nic_cidrs()[0]
        )
        shares = self._shares(name, args, zone, base, labels, network_names[0], host_cidr)
        self.filestore_ips = pulumi.Output.all(*[ip for _, ip in shares])
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
        vm_metadata: dict[str, pulumi.Input[str]] = {
            **metadata.program_metadata(config),
            "startup-script": script,
        }

        compact = None
        workload = None
        where = {"project": ctx.project, "region": ctx.region, "name": f"{base}-placement"}
        if config.placement == "compact":
            compact = compact_policy(
                self,
                f"{name}-placement",
                **where,
                max_distance=config.placement_max_distance,
            )
        elif config.placement == "workload":
            capacity = gpu_catalog.series_capacity(config.machine_type)
            distance = gpu_catalog.topology_distance(
                config.machine_type, config.placement_max_distance
            )
            # Every field of a workload policy replaces it, and a named one is deleted before
            # its replacement is made (the bridge's rule), which Compute Engine refuses while
            # the group uses it. So each distance is a policy, and a resource, of its own:
            # the new one is made, the group moves to it in place, then the old one goes.
            role = f"placement-{distance.lower()}" if distance else "placement"
            where["name"] = f"{base}-{role}"
            workload = workload_policy(
                self,
                f"{name}-{role}",
                **where,
                topology=capacity.accelerator_topology if capacity else None,
                max_topology_distance=distance,
            )

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
        template = gcp.compute.InstanceTemplate(
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
            disks=disks,
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
            opts=self.child_opts(depends_on=identity.ready),
        )
        self.group = self._group(name, args, base, zone, template, workload)
        self.instance_group = self.group.instance_group
        if config.provisioning == "flex-start":
            self._flex_capacity(name, args, base, zone)
        elif config.startup_timeout_minutes:
            StartupWait(
                f"{name}-startup",
                {
                    "project": ctx.project,
                    "zone": zone,
                    "group": self.group.name,
                    "size": config.instance_count,
                    # A new template waits again: VMs it creates run the new script.
                    "template": template.self_link,
                    "timeoutSeconds": config.startup_timeout_minutes * 60,
                },
                self.child_opts(depends_on=[self.group]),
            )
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
                viewer_role_id=viewer_role_id(base, "gpu"),
                viewer_title=f"Reach GPU cluster {base}",
                viewer_permissions=LOGIN_VIEWER_PERMISSIONS,
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

    def _networks(
        self, name: str, args: GpuClusterArgs, base: str, zone: str
    ) -> tuple[list[gcp.compute.InstanceTemplateNetworkInterfaceArgs], list[pulumi.Input[str]]]:
        """The template's NICs and the names of the host VPCs behind them (the first one
        carries NAT, IAP SSH and Filestore)."""
        config = args.config
        nic_type = "GVNIC" if config.gvnic else "VIRTIO_NET"
        if config.network == "default":
            network = args.network
            tag = network_tag(base)
            firewall_rule(
                self,
                f"{name}-internal",
                project=args.context.project,
                network=network.name,
                name=f"{tag}-internal",
                description=f"GPU cluster {config.name}: its VMs to each other (Ray included)",
                source_tags=[tag],
                target_tags=[tag],
                allows=ALL_INTERNAL,
            )
            return [
                gcp.compute.InstanceTemplateNetworkInterfaceArgs(
                    network=network.self_link,
                    subnetwork=network.subnet_self_link,
                    nic_type=nic_type,
                )
            ], [network.name]
        layout = config.nic_layout
        cidrs = config.nic_cidrs()
        own_vpcs = layout.host_nics if layout is not None and layout.rdma else len(cidrs)
        nics: list[gcp.compute.InstanceTemplateNetworkInterfaceArgs] = []
        names: list[pulumi.Input[str]] = []
        for k, cidr in enumerate(cidrs[:own_vpcs]):
            mtu = None
            if layout is not None:
                mtu = layout.host_mtu if k < layout.host_nics else layout.gpu_mtu
            vpc, subnet = self._vpc(name, args, base, k, cidr, mtu)
            nics.append(
                gcp.compute.InstanceTemplateNetworkInterfaceArgs(
                    network=vpc.self_link, subnetwork=subnet.self_link, nic_type=nic_type
                )
            )
            names.append(vpc.name)
            if k == 0:
                self._egress(name, args, base, vpc, subnet)
        if layout is not None and layout.rdma:
            nics += self._rdma(name, base, args, zone, layout, cidrs[own_vpcs:])
        return nics, names

    def _vpc(
        self, name: str, args: GpuClusterArgs, base: str, k: int, cidr: str, mtu: int | None
    ) -> tuple[gcp.compute.Network, gcp.compute.Subnetwork]:
        """VPC `k` with its one subnet, and traffic allowed between the cluster's VMs on it."""
        ctx = args.context
        return vpc_with_subnet(
            self,
            project=ctx.project,
            region=ctx.region,
            cidr=cidr,
            mtu=mtu,
            description=f"Traffic between the GPU cluster {args.config.name}'s VMs on NIC {k}",
            vpc=(f"{name}-net{k}", f"{base}-net{k}"),
            subnet=(f"{name}-subnet{k}", f"{base}-subnet{k}"),
            firewall=(f"{name}-internal{k}", f"{base}-internal{k}"),
            private_google_access=True,
        )

    def _rdma(
        self,
        name: str,
        base: str,
        args: GpuClusterArgs,
        zone: str,
        layout: gpu_catalog.GpuNicLayout,
        cidrs: list[str],
    ) -> list[gcp.compute.InstanceTemplateNetworkInterfaceArgs]:
        """The RDMA NICs: MRDMA NICs on one VPC with the zone's RoCE network profile, a
        subnet each (network.rdma_nics)."""
        ctx = args.context
        return rdma_nics(
            self,
            f"{name}-rdma",
            project=ctx.project,
            region=ctx.region,
            name=f"{base}-rdma",
            mtu=layout.gpu_mtu,
            profile=gpu_catalog.roce_profile(ctx.project, zone),
            cidrs=cidrs,
        )

    def _egress(
        self,
        name: str,
        args: GpuClusterArgs,
        base: str,
        vpc: gcp.compute.Network,
        subnet: gcp.compute.Subnetwork,
    ) -> None:
        """NAT for the host NIC (the VMs have no public IP) and SSH through IAP only."""
        ctx = args.context
        cloud_nat(
            self,
            name,
            project=ctx.project,
            region=ctx.region,
            base=base,
            network=vpc.self_link,
            subnet=subnet.self_link,
        )
        iap_ssh_rule(
            self,
            f"{name}-iap-ssh",
            project=ctx.project,
            network=vpc.name,
            name=f"{base}-iap-ssh",
            description="SSH to the GPU cluster's VMs through Identity-Aware Proxy only",
        )

    def _shares(
        self,
        name: str,
        args: GpuClusterArgs,
        zone: str,
        base: str,
        labels: dict[str, str],
        network_name: pulumi.Input[str],
        host_cidr: str,
    ) -> list[tuple[NfsShare, pulumi.Output[str]]]:
        """A Filestore instance per share, on the host NIC's VPC (Filestore takes its name),
        exported to the host subnet only. Root is not squashed: the share's root directory
        is root's, and the VMs' users reach it through sudo (OS Login admins) to make their
        directories; a squashed root could write nothing there. On the stack's network, where
        other systems' VMs share the subnet, egress rules keep them from it."""
        ctx = args.context
        config = args.config
        shares = []
        for k, share in enumerate(config.nfs_shares):
            instance = gcp.filestore.Instance(
                f"{name}-nfs{k}",
                project=ctx.project,
                name=f"{base}-nfs{k}",
                # Enterprise instances are regional (Filestore "Service tiers").
                location=ctx.region if share.tier == "ENTERPRISE" else zone,
                tier=share.tier,
                file_shares=gcp.filestore.InstanceFileSharesArgs(
                    name=metadata.NFS_SHARE,
                    capacity_gb=share.size_gb,
                    nfs_export_options=export_options([host_cidr], root_squash=False),
                ),
                networks=[
                    gcp.filestore.InstanceNetworkArgs(network=network_name, modes=["MODE_IPV4"])
                ],
                labels=labels,
                opts=self.child_opts(protect=ctx.protect),
            )
            if config.network == "default":
                client_rules(
                    self,
                    f"{name}-nfs{k}",
                    project=ctx.project,
                    network=network_name,
                    name=f"{base}-nfs{k}",
                    share=instance,
                    client_tags=[network_tag(base)],
                    description=f"GPU cluster {config.name}'s share {k}",
                )
            ip = filestore_ip(instance)
            shares.append((share, ip))
        return shares


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
