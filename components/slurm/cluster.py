"""`ai-infra:slurm`: a Slurm-GCP v6 cluster whose CPU and TPU nodesets the controller turns
into Compute Engine and Cloud TPU VMs on demand, after Cluster Toolkit's
`schedmd-slurm-gcp-v6-nodeset`, `-nodeset-tpu`, `-partition` and `-controller` modules: the
cluster's service accounts and grants, the Slurm bucket with the files the controller reads
(`files.py`), the CPU nodesets' instance templates, the /home share, the firewall, the cleanup
of the VMs the controller creates, and the controller and login VMs (`vms.py`). Accounting
databases, dynamic nodesets and high-availability controllers are not built here.
"""

from __future__ import annotations

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
from components.slurm import boot, jobscripts
from components.slurm.cleanup import (
    ComputeCleanup,
    ComputeCleanupProvider,
    FlexCleanup,
    FlexCleanupProvider,
    TpuCleanup,
    TpuCleanupProvider,
)
from components.slurm.config import (
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
from components.slurm.nodesets import cpu_zones
from components.slurm.permissions import controller_permissions, controller_role_id
from components.slurm.scripts import ScriptsProvider, SlurmScripts
from components.slurm.templates import node_template
from components.slurm.vms import controller_and_logins
from components.storage import StorageHandle, StorageMount

NODE_ROLES = ("roles/logging.logWriter", "roles/monitoring.metricWriter")
BUCKET_READER_ROLES = ("roles/storage.objectViewer", "roles/storage.legacyBucketReader")
"""Every VM lists and reads the cluster's files (util.py `blob_list`, `download_as_text`)."""
ACCOUNT_TITLES = {"ctl": "controller", "tpu": "TPU nodes", "lgn": "login nodes", "cpu": "CPU nodes"}
SERVICE_ACCOUNT_USER = "roles/iam.serviceAccountUser"


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
    flex_cleanup_provider: SkipValidation[FlexCleanupProvider] | None = None


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
        self.config, self.context, self.name = args.config, args.context, name
        self.lustre = args.storage.storage.lustre_names
        """The Lustre volumes of `ai-infra:storage`, whose client needs Secure Boot off."""
        self.mounts = args.storage.network_storage
        """`network_storage` entries of `ai-infra:storage` mounts, as Slurm-GCP reads them."""
        self.identities = self._accounts()
        self.bucket = Bucket(
            f"{name}-bucket",
            BucketArgs(
                context=self.context,
                config=BucketConfig.model_validate(
                    {"name": self.config.bucket_key, "forceDestroy": not self.context.protect}
                ),
            ),
            self.child_opts(),
        )
        self._bucket_readers(name, self.config)
        self._mount_access(name, self.config, args)
        self.files_dir = FILES_DIR.format(cluster=self.config.cluster_name)
        self.bucket_path = f"gs://{self.bucket.name_}/{self.files_dir}"
        self.objects: list[gcp.storage.BucketObject] = []
        self.templates: dict[str, gcp.compute.InstanceTemplate] = {}
        self._nodeset_files(args.network)
        self._script_files()
        self._partition_and_login_files()
        # The zips the controller and the nodes download at boot, fetched and verified at
        # `pulumi up`; the image's own copies predate this bucket layout.
        self.scripts = SlurmScripts(
            f"{name}-scripts",
            bucket=self.bucket.name_,
            prefix=self.files_dir,
            mirror=self.config.scripts_mirror,
            provider=args.scripts_provider,
            opts=self.child_opts(depends_on=[self.bucket.bucket]),
        )
        self.home = self._home(name, args.network) if self.config.home.filestore else None
        self.config_object = self._config_yaml()
        self.firewalls = self._firewalls(name, self.context, self.config.cluster_name, args.network)
        cleanups = self._cleanups(args)
        self.controller, self.logins = controller_and_logins(
            self,
            name,
            ctx=self.context,
            config=self.config,
            network=args.network,
            bucket_path=self.bucket_path,
            identities=self.identities,
            controller_after=cleanups,
            lustre=self.lustre,
            files_ready=[self.scripts, self.config_object],
        )
        self.register_outputs({"bucketPath": self.bucket_path, "controller": self.controller.name})

    def _accounts(self) -> dict[str, Identity]:
        """The cluster's accounts, the controller's custom role, and its right to attach the
        node accounts (and act as them alone) to the VMs it creates. A node account exists
        while a nodeset runs as it."""
        name, ctx, config = self.name, self.context, self.config
        cluster = config.cluster_name
        roles = ["ctl", "lgn"]
        if any(n.service_account_email is None for n in config.tpu_nodesets):
            roles.insert(1, "tpu")
        if any(n.service_account_email is None for n in config.all_cpu_nodesets):
            roles.append("cpu")
        identities = {
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
        controller = identities["ctl"]
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
        for role in ("tpu", "cpu"):
            if role in identities:
                node = identities[role]
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
        return identities

    def _put(
        self, resource: str, path: str, content: pulumi.Input[str], aliases: Sequence[str] = ()
    ) -> gcp.storage.BucketObject:
        """An object under the cluster's folder, which `config.yaml` waits for."""
        found = gcp.storage.BucketObject(
            f"{self.name}-{resource}",
            bucket=self.bucket.name_,
            name=f"{self.files_dir}/{path}",
            content=content,
            content_type="text/plain",
            opts=self.child_opts(
                depends_on=[self.bucket.bucket],
                aliases=[pulumi.Alias(name=f"{self.name}-{a}") for a in aliases],
            ),
        )
        self.objects.append(found)
        return found

    def _nodeset_files(self, network: NetworkHandle) -> None:
        """Each TPU nodeset's YAML; each CPU nodeset's instance template and YAML, which
        names the template."""
        ctx, config = self.context, self.config
        mounts = self.mounts
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
            self._put(
                f"nodeset-{nodeset.name}",
                f"nodeset_tpu_configs/{nodeset.name}.yaml",
                document,
            )
        region_zones = [f"{ctx.region}-{x}" for x in ZONES.get(ctx.region, "")]
        for nodeset in config.all_cpu_nodesets:
            identity = self.identities.get("cpu")
            template = node_template(
                self,
                f"{self.name}-template-{nodeset.name}",
                ctx=ctx,
                config=config,
                nodeset=nodeset,
                network=network,
                bucket_path=self.bucket_path,
                identity=identity,
                lustre=self.lustre,
            )
            self.templates[nodeset.name] = template
            zones = cpu_zones(nodeset, ctx)
            content = pulumi.Output.all(
                template.self_link, network.subnet_self_link, mounts(nodeset.storage)
            ).apply(
                lambda links, n=nodeset, z=zones: _dump(
                    cpu_nodeset_document(
                        n,
                        project=ctx.project,
                        template=links[0],
                        subnetwork=links[1],
                        zones=z,
                        region_zones=region_zones,
                        mounts=links[2],
                    )
                )
            )
            self._put(f"nodeset-{nodeset.name}", f"nodeset_configs/{nodeset.name}.yaml", content)

    def _script_files(self) -> None:
        """The scripts setup runs: `slurm-<role>-script-*` on the VMs of the role (util.py
        install_custom_scripts): a nodeset's on its nodes (inside the slurmd container on
        TPU VMs), the controller's on the controller."""
        config = self.config
        for nodeset in [*config.tpu_nodesets, *config.all_cpu_nodesets]:
            if nodeset.startup_script:
                self._put(
                    f"nodeset-{nodeset.name}-script",
                    script_object(f"nodeset-{nodeset.name}", "startup.sh"),
                    nodeset.startup_script,
                )
        if config.controller.startup_script:
            self._put(
                "controller-script",
                script_object("controller", "startup.sh"),
                config.controller.startup_script,
            )

    def _partition_and_login_files(self) -> None:
        """Partitions, login groups (a login VM refuses to set up unless its group's file
        exists, util.py) with their scripts, the job prologs and epilogs, and the boot script
        the controller installs on every TPU VM it creates."""
        config, mounts = self.config, self.mounts
        for partition in config.all_partitions:
            self._put(
                f"partition-{partition.name}",
                f"partition_configs/{partition.name}.yaml",
                _dump(partition_document(config, partition)),
            )
        for group in config.login_groups:
            self._put(
                f"login-group-{group.name}",
                f"login_group_configs/{group.name}.yaml",
                mounts(group.storage).apply(
                    lambda entries, g=group: _dump(login_group_document(g, entries))
                ),
                aliases=["login-group"] if group.name == "login" else (),
            )
            if group.startup_script:
                self._put(
                    f"login-script-{group.name}",
                    script_object(f"login-{group.name}", "startup.sh"),
                    group.startup_script,
                )
        for script in jobscripts.installed(config):
            self._put(script.resource, f"slurm-{script.kind}-script-{script.name}", script.content)
        registries = (*boot.DEFAULT_REGISTRIES, *(n.registry for n in config.tpu_nodesets))
        self._put(
            "tpu-boot",
            boot.TPU_NODE_SCRIPT,
            boot.render(boot.BootScript(kind="tpu", registries=registries)),
        )

    def _config_yaml(self) -> gcp.storage.BucketObject:
        """`config.yaml` with the cluster's `network_storage` (the /home share first). setup.py
        waits for it and then reads the rest: writing it last makes it the signal that
        everything else is in place (slurm_files main.tf `config`)."""
        ctx, config, mounts = self.context, self.config, self.mounts
        storage = storage_document(config.network_storage)
        home = (
            filestore_ip(self.home).apply(lambda address: [_home_mount(address)])
            if self.home is not None
            else pulumi.Output.from_input([])
        )
        network_storage: pulumi.Output[list[dict[str, str]]] = pulumi.Output.all(
            home, mounts(config.storage)
        ).apply(lambda parts: [*parts[0], *storage, *parts[1]])
        return gcp.storage.BucketObject(
            f"{self.name}-config",
            bucket=self.bucket.name_,
            name=f"{self.files_dir}/config.yaml",
            content=network_storage.apply(
                lambda mounts: _dump(
                    cluster_document(
                        config, project=ctx.project, bucket=self.bucket.name_, storage=mounts
                    )
                )
            ),
            content_type="text/plain",
            opts=self.child_opts(depends_on=[self.bucket.bucket, self.scripts, *self.objects]),
        )

    def _cleanups(self, args: SlurmClusterArgs) -> list[pulumi.Resource]:
        """The deletion of the VMs the controller created. Pulumi deletes dependents first:
        the controller (which depends on these) stops creating VMs, then these delete those
        left, then the subnet and the node accounts go."""
        ctx, config, name = self.context, self.config, self.name
        self.cleanup = TpuCleanup(
            f"{name}-tpu-cleanup",
            project=ctx.project,
            cluster=config.cluster_name,
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
        cpu_nodesets = config.all_cpu_nodesets
        if cpu_nodesets:
            self.compute_cleanup = ComputeCleanup(
                f"{name}-compute-cleanup",
                project=ctx.project,
                cluster=config.cluster_name,
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
        flex = [n for n in cpu_nodesets if n.flex]
        self.flex_cleanup = None
        if flex:
            # Depends on the CPU cleanup so that `pulumi destroy` deletes the groups (and
            # their VMs) first: a group's VMs deleted alone would be created again.
            self.flex_cleanup = FlexCleanup(
                f"{name}-flex-cleanup",
                project=ctx.project,
                cluster=config.cluster_name,
                nodesets=[{"name": n.name, "zone": cpu_zones(n, ctx)[0]} for n in flex],
                provider=args.flex_cleanup_provider,
                opts=self.child_opts(depends_on=[*cleanups, *self.templates.values()]),
            )
            cleanups.append(self.flex_cleanup)
        return cleanups

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

    def _home(self, name: str, network: NetworkHandle) -> gcp.filestore.Instance:
        """The /home share every VM mounts (Toolkit's filestore module, `nfsshare`), and the
        rules that let the cluster's VMs alone reach it."""
        ctx, config = self.context, self.config
        cluster = config.cluster_name
        share = gcp.filestore.Instance(
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
        client_rules(
            self,
            f"{name}-home",
            project=ctx.project,
            network=network.self_link,
            name=ctx.name("slurm", cluster, "home"),
            share=share,
            client_tags=[cluster],
            description=f"Slurm {cluster}'s /home share",
        )
        return share

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
