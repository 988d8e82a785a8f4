"""`ai-infra:slurm`: a Slurm-GCP v6 cluster whose TPU nodesets the controller turns into Cloud
TPU VMs on demand, after Cluster Toolkit's `schedmd-slurm-gcp-v6-nodeset-tpu`, `-partition` and
`-controller` modules: the cluster's service accounts and grants, the Slurm bucket with the
files the controller reads (`files.py`), the firewall, the cleanup of the TPU VMs the
controller creates, and the controller and login VMs (`vms.py`). Only TPU nodesets: CPU and GPU
nodesets, accounting databases and high-availability controllers are not built here.
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp
from pydantic import InstanceOf, SkipValidation

from components.base import Component, WiringModel, slug
from components.buckets import Bucket, BucketArgs, BucketConfig, grant_bucket_access
from components.context import StackContext
from components.identity import Identity, account_grant, service_account
from components.network import (
    ALL_INTERNAL,
    NetworkHandle,
    firewall_rule,
    iap_ssh_rule,
    subnet_of,
)
from components.slurm import boot
from components.slurm.cleanup import TpuCleanup, TpuCleanupProvider
from components.slurm.config import ACCOUNT_ROLES, SlurmConfig
from components.slurm.files import (
    FILES_DIR,
    LOGIN_GROUP,
    _dump,
    cluster_document,
    nodeset_document,
    partition_document,
)
from components.slurm.scripts import ScriptsProvider, SlurmScripts
from components.slurm.vms import controller_and_logins

CONTROLLER_ROLES = (
    "roles/tpu.admin",
    "roles/compute.instanceAdmin.v1",
    "roles/logging.logWriter",
    "roles/monitoring.metricWriter",
)
"""The controller creates, stops and deletes TPU VMs (resume.py, suspend.py) and tags them;
`iam.serviceAccountUser` it gets on the TPU node account alone."""
NODE_ROLES = ("roles/logging.logWriter", "roles/monitoring.metricWriter")
BUCKET_READER_ROLES = ("roles/storage.objectViewer", "roles/storage.legacyBucketReader")
"""Every VM lists and reads the cluster's files (util.py `blob_list`, `download_as_text`)."""
ACCOUNT_TITLES = {"ctl": "controller", "tpu": "TPU nodes", "lgn": "login nodes"}
SERVICE_ACCOUNT_USER = "roles/iam.serviceAccountUser"


def account_id(ctx: StackContext, role: str) -> str:
    """The id of the cluster's controller (`ctl`), TPU node (`tpu`) or login (`lgn`)
    service account; one Slurm cluster per stack, so the prefix keeps them unique."""
    return ctx.name("slurm", role)


class SlurmClusterArgs(WiringModel):
    context: InstanceOf[StackContext]
    network: InstanceOf[NetworkHandle]
    """The stack's network: the VMs join its subnet, and the TPU cleanup runs before any of
    it is deleted."""
    config: SlurmConfig
    scripts_provider: SkipValidation[ScriptsProvider] | None = None
    """Tests pass a provider with a fake fetcher; `pulumi up` uses the real one."""
    cleanup_provider: SkipValidation[TpuCleanupProvider] | None = None


