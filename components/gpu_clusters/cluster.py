"""GPU clusters as managed instance groups: the cluster Google's AI infra cluster provisioning
tool stood up from environment variables, from one typed `ai-infra:gpuClusters` entry. A zonal
MIG of private, shielded GPU VMs on a Deep Learning VM image, its own least-privilege service
account, its network (the stack's, a new one, or one VPC per NIC), Filestore shares and a
startup script rendered from typed steps. GPUs scheduled by Kubernetes are `ai-infra:gpuPools`.
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp
from pydantic import InstanceOf

from components import gpu_catalog
from components.base import Component, WiringModel, slug
from components.buckets import BucketsHandle, grant_bucket_access
from components.context import StackContext
from components.gpu_clusters import boot
from components.gpu_clusters.checks import account_id, warnings
from components.gpu_clusters.config import CLUSTER_LABEL, GpuClusterConfig, NfsShare
from components.identity import Identity, grant_name, grant_opts, service_account
from components.network import (
    NetworkHandle,
    cloud_nat,
    iap_ssh_rule,
    vpc_with_subnet,
)
from components.placement import compact_policy, workload_policy


class GpuClusterArgs(WiringModel):
    context: InstanceOf[StackContext]
    config: GpuClusterConfig
    network: InstanceOf[NetworkHandle]
    """The stack's network, which `network: default` joins."""
    buckets: InstanceOf[BucketsHandle]


