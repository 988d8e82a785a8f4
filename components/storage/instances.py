"""The storage the stack creates or attaches: private services access in the stack's VPC (an
allocated range and the peering to Google's service network), Filestore shares and Managed
Lustre instances in it, the firewall rule Lustre's servers need to reach their clients, and
the lookups of existing instances, each ending in an `Endpoint` clients mount. Production
stacks protect every instance.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp
from pydantic import InstanceOf

from catalog.storage import LUSTRE_PORT
from components.base import Component, WiringModel
from components.buckets import ACCESS_ROLES
from components.network import NetworkHandle, filestore_ip, firewall_rule
from components.nfs import client_rules, export_options
from components.storage.config import Storage, StorageMount, Volume
from components.storage.mounts import Endpoint, lustre_endpoint, network_storage_entry

SERVICE_NETWORKING = "servicenetworking.googleapis.com"
"""The service producer private services access peers with; Filestore and Managed Lustre
provision into it ("Configure private services access")."""
LUSTRE_SERVICE = "lustre.googleapis.com"
STORAGE_SERVICES = (SERVICE_NETWORKING, LUSTRE_SERVICE)
"""APIs a stack that creates Filestore shares or Lustre instances enables beside the ones every
stack does (file.googleapis.com among them)."""


@dataclass(frozen=True)
class StorageHandle:
    """What systems need of the stack's storage: the resolved config, where each volume is
    served, and the resources a mount waits for."""

    storage: Storage
    endpoints: Mapping[str, pulumi.Output[Endpoint]]
    """Volume name -> where it is served, known once its instance is."""
    resources: Mapping[str, pulumi.Resource]
    """Volume name -> the instance it mounts (absent for buckets and existing instances)."""

    def endpoint(self, name: str) -> pulumi.Output[Endpoint]:
        return self.endpoints[name]

    def network_storage(
        self, mounts: Sequence[StorageMount]
    ) -> pulumi.Output[list[dict[str, str]]]:
        """Slurm-GCP `network_storage` entries of a `storage` list, in its order, once the
        volumes' addresses are known."""
        volumes = self.storage.volumes
        return pulumi.Output.all(
            *[
                self.endpoints[m.volume].apply(
                    lambda e, m=m: network_storage_entry(
                        e,
                        path=m.mount_path,
                        read_only=m.read_only,
                        profile=volumes[m.volume].config.profile,
                    )
                )
                for m in mounts
            ]
        )

    def bucket_roles(self, mounts: Iterable[StorageMount]) -> dict[str, str]:
        """Bucket (an `ai-infra:buckets` key, or a full name) -> the object role VMs mounting
        `mounts` need: objectUser where any mount writes it, else objectViewer."""
        roles: dict[str, str] = {}
        for mount in mounts:
            volume = self.storage.volumes[mount.volume]
            if volume.kind != "gcs":
                continue
            bucket = volume.bucket_key or volume.instance
            role = ACCESS_ROLES["read" if mount.read_only else "write"]
            if roles.get(bucket) != ACCESS_ROLES["write"]:
                roles[bucket] = role
        return roles


class StorageArgs(WiringModel):
    storage: InstanceOf[Storage]
    network: InstanceOf[NetworkHandle]
    clients: Mapping[str, Sequence[str]] = {}
    """Volume name -> the network tags of the VMs that mount it (GKE nodes, a Slurm cluster,
    a GPU cluster, TPU VMs): the only ones the stack's firewall lets reach it."""


