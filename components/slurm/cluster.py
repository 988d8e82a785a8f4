"""`ai-infra:slurm`: a Slurm-GCP v6 cluster whose CPU and TPU nodesets the controller turns
into Compute Engine and Cloud TPU VMs on demand, after Cluster Toolkit's
`schedmd-slurm-gcp-v6-nodeset`, `-nodeset-tpu`, `-partition` and `-controller` modules: the
cluster's service accounts and grants, the Slurm bucket with the files the controller reads
(`files.py`), the CPU nodesets' instance templates, the /home share, the firewall, the cleanup
of the VMs the controller creates, and the controller and login VMs (`vms.py`). Accounting
databases, dynamic nodesets and high-availability controllers are not built here.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_gcp as gcp
from pydantic import InstanceOf, SkipValidation

from components.base import Component, WiringModel, slug
from components.buckets import (
    Bucket,
    BucketArgs,
    BucketConfig,
    BucketsHandle,
    grant_bucket_access,
    grant_named_access,
)
from components.context import StackContext
from components.identity import (
    Identity,
    account_grant,
    custom_role_grant,
    service_account,
    service_account_email,
)
from components.locations import ZONES
from components.network import (
    ALL_INTERNAL,
    NetworkHandle,
    filestore_ip,
    firewall_rule,
    iap_ssh_rule,
    subnet_of,
)
from components.nfs import client_rules, export_options
from components.slurm import boot
from components.slurm.checks import cpu_zones
from components.slurm.cleanup import (
    ComputeCleanup,
    ComputeCleanupProvider,
    TpuCleanup,
    TpuCleanupProvider,
)
from components.slurm.config import (
    CpuNodesetConfig,
    SlurmConfig,
    account_id,
)
from components.slurm.files import (
    FILES_DIR,
    _dump,
    cluster_document,
    cpu_nodeset_document,
    login_group_document,
    nodeset_document,
    partition_document,
    script_object,
    storage_document,
)
from components.slurm.scripts import ScriptsProvider, SlurmScripts
from components.slurm.vms import (
    controller_and_logins,
    shielded,
    slurm_labels,
    slurm_metadata,
    slurm_tags,
)
from components.storage import StorageHandle, StorageMount

NODE_ROLES = ("roles/logging.logWriter", "roles/monitoring.metricWriter")
BUCKET_READER_ROLES = ("roles/storage.objectViewer", "roles/storage.legacyBucketReader")
"""Every VM lists and reads the cluster's files (util.py `blob_list`, `download_as_text`)."""
ACCOUNT_TITLES = {"ctl": "controller", "tpu": "TPU nodes", "lgn": "login nodes", "cpu": "CPU nodes"}
SERVICE_ACCOUNT_USER = "roles/iam.serviceAccountUser"
ALWAYS_PERMISSIONS = ("compute.instances.list",)
"""slurmsync.py lists the cluster's VMs on every run (util.py `instances`,
instances.aggregatedList), with or without CPU nodesets."""
TPU_PERMISSIONS = (
    "tpu.acceleratorTypes.get",
    "tpu.nodes.create",
    "tpu.nodes.delete",
    "tpu.nodes.get",
    "tpu.nodes.list",
    "tpu.nodes.start",
    "tpu.nodes.stop",
    "tpu.operations.get",
)
"""What tpu.py calls (get_accelerator_type, list/get/create/delete/start/stop_node, and the
operations it waits on), where `roles/tpu.admin` grants all of Cloud TPU."""
CPU_PERMISSIONS = (
    "compute.disks.create",
    "compute.disks.setLabels",
    "compute.globalOperations.get",
    "compute.instanceTemplates.get",
    "compute.instanceTemplates.useReadOnly",
    "compute.instances.create",
    "compute.instances.delete",
    "compute.instances.get",
    "compute.instances.setLabels",
    "compute.instances.setMetadata",
    "compute.instances.setScheduling",
    "compute.instances.setServiceAccount",
    "compute.instances.setTags",
    "compute.instances.start",
    "compute.machineTypes.get",
    "compute.machineTypes.list",
    "compute.regionOperations.get",
    "compute.resourcePolicies.list",
    "compute.subnetworks.use",
    "compute.zoneOperations.get",
)
"""What resume.py, suspend.py and slurmsync.py call for CPU nodesets (instances.bulkInsert
from the nodeset's template, with its disk, labels, tags, metadata and account;
instances.delete and start; instanceTemplates.get and machineTypes.aggregatedList to size
nodes; resourcePolicies.list; operations they wait on), where `roles/compute.instanceAdmin.v1`
also covers images, snapshots, instance groups and every other instance change."""
PUBLIC_IP_PERMISSIONS = ("compute.subnetworks.useExternalIp",)
"""Only when a CPU nodeset gives its nodes external IPs."""