class GpuCluster(Component):
    """A zonal managed instance group of GPU VMs with its account, network and shares."""

    instance_group: pulumi.Output[str]
    filestore_ips: pulumi.Output[list[str]]
    jupyter_urls_command: str
    """Lists each VM with its Jupyter proxy URL once the VMs are up."""

    def __init__(self, name: str, args: GpuClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ai-infra:gpu_clusters:GpuCluster", name, opts)
        ctx = args.context
        config = args.config
        zone = ctx.zone_of(config.zone)
        base = ctx.name(config.name)
        labels = {**ctx.labels, **config.labels, CLUSTER_LABEL: config.name}
        for warning in warnings(config):
            pulumi.log.warn(f"gpuClusters {config.name}: {warning}", self)

        identity = self._identity(name, args)
        networks, subnets, network_names = self._networks(name, args, base)
        shares = self._shares(name, args, zone, base, labels, network_names[0])
        self.filestore_ips = pulumi.Output.all(*[ip for _, ip in shares])
        script = self.filestore_ips.apply(lambda ips: boot.render(_steps(args, zone, ips)))

        metadata: dict[str, pulumi.Input[str]] = {
            **config.metadata,
            "enable-oslogin": "TRUE",
            "block-project-ssh-keys": "TRUE",
            "startup-script": script,
        }
        if config.dlvm:
            metadata["install-nvidia-driver"] = "True"
        if config.jupyter_proxy:
            # Deep Learning VM's proxy agent: URLs for whoever holds editor on the project.
            metadata["proxy-mode"] = "project_editors"

        placement = gpu_catalog.group_placement(config.machine_type)
        compact = None
        workload = None
        where = {"project": ctx.project, "region": ctx.region, "name": f"{base}-placement"}
        if config.instance_count > 1 and placement == "compact":
            compact = compact_policy(self, f"{name}-placement", **where)
        elif config.instance_count > 1 and placement == "workload":
            workload = workload_policy(self, f"{name}-placement", **where)

        nic_type = "GVNIC" if config.gvnic else "VIRTIO_NET"
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
            disks=[
                gcp.compute.InstanceTemplateDiskArgs(
                    boot=True,
                    auto_delete=True,
                    device_name=BOOT_DEVICE,
                    source_image=config.image_ref,
                    disk_size_gb=config.disk_size_gb,
                    disk_type=config.disk_type,
                    labels=labels,
                )
            ],
            network_interfaces=[
                gcp.compute.InstanceTemplateNetworkInterfaceArgs(
                    network=network, subnetwork=subnet, nic_type=nic_type
                )
                for network, subnet in zip(networks, subnets, strict=True)
            ],
            scheduling=gcp.compute.InstanceTemplateSchedulingArgs(
                # GPUs cannot live-migrate ("GPU machine types": host maintenance).
                on_host_maintenance="TERMINATE",
                automatic_restart=not config.spot,
                preemptible=config.spot,
                provisioning_model="SPOT" if config.spot else "STANDARD",
                instance_termination_action="STOP" if config.spot else None,
            ),
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
            metadata=metadata,
            labels=labels,
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
        self.group = gcp.compute.InstanceGroupManager(
            f"{name}-mig",
            project=ctx.project,
            zone=zone,
            name=base,
            base_instance_name=base,
            target_size=config.instance_count,
            versions=[
                gcp.compute.InstanceGroupManagerVersionArgs(
                    name="default", instance_template=template.self_link
                )
            ],
            # The boot disk holds the users' environment, notebooks and checkpoints (2 TB by
            # default): a repaired or recreated VM keeps it and its name.
            stateful_disks=[
                gcp.compute.InstanceGroupManagerStatefulDiskArgs(
                    device_name=BOOT_DEVICE, delete_rule="ON_PERMANENT_INSTANCE_DELETION"
                )
            ],
            # A new template reaches running VMs only when they are recreated; nothing restarts
            # a training job behind its users' backs.
            update_policy=gcp.compute.InstanceGroupManagerUpdatePolicyArgs(
                type="OPPORTUNISTIC",
                minimal_action="RESTART",
                replacement_method="RECREATE",
                max_surge_fixed=0,
                max_unavailable_fixed=1,
            ),
            resource_policies=(
                gcp.compute.InstanceGroupManagerResourcePoliciesArgs(
                    workload_policy=workload.self_link
                )
                if workload
                else None
            ),
            wait_for_instances=False,
            opts=self.child_opts(protect=ctx.protect),
        )
        self.instance_group = self.group.instance_group
        self.jupyter_urls_command = (
            f"gcloud compute instances list --project={ctx.project} --zones={zone} "
            f"--filter=labels.{CLUSTER_LABEL}={config.name} "
            "--format='value(name,metadata.items.proxy-url)'"
        )
        self.register_outputs(
            {
                "instanceGroup": self.instance_group,
                "filestoreIps": self.filestore_ips,
                "jupyterUrls": self.jupyter_urls_command,
            }
        )

    def _identity(self, name: str, args: GpuClusterArgs) -> Identity:
        """The VMs' own account: logs, metrics, the buckets it mounts, and (for Ray) reading
        which VMs the group has."""
        ctx = args.context
        config = args.config
        roles = ["roles/logging.logWriter", "roles/monitoring.metricWriter"]
        if config.orchestrator == "ray":
            # The startup script elects the Ray head by listing the cluster's VMs.
            roles.append("roles/compute.viewer")
        identity = service_account(
            self,
            name,
            project=ctx.project,
            account_id=account_id(ctx, config.name),
            display_name=f"GPU cluster {config.name} VMs",
            roles=roles,
        )
        # One grant per bucket, with the widest access any of its mounts needs.
        access: dict[str, str] = {}
        for mount in config.gcs_mounts:
            role = "roles/storage.objectViewer" if mount.read_only else "roles/storage.objectUser"
            if access.get(mount.bucket) != "roles/storage.objectUser":
                access[mount.bucket] = role
        for bucket, role in access.items():
            if bucket in args.buckets:
                grant = grant_bucket_access(
                    self,
                    name,
                    args.buckets[bucket],
                    role=role,
                    member=identity.member,
                    depends_on=[identity.account],
                )
            else:
                grant = gcp.storage.BucketIAMMember(
                    grant_name(name, role, f"bucket-{slug(bucket)}"),
                    bucket=bucket,
                    role=role,
                    member=identity.member,
                    opts=grant_opts(self, [identity.account]),
                )
            identity.grants.append(grant)
        return identity

    def _networks(
        self, name: str, args: GpuClusterArgs, base: str
    ) -> tuple[list[pulumi.Input[str]], list[pulumi.Input[str]], list[pulumi.Input[str]]]:
        """Self links of the VPC and subnet behind each NIC, and the VPCs' names."""
        ctx = args.context
        config = args.config
        if config.network == "default":
            network = args.network
            return [network.self_link], [network.subnet_self_link], [network.name]
        layout = config.nic_layout
        networks: list[pulumi.Input[str]] = []
        subnets: list[pulumi.Input[str]] = []
        names: list[pulumi.Input[str]] = []
        for k, cidr in enumerate(config.nic_cidrs()):
            mtu = None
            if layout is not None:
                mtu = layout.host_mtu if k == 0 else layout.gpu_mtu
            vpc, subnet = vpc_with_subnet(
                self,
                project=ctx.project,
                region=ctx.region,
                cidr=cidr,
                mtu=mtu,
                description=f"Traffic between the GPU cluster {config.name}'s VMs on NIC {k}",
                vpc=(f"{name}-net{k}", f"{base}-net{k}"),
                subnet=(f"{name}-subnet{k}", f"{base}-subnet{k}"),
                firewall=(f"{name}-internal{k}", f"{base}-internal{k}"),
                private_google_access=True,
            )
            networks.append(vpc.self_link)
            subnets.append(subnet.self_link)
            names.append(vpc.name)
            if k == 0:
                self._egress(name, args, base, vpc, subnet)
        return networks, subnets, names

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
    ) -> list[tuple[NfsShare, pulumi.Output[str]]]:
        """A Filestore instance per share, on the host NIC's VPC (Filestore takes its name)."""
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
                    name=NFS_SHARE, capacity_gb=share.size_gb
                ),
                networks=[
                    gcp.filestore.InstanceNetworkArgs(network=network_name, modes=["MODE_IPV4"])
                ],
                labels=labels,
                opts=self.child_opts(protect=ctx.protect),
            )
            ip = instance.networks.apply(lambda n: (n[0].ip_addresses or [""])[0] if n else "")
            shares.append((share, ip))
        return shares


BOOT_DEVICE = "boot"
NFS_SHARE = "share"
"""The one file share of each Filestore instance (Basic tiers allow 16 characters)."""


def _steps(args: GpuClusterArgs, zone: str, ips: list[str]) -> list[boot.Step]:
    """Ops Agent first (it runs alongside the rest), then mounts, Ray, and the user's command
    last, so that it finds its data and its cluster."""
    config = args.config
    steps: list[boot.Step] = []
    if config.ops_agent:
        steps.append(boot.OpsAgent())
    steps += [
        boot.GcsMount(args.buckets.gcs_name(m.bucket), m.mount_path, m.read_only)
        for m in config.gcs_mounts
    ]
    steps += [
        boot.NfsMount(ip, NFS_SHARE, share.mount_path)
        for share, ip in zip(config.nfs_shares, ips, strict=True)
    ]
    if config.orchestrator == "ray":
        steps.append(boot.Ray(config.name, zone, config.gpu_count))
    if config.startup_command:
        steps.append(boot.Command(config.startup_command))
    return steps