class StorageInstances(Component):
    """Private services access, the instances the stack creates, and every volume's endpoint."""

    handle: StorageHandle

    def __init__(self, name: str, args: StorageArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ai-infra:storage:StorageInstances", name, opts)
        storage = args.storage
        ctx = storage.context
        connection = self._service_access(name, args) if storage.needs_service_access else None
        endpoints: dict[str, pulumi.Output[Endpoint]] = {}
        resources: dict[str, pulumi.Resource] = {}
        for volume in storage.volumes.values():
            config = volume.config
            if config.filestore is not None:
                assert connection is not None
                instance = self._filestore(name, volume, args, connection)
                resources[volume.name] = instance
                client_rules(
                    self,
                    f"{name}-{volume.name}",
                    project=ctx.project,
                    network=args.network.self_link,
                    name=volume.instance,
                    share=instance,
                    client_tags=args.clients.get(volume.name, ()),
                    description=f"Storage volume {volume.name}",
                    # Through private services access the share's reservedIpRange names the
                    # allocation, not a range: its address is what clients reach.
                    destination=filestore_ip(instance).apply(lambda ip: f"{ip}/32"),
                )
                capacity = config.filestore.capacity_gib
                endpoints[volume.name] = filestore_ip(instance).apply(
                    lambda ip, v=volume, c=capacity: Endpoint("filestore", ip, f"/{v.share}", c)
                )
            elif config.lustre is not None:
                assert connection is not None
                lustre = self._lustre(name, volume, args, connection)
                resources[volume.name] = lustre
                capacity = config.lustre.capacity_gib
                endpoints[volume.name] = lustre.mount_point.apply(
                    lambda point, c=capacity: lustre_endpoint(point, c)
                )
            elif config.existing_filestore is not None:
                endpoints[volume.name] = _existing_filestore(volume, ctx.project, self)
            elif config.existing_lustre is not None:
                endpoints[volume.name] = _existing_lustre(volume, ctx.project, self)
            else:
                endpoints[volume.name] = pulumi.Output.from_input(volume.instance).apply(
                    lambda bucket: Endpoint("gcs", "", bucket, 0)
                )
        self.handle = StorageHandle(storage=storage, endpoints=endpoints, resources=resources)
        self.register_outputs(
            {"volumes": {k: e.apply(lambda e: e.source) for k, e in endpoints.items()}}
        )

    def _service_access(self, name: str, args: StorageArgs) -> gcp.servicenetworking.Connection:
        """The allocated range and the peering Filestore and Lustre provision through; and,
        where Lustre is created, LNet from the range to the VPC's VMs."""
        storage = args.storage
        ctx = storage.context
        cidr = storage.config.private_service_range
        assert cidr is not None
        network = ipaddress.IPv4Network(cidr)
        allocated = gcp.compute.GlobalAddress(
            f"{name}-psa-range",
            project=ctx.project,
            name=ctx.name("storage-psa"),
            purpose="VPC_PEERING",
            address_type="INTERNAL",
            address=str(network.network_address),
            prefix_length=network.prefixlen,
            network=args.network.self_link,
            description="Private services access for the stack's Filestore and Lustre (ai-infra)",
            opts=self.child_opts(),
        )
        connection = gcp.servicenetworking.Connection(
            f"{name}-psa",
            network=args.network.self_link,
            service=SERVICE_NETWORKING,
            reserved_peering_ranges=[allocated.name],
            opts=self.child_opts(),
        )
        clients = sorted(
            {
                tag
                for v in storage.created
                if v.config.lustre
                for tag in args.clients.get(v.name, ())
            }
        )
        if clients:
            firewall_rule(
                self,
                f"{name}-allow-lustre",
                project=ctx.project,
                network=args.network.name,
                name=ctx.name("allow-lustre"),
                description="Managed Lustre servers to the VMs that mount them (LNet), from the "
                "private services range",
                source_ranges=[cidr],
                target_tags=clients,
                allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=[str(LUSTRE_PORT)])],
            )
        return connection

    def _filestore(
        self,
        name: str,
        volume: Volume,
        args: StorageArgs,
        connection: gcp.servicenetworking.Connection,
    ) -> gcp.filestore.Instance:
        ctx = args.storage.context
        spec = volume.config.filestore
        assert spec is not None
        return gcp.filestore.Instance(
            f"{name}-{volume.name}",
            project=ctx.project,
            name=volume.instance,
            location=volume.location,
            tier=spec.tier,
            # Every client is a VM of the stack's subnet (GKE nodes mount for their pods).
            # Root is not squashed, as on the other systems' shares: the share's root
            # directory is root's, and a squashed root could make no directory in it.
            file_shares=gcp.filestore.InstanceFileSharesArgs(
                name=volume.share,
                capacity_gb=spec.capacity_gib,
                nfs_export_options=export_options([args.network.subnet_cidr], root_squash=False),
            ),
            networks=[
                gcp.filestore.InstanceNetworkArgs(
                    network=args.network.name,
                    modes=["MODE_IPV4"],
                    connect_mode="PRIVATE_SERVICE_ACCESS",
                    # With private services access, the allocated range by name (Filestore
                    # API Instance.networks[].reservedIpRange).
                    reserved_ip_range=ctx.name("storage-psa"),
                )
            ],
            labels=ctx.labels,
            opts=self.child_opts(depends_on=[connection], protect=ctx.protect),
        )

    def _lustre(
        self,
        name: str,
        volume: Volume,
        args: StorageArgs,
        connection: gcp.servicenetworking.Connection,
    ) -> gcp.lustre.Instance:
        ctx = args.storage.context
        spec = volume.config.lustre
        assert spec is not None
        return gcp.lustre.Instance(
            f"{name}-{volume.name}",
            project=ctx.project,
            instance_id=volume.instance,
            location=volume.location,
            capacity_gib=str(spec.capacity_gib),
            per_unit_storage_throughput=str(spec.throughput),
            filesystem=volume.filesystem,
            # The API takes the network as projects/P/global/networks/N, not a self link.
            network=pulumi.Output.concat(
                f"projects/{ctx.project}/global/networks/", args.network.name
            ),
            labels=ctx.labels,
            # Creating an instance takes up to an hour (Cluster Toolkit's managed-lustre
            # module allows that much). A replacement keeps the instance id, which the bridge
            # does not autoname, so it must delete first: created first, it gets 409.
            opts=self.child_opts(
                depends_on=[connection],
                protect=ctx.protect,
                delete_before_replace=True,
                custom_timeouts=pulumi.CustomTimeouts(create="60m", update="60m", delete="60m"),
            ),
        )


def _existing_filestore(
    volume: Volume, project: str, parent: pulumi.Resource
) -> pulumi.Output[Endpoint]:
    """An existing Filestore instance, read at `pulumi up`: its first network's first address
    and its first share."""
    found = gcp.filestore.get_instance_output(
        name=volume.instance,
        location=volume.location,
        project=project,
        opts=pulumi.InvokeOutputOptions(parent=parent),
    )
    return found.apply(
        lambda i: Endpoint(
            "filestore",
            (i.networks[0].ip_addresses or [""])[0] if i.networks else "",
            f"/{i.file_shares[0].name}" if i.file_shares else "",
            int(i.file_shares[0].capacity_gb) if i.file_shares else 0,
        )
    )


def _existing_lustre(
    volume: Volume, project: str, parent: pulumi.Resource
) -> pulumi.Output[Endpoint]:
    """An existing Managed Lustre instance, read at `pulumi up`."""
    found = gcp.lustre.get_instance_output(
        instance_id=volume.instance,
        zone=volume.location,
        project=project,
        opts=pulumi.InvokeOutputOptions(parent=parent),
    )
    return found.apply(lambda i: lustre_endpoint(i.mount_point, int(i.capacity_gib or 0)))