def controller_permissions(config: SlurmConfig) -> list[str]:
    """The controller's custom role, from what the scripts call for the nodesets configured."""
    found = set(ALWAYS_PERMISSIONS)
    if config.tpu_nodesets:
        found |= set(TPU_PERMISSIONS)
    cpu = config.all_cpu_nodesets
    if cpu:
        found |= set(CPU_PERMISSIONS)
    if any(n.enable_public_ips for n in cpu):
        found |= set(PUBLIC_IP_PERMISSIONS)
    return sorted(found)


def controller_role_id(ctx: StackContext) -> str:
    """IAM custom role ids take letters, digits, '_' and '.' (3 to 64)."""
    return account_id(ctx, "ctl").replace("-", "_")


class SlurmClusterArgs(WiringModel):
    context: InstanceOf[StackContext]
    network: InstanceOf[NetworkHandle]
    """The stack's network: the VMs join its subnet, and the cleanups run before any of it
    is deleted."""
    storage: InstanceOf[StorageHandle]
    """The stack's volumes, which the `storage` lists mount."""
    buckets: InstanceOf[BucketsHandle]
    """The stack's buckets, on which VMs that mount one are granted object access."""
    config: SlurmConfig
    scripts_provider: SkipValidation[ScriptsProvider] | None = None
    """Tests pass a provider with a fake fetcher; `pulumi up` uses the real one."""
    cleanup_provider: SkipValidation[TpuCleanupProvider] | None = None
    compute_cleanup_provider: SkipValidation[ComputeCleanupProvider] | None = None