class SlurmCluster(Component):
    """The Slurm bucket and its files, the cluster's service accounts, firewall and VMs."""

    bucket: Bucket
    identities: dict[str, Identity]
    config_object: gcp.storage.BucketObject
    """`config.yaml`, written after every other object."""
    controller: gcp.compute.Instance
    logins: list[gcp.compute.Instance]

    def __init__(
        self, name: str, args: SlurmClusterArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("ai-infra:slurm:SlurmCluster", name, opts)
        ctx = args.context
        config = args.config
        cluster = config.cluster_name
        project_roles = {"ctl": CONTROLLER_ROLES, "tpu": NODE_ROLES, "lgn": NODE_ROLES}
        self.identities = {
            role: service_account(
                self,
                f"{name}-{role}",
                project=ctx.project,
                account_id=account_id(ctx, role),
                display_name=f"Slurm {cluster} {ACCOUNT_TITLES[role]}",
                roles=project_roles[role],
            )
            for role in ACCOUNT_ROLES
        }
        controller = self.identities["ctl"]
        # The controller attaches the TPU node account to the TPU VMs it creates, and may act
        # as that account alone.
        controller.grants.append(
            account_grant(
                self,
                controller.owner,
                account=self.identities["tpu"].email,
                role=SERVICE_ACCOUNT_USER,
                member=controller.member,
                scope="tpu",
                depends_on=[controller.account, self.identities["tpu"].account],
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
        files = FILES_DIR.format(cluster=cluster)
        objects: list[gcp.storage.BucketObject] = []

        def put(resource: str, path: str, content: str) -> gcp.storage.BucketObject:
            found = gcp.storage.BucketObject(
                f"{name}-{resource}",
                bucket=self.bucket.name_,
                name=f"{files}/{path}",
                content=content,
                content_type="text/plain",
                opts=self.child_opts(depends_on=[self.bucket.bucket]),
            )
            objects.append(found)
            return found

        for nodeset in config.tpu_nodesets:
            document = nodeset_document(
                nodeset,
                project=ctx.project,
                zone=ctx.zone_of(nodeset.zone),
                subnetwork=subnet_of(ctx.prefix, nodeset.subnetwork),
                email=nodeset.service_account_email or self.identities["tpu"].email,
            )
            put(
                f"nodeset-{nodeset.name}",
                f"nodeset_tpu_configs/{nodeset.name}.yaml",
                _dump(document),
            )
            if nodeset.startup_script:
                # setup.py runs `slurm-nodeset-<nodeset>-script-*` on the nodeset's VMs.
                put(
                    f"nodeset-{nodeset.name}-script",
                    f"slurm-nodeset-{nodeset.name}-script-startup_sh",
                    nodeset.startup_script,
                )
        for partition in config.partitions:
            put(
                f"partition-{partition.name}",
                f"partition_configs/{partition.name}.yaml",
                _dump(partition_document(partition)),
            )
        # A login VM refuses to set up unless its group's file exists (util.py).
        put(
            "login-group",
            f"login_group_configs/{LOGIN_GROUP}.yaml",
            _dump({"group_name": LOGIN_GROUP}),
        )
        # The controller installs this as the boot script of every TPU VM it creates.
        put(
            "tpu-boot",
            boot.TPU_NODE_SCRIPT,
            boot.render(boot.BootScript(kind="tpu")),
        )
        # The zips the controller and the TPU VMs download at boot, fetched and verified at
        # `pulumi up`; the image's own copies predate this bucket layout.
        self.scripts = SlurmScripts(
            f"{name}-scripts",
            bucket=self.bucket.name_,
            prefix=files,
            provider=args.scripts_provider,
            opts=self.child_opts(depends_on=[self.bucket.bucket]),
        )
        self.objects = objects
        # setup.py waits for config.yaml and then reads the rest: writing it last makes it
        # the signal that everything else is in place (slurm_files main.tf `config`).
        self.config_object = gcp.storage.BucketObject(
            f"{name}-config",
            bucket=self.bucket.name_,
            name=f"{files}/config.yaml",
            content=_dump(cluster_document(config, project=ctx.project, bucket=self.bucket.name_)),
            content_type="text/plain",
            opts=self.child_opts(depends_on=[self.bucket.bucket, self.scripts, *objects]),
        )
        self.bucket_path = f"gs://{self.bucket.name_}/{files}"

        self.firewalls = self._firewalls(name, ctx, cluster, args.network)
        # Pulumi deletes dependents first: the controller (which depends on this) stops
        # creating TPU VMs, then this deletes those left, then the subnet and the TPU node
        # account go.
        self.cleanup = TpuCleanup(
            f"{name}-tpu-cleanup",
            project=ctx.project,
            cluster=cluster,
            nodesets=[{"name": n.name, "zone": ctx.zone_of(n.zone)} for n in config.tpu_nodesets],
            provider=args.cleanup_provider,
            opts=self.child_opts(
                depends_on=[args.network.component, self.identities["tpu"].account]
            ),
        )
        self.controller, self.logins = controller_and_logins(
            self,
            name,
            ctx=ctx,
            config=config,
            network=args.network,
            bucket_path=self.bucket_path,
            identities=self.identities,
            controller_after=[self.cleanup],
        )
        self.register_outputs({"bucketPath": self.bucket_path, "controller": self.controller.name})

    def _bucket_readers(self, name: str, config: SlurmConfig) -> None:
        """Every VM lists and reads the cluster's files. A nodeset may run as an account of
        the team's own: it reads the bucket too, and the controller must be able to attach it
        to the TPU VMs it creates. Keyed by email, so nodesets sharing an account share one
        grant."""
        controller = self.identities["ctl"]
        readers = {
            identity.owner: (identity.member, [identity.account])
            for identity in self.identities.values()
        }
        own = {identity.email for identity in self.identities.values()}
        for email in sorted(
            {n.service_account_email for n in config.tpu_nodesets if n.service_account_email} - own
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
                description=f"Slurm {cluster}: controller, login and TPU VMs to each other",
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