class SlurmCluster(Component):
    """The Slurm bucket and its files, the cluster's service accounts, firewall and VMs."""

    bucket: Bucket
    identities: dict[str, Identity]
    config_object: gcp.storage.BucketObject
    """`config.yaml`, written after every other object."""
    controller: gcp.compute.Instance
    logins: dict[str, list[gcp.compute.Instance]]
    """Login VMs by group."""
    templates: dict[str, gcp.compute.InstanceTemplate]
    """CPU nodesets' instance templates by nodeset."""
    home: gcp.filestore.Instance | None

    def __init__(
        self, name: str, args: SlurmClusterArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("ai-infra:slurm:SlurmCluster", name, opts)
        ctx = args.context
        config = args.config
        cluster = config.cluster_name
        self.config = config
        self.lustre = args.storage.storage.lustre_names
        """The Lustre volumes of `ai-infra:storage`, whose client needs Secure Boot off."""
        self.context = ctx
        cpu_nodesets = config.all_cpu_nodesets
        # A node account exists while a nodeset runs as it.
        roles = ["ctl", "lgn"]
        if any(n.service_account_email is None for n in config.tpu_nodesets):
            roles.insert(1, "tpu")
        if any(n.service_account_email is None for n in cpu_nodesets):
            roles.append("cpu")
        self.identities = {
            role: service_account(
                self,
                f"{name}-{role}",
                project=ctx.project,
                account_id=account_id(ctx, role),
                display_name=f"Slurm {cluster} {ACCOUNT_TITLES[role]}",
                roles=NODE_ROLES,
            )
            for role in roles
        }
        controller = self.identities["ctl"]
        self.controller_role, grant = custom_role_grant(
            self,
            f"{name}-ctl-role",
            controller.owner,
            project=ctx.project,
            role_id=controller_role_id(ctx),
            title=f"Slurm {cluster} controller",
            description="What Slurm-GCP's scripts call for this cluster's nodesets (ai-infra)",
            permissions=controller_permissions(config),
            member=controller.member,
            depends_on=[controller.account],
        )
        controller.grants.append(grant)
        # The controller attaches the node accounts to the VMs it creates, and may act as
        # those accounts alone.
        for role in ("tpu", "cpu"):
            if role in self.identities:
                node = self.identities[role]
                controller.grants.append(
                    account_grant(
                        self,
                        controller.owner,
                        account=node.email,
                        role=SERVICE_ACCOUNT_USER,
                        member=controller.member,
                        scope=role,
                        depends_on=[controller.account, node.account],
                    )
                )
        self.bucket = Bucket(
            f"{name}-bucket",
            BucketArgs(
                context=ctx,
                config=BucketConfig.model_validate(
                    {"name": config.bucket_key, "forceDestroy": not ctx.protect}
                ),
            ),
            self.child_opts(),
        )
        self._bucket_readers(name, config)
        self._mount_access(name, config, args)
        files = FILES_DIR.format(cluster=cluster)
        self.bucket_path = f"gs://{self.bucket.name_}/{files}"
        objects: list[gcp.storage.BucketObject] = []

        def put(
            resource: str,
            path: str,
            content: pulumi.Input[str],
            aliases: Sequence[str] = (),
        ) -> gcp.storage.BucketObject:
            found = gcp.storage.BucketObject(
                f"{name}-{resource}",
                bucket=self.bucket.name_,
                name=f"{files}/{path}",
                content=content,
                content_type="text/plain",
                opts=self.child_opts(
                    depends_on=[self.bucket.bucket],
                    aliases=[pulumi.Alias(name=f"{name}-{a}") for a in aliases],
                ),
            )
            objects.append(found)
            return found

        mounts = args.storage.network_storage
        for nodeset in config.tpu_nodesets:
            document = mounts(nodeset.storage).apply(
                lambda entries, n=nodeset: _dump(
                    nodeset_document(
                        n,
                        project=ctx.project,
                        zone=ctx.zone_of(n.zone),
                        subnetwork=subnet_of(ctx.prefix, n.subnetwork),
                        email=n.service_account_email
                        or service_account_email(account_id(ctx, "tpu"), ctx.project),
                        mounts=entries,
                    )
                )
            )
            put(
                f"nodeset-{nodeset.name}",
                f"nodeset_tpu_configs/{nodeset.name}.yaml",
                document,
            )
        self.templates = {}
        for nodeset in cpu_nodesets:
            template = self._template(name, nodeset, args.network)
            self.templates[nodeset.name] = template
            zones = cpu_zones(nodeset, ctx)
            content = pulumi.Output.all(
                template.self_link, args.network.subnet_self_link, mounts(nodeset.storage)
            ).apply(
                lambda links, n=nodeset, z=zones: _dump(
                    cpu_nodeset_document(
                        n,
                        template=links[0],
                        subnetwork=links[1],
                        zones=z,
                        region_zones=[f"{ctx.region}-{x}" for x in ZONES.get(ctx.region, "")],
                        mounts=links[2],
                    )
                )
            )
            put(f"nodeset-{nodeset.name}", f"nodeset_configs/{nodeset.name}.yaml", content)
        # setup.py runs `slurm-<role>-script-*` on the VMs of the role (util.py
        # install_custom_scripts): a nodeset's on its nodes (inside the slurmd container on
        # TPU VMs), a login group's on its VMs, the controller's on the controller.
        for nodeset in [*config.tpu_nodesets, *cpu_nodesets]:
            if nodeset.startup_script:
                put(
                    f"nodeset-{nodeset.name}-script",
                    script_object(f"nodeset-{nodeset.name}", "startup.sh"),
                    nodeset.startup_script,
                )
        if config.controller.startup_script:
            put(
                "controller-script",
                script_object("controller", "startup.sh"),
                config.controller.startup_script,
            )
        for partition in config.all_partitions:
            put(
                f"partition-{partition.name}",
                f"partition_configs/{partition.name}.yaml",
                _dump(partition_document(partition, tpu=config.is_tpu_partition(partition))),
            )
        # A login VM refuses to set up unless its group's file exists (util.py).
        for group in config.login_groups:
            put(
                f"login-group-{group.name}",
                f"login_group_configs/{group.name}.yaml",
                mounts(group.storage).apply(
                    lambda entries, g=group: _dump(login_group_document(g, entries))
                ),
                aliases=["login-group"] if group.name == "login" else (),
            )
            if group.startup_script:
                put(
                    f"login-script-{group.name}",
                    script_object(f"login-{group.name}", "startup.sh"),
                    group.startup_script,
                )
        for kind, job_scripts in (
            ("prolog", config.prolog_scripts),
            ("epilog", config.epilog_scripts),
        ):
            for script in job_scripts:
                put(
                    f"{kind}-{script.name}",
                    script_object(kind, script.name),
                    script.content,
                )
        # The controller installs this as the boot script of every TPU VM it creates.
        put(
            "tpu-boot",
            boot.TPU_NODE_SCRIPT,
            boot.render(boot.BootScript(kind="tpu")),
        )
        # The zips the controller and the nodes download at boot, fetched and verified at
        # `pulumi up`; the image's own copies predate this bucket layout.
        self.scripts = SlurmScripts(
            f"{name}-scripts",
            bucket=self.bucket.name_,
            prefix=files,
            mirror=config.scripts_mirror,
            provider=args.scripts_provider,
            opts=self.child_opts(depends_on=[self.bucket.bucket]),
        )
        self.objects = objects
        self.home = self._home(name, args.network) if config.home.filestore else None
        if self.home is not None:
            client_rules(
                self,
                f"{name}-home",
                project=ctx.project,
                network=args.network.self_link,
                name=ctx.name("slurm", cluster, "home"),
                share=self.home,
                client_tags=[cluster],
                description=f"Slurm {cluster}'s /home share",
            )
        storage = storage_document(config.network_storage)
        home = (
            filestore_ip(self.home).apply(lambda address: [_home_mount(address)])
            if self.home is not None
            else pulumi.Output.from_input([])
        )
        network_storage: pulumi.Output[list[dict[str, str]]] = pulumi.Output.all(
            home, mounts(config.storage)
        ).apply(lambda parts: [*parts[0], *storage, *parts[1]])
        # setup.py waits for config.yaml and then reads the rest: writing it last makes it
        # the signal that everything else is in place (slurm_files main.tf `config`).
        self.config_object = gcp.storage.BucketObject(
            f"{name}-config",
            bucket=self.bucket.name_,
            name=f"{files}/config.yaml",
            content=network_storage.apply(
                lambda mounts: _dump(
                    cluster_document(
                        config, project=ctx.project, bucket=self.bucket.name_, storage=mounts
                    )
                )
            ),
            content_type="text/plain",
            opts=self.child_opts(depends_on=[self.bucket.bucket, self.scripts, *objects]),
        )

        self.firewalls = self._firewalls(name, ctx, cluster, args.network)
        # Pulumi deletes dependents first: the controller (which depends on these) stops
        # creating VMs, then these delete those left, then the subnet and the node accounts
        # go.
        self.cleanup = TpuCleanup(
            f"{name}-tpu-cleanup",
            project=ctx.project,
            cluster=cluster,
            nodesets=[{"name": n.name, "zone": ctx.zone_of(n.zone)} for n in config.tpu_nodesets],
            provider=args.cleanup_provider,
            opts=self.child_opts(
                depends_on=[
                    args.network.component,
                    *(i.account for r, i in self.identities.items() if r == "tpu"),
                ]
            ),
        )
        cleanups: list[pulumi.Resource] = [self.cleanup]
        self.compute_cleanup = None
        if cpu_nodesets:
            self.compute_cleanup = ComputeCleanup(
                f"{name}-compute-cleanup",
                project=ctx.project,
                cluster=cluster,
                nodesets=[
                    {"name": n.name, "zone": zone}
                    for n in cpu_nodesets
                    for zone in cpu_zones(n, ctx)
                ],
                provider=args.compute_cleanup_provider,
                opts=self.child_opts(
                    depends_on=[
                        args.network.component,
                        *(i.account for r, i in self.identities.items() if r == "cpu"),
                        *self.templates.values(),
                    ]
                ),
            )
            cleanups.append(self.compute_cleanup)
        self.controller, self.logins = controller_and_logins(
            self,
            name,
            ctx=ctx,
            config=config,
            network=args.network,
            bucket_path=self.bucket_path,
            identities=self.identities,
            controller_after=cleanups,
            lustre=self.lustre,
            files_ready=[self.scripts, self.config_object],
        )
        self.register_outputs({"bucketPath": self.bucket_path, "controller": self.controller.name})

    @property
    def exports(self) -> dict[str, Any]:
        """The stack output `slurm`: where to log in, the controller, the bucket path and
        the partitions."""
        ctx, config = self.context, self.config
        zone = ctx.zone_of(config.controller.zone)
        return {
            "controller": {"name": config.controller_name, "zone": zone},
            "bucketPath": self.bucket_path,
            "partitions": [p.name for p in config.all_partitions],
            "login": {
                vm: ssh_command(vm, zone, ctx.project)
                for group in config.login_groups
                for vm in config.login_names(group)
            },
        }

    def _template(
        self, name: str, nodeset: CpuNodesetConfig, network: NetworkHandle
    ) -> gcp.compute.InstanceTemplate:
        """The nodes' template. Slurm-GCP caches a template's properties by its name for as
        long as the controller runs (util.py `template_info`, file_cache), so every change
        gets a new name: the properties' hash ends it."""
        ctx, config = self.context, self.config
        cluster = config.cluster_name
        identity = self.identities.get("cpu")
        email = nodeset.service_account_email or (identity.email if identity else "")
        gpus = nodeset.gpus()
        labels = {**slurm_labels(ctx, cluster, "compute"), "slurm_nodeset": nodeset.name}
        metadata = slurm_metadata(cluster, "compute", self.bucket_path)
        tags = slurm_tags(cluster, "compute")
        # Everything the template is made of, and nothing else (counts, zones and scripts
        # live in the nodeset's YAML): a change to any of it, and only that, renames it.
        properties = {
            "machine_type": nodeset.machine_type,
            "gpus": gpus.model_dump() if gpus else None,
            "disk": [nodeset.disk_type, nodeset.disk_size_gb, nodeset.image.path],
            "spot": nodeset.spot,
            "account": [email, list(nodeset.service_account_scopes)],
            "public_ip": nodeset.enable_public_ips,
            "secure_boot": config.secure_boot(nodeset, self.lustre),
            "labels": labels,
            "metadata": metadata,
            "tags": tags,
            "subnet": network.subnet_name,
            "project": ctx.project,
        }
        digest = hashlib.sha256(json.dumps(properties, sort_keys=True).encode()).hexdigest()
        # GPUs and Spot VMs cannot migrate live (Compute Engine "Host events").
        scheduling = gcp.compute.InstanceTemplateSchedulingArgs(
            on_host_maintenance="TERMINATE",
            automatic_restart=not nodeset.spot,
            preemptible=nodeset.spot,
            provisioning_model="SPOT" if nodeset.spot else "STANDARD",
            instance_termination_action="DELETE" if nodeset.spot else None,
        )
        return gcp.compute.InstanceTemplate(
            f"{name}-template-{nodeset.name}",
            project=ctx.project,
            name=f"{cluster}-{nodeset.name}-{digest[:10]}",
            machine_type=nodeset.machine_type,
            disks=[
                gcp.compute.InstanceTemplateDiskArgs(
                    source_image=nodeset.image.path,
                    disk_type=nodeset.disk_type,
                    disk_size_gb=nodeset.disk_size_gb,
                    boot=True,
                    auto_delete=True,
                    labels={"slurm_cluster_name": cluster, "slurm_instance_role": "compute"},
                )
            ],
            guest_accelerators=(
                [gcp.compute.InstanceTemplateGuestAcceleratorArgs(type=gpus.type, count=gpus.count)]
                if gpus is not None
                else []
            ),
            network_interfaces=[
                gcp.compute.InstanceTemplateNetworkInterfaceArgs(
                    subnetwork=network.subnet_self_link,
                    access_configs=(
                        [gcp.compute.InstanceTemplateNetworkInterfaceAccessConfigArgs()]
                        if nodeset.enable_public_ips
                        else []
                    ),
                )
            ],
            service_account=gcp.compute.InstanceTemplateServiceAccountArgs(
                email=email, scopes=list(nodeset.service_account_scopes)
            ),
            scheduling=scheduling,
            shielded_instance_config=gcp.compute.InstanceTemplateShieldedInstanceConfigArgs(
                **shielded(config.secure_boot(nodeset, self.lustre))
            ),
            # Threads per core 1, as Toolkit's nodeset (advanced_machine_features): one
            # Slurm CPU per core.
            advanced_machine_features=gcp.compute.InstanceTemplateAdvancedMachineFeaturesArgs(
                threads_per_core=1
            ),
            metadata=metadata,
            labels=labels,
            tags=tags,
            opts=self.child_opts(
                depends_on=[identity.account]
                if identity and not nodeset.service_account_email
                else []
            ),
        )

    def _home(self, name: str, network: NetworkHandle) -> gcp.filestore.Instance:
        """The /home share every VM mounts (Toolkit's filestore module, `nfsshare`)."""
        ctx, config = self.context, self.config
        return gcp.filestore.Instance(
            f"{name}-home",
            project=ctx.project,
            name=ctx.name("slurm", config.cluster_name, "home"),
            location=ctx.zone_of(config.controller.zone),
            tier=config.home.tier,
            # Only the stack's subnet, where every VM of the cluster lives (a nodeset in
            # another subnet is refused), mounts it; root is not squashed because OS Login
            # creates each user's home directory as root at first login, as Toolkit's
            # filestore module leaves it (nfs_export_options unset).
            file_shares=gcp.filestore.InstanceFileSharesArgs(
                name=HOME_SHARE,
                capacity_gb=config.home.capacity_gb,
                nfs_export_options=export_options([network.subnet_cidr], root_squash=False),
            ),
            networks=[
                gcp.filestore.InstanceNetworkArgs(
                    network=network.name, modes=["MODE_IPV4"], connect_mode="DIRECT_PEERING"
                )
            ],
            labels=ctx.labels,
            opts=self.child_opts(depends_on=[network.component], protect=ctx.protect),
        )

    def _mount_access(self, name: str, config: SlurmConfig, args: SlurmClusterArgs) -> None:
        """Object access on each bucket the cluster's VMs mount, per account: objectUser where
        any of its VMs writes the bucket, else objectViewer. Login VMs and nodes mount the
        cluster's `storage` beside their own."""
        accounts: dict[str, tuple[str, Identity | None, list[StorageMount]]] = {}

        def mounting(
            owner: str, member: str, identity: Identity | None, mounts: list[StorageMount]
        ) -> None:
            accounts.setdefault(owner, (member, identity, []))[2].extend(mounts)

        login = self.identities["lgn"]
        groups = [m for g in config.login_groups for m in g.storage]
        mounting(login.owner, login.member, login, [*config.storage, *groups])
        nodesets = [("tpu", n) for n in config.tpu_nodesets]
        nodesets += [("cpu", n) for n in config.all_cpu_nodesets]
        for role, nodeset in nodesets:
            email = nodeset.service_account_email
            mounts = [*config.storage, *nodeset.storage]
            if email is None:
                identity = self.identities[role]
                mounting(identity.owner, identity.member, identity, mounts)
            else:
                mounting(f"{name}-{slug(email)}", f"serviceAccount:{email}", None, mounts)
        for owner, (member, identity, mounts) in sorted(accounts.items()):
            for bucket, role in sorted(args.storage.bucket_roles(mounts).items()):
                grant = grant_named_access(
                    self,
                    owner,
                    args.buckets,
                    bucket,
                    role=role,
                    member=member,
                    depends_on=[identity.account] if identity else [],
                )
                if identity is not None:
                    identity.grants.append(grant)

    def _bucket_readers(self, name: str, config: SlurmConfig) -> None:
        """Every VM lists and reads the cluster's files. A nodeset may run as an account of
        the team's own: it reads the bucket too, and the controller must be able to attach it
        to the VMs it creates. Keyed by email, so nodesets sharing an account share one
        grant."""
        controller = self.identities["ctl"]
        readers = {
            identity.owner: (identity.member, [identity.account])
            for identity in self.identities.values()
        }
        own = {identity.email for identity in self.identities.values()}
        nodesets = [*config.tpu_nodesets, *config.all_cpu_nodesets]
        for email in sorted(
            {n.service_account_email for n in nodesets if n.service_account_email} - own
        ):
            readers[f"{name}-{slug(email)}"] = (f"serviceAccount:{email}", [])
            controller.grants.append(
                account_grant(
                    self,
                    controller.owner,
                    account=email,
                    role=SERVICE_ACCOUNT_USER,
                    member=controller.member,
                    scope=slug(email),
                    depends_on=[controller.account],
                )
            )
        for owner, (member, after) in sorted(readers.items()):
            for bucket_role in BUCKET_READER_ROLES:
                grant = grant_bucket_access(
                    self, owner, self.bucket, role=bucket_role, member=member, depends_on=after
                )
                for identity in self.identities.values():
                    if identity.owner == owner:
                        identity.grants.append(grant)

    def _firewalls(
        self, name: str, ctx: StackContext, cluster: str, network: NetworkHandle
    ) -> list[gcp.compute.Firewall]:
        """The cluster's VMs carry its name as their network tag: they reach each other, and
        SSH reaches them through IAP only."""
        return [
            firewall_rule(
                self,
                f"{name}-internal",
                project=ctx.project,
                network=network.self_link,
                name=ctx.name("slurm", cluster, "internal"),
                description=f"Slurm {cluster}: controller, login and node VMs to each other",
                source_tags=[cluster],
                target_tags=[cluster],
                allows=ALL_INTERNAL,
            ),
            iap_ssh_rule(
                self,
                f"{name}-iap-ssh",
                project=ctx.project,
                network=network.self_link,
                name=ctx.name("slurm", cluster, "iap-ssh"),
                description=f"Slurm {cluster}: SSH through Identity-Aware Proxy only",
                target_tags=[cluster],
            ),
        ]


HOME_SHARE = "nfsshare"
"""The share's name in Toolkit's filestore module (`filestore_share_name`)."""


def _home_mount(address: str) -> dict[str, str]:
    """The /home entry of `network_storage`, as Toolkit's filestore module outputs it."""
    return {
        "server_ip": address,
        "remote_mount": f"/{HOME_SHARE}",
        "local_mount": "/home",
        "fs_type": "nfs",
        "mount_options": "defaults,_netdev",
    }


def ssh_command(vm: str, zone: str, project: str) -> str:
    """The cluster's VMs have no external IP, so SSH goes through IAP (the firewall admits
    IAP's range only) and OS Login decides who may."""
    return f"gcloud compute ssh {vm} --zone {zone} --project {project} --tunnel-through-iap"
