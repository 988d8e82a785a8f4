"""What a built plan needs from the live project, read off the plan itself: the machines it brings
up and what others create later from it (`graph.capacity`, which the plan's numbers and the cost
read too), its shares, buckets, clusters, grants, service accounts and locations. Pure: a
function of (StackConfig, Graph).

Reading the registered inputs rather than each system's config keeps new config fields flowing
through: a field that changes a node pool's machine type, count or capacity changes what is
checked without a line here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from catalog import tpu as tpu_catalog
from catalog.quota_names import STORAGE_QUOTAS
from graph import capacity, types
from graph.capacity import Machines, Slices, Storage
from graph.model import Graph, Registration, unwrap
from stacks.config import StackConfig
from stacks.messages import NAMESPACE

_TPU_RESERVATION = re.compile(
    r"projects/(?P<owner>[^/]+)/locations/[^/]+/reservations/(?P<name>.+)"
)


def tpu_slices(nodes: Machines) -> Slices:
    """The slices of Cloud TPU API VMs (`Needs.tpu_nodes`), which always come in slices."""
    assert nodes.slices is not None, nodes.key
    return nodes.slices


def tpu_reservation_parts(nodes: Machines) -> tuple[str, str] | None:
    """(owner project, name) of the Cloud TPU reservation TPU VMs name; None for any."""
    if nodes.reservation is None:
        return None
    match = _TPU_RESERVATION.fullmatch(nodes.reservation)
    return (match["owner"], match["name"]) if match else None


@dataclass(frozen=True)
class Cluster:
    source: str
    location: str
    channel: str
    """`REGULAR`, ... or `UNSPECIFIED` (no channel)."""
    floor: str | None
    """`min_master_version` as written (`1.34`, `latest`), or None."""


@dataclass(frozen=True)
class Needs:
    """Everything preflight checks, derived once."""

    project: str
    services: tuple[str, ...]
    vms: tuple[Machines, ...]
    """Compute Engine VMs: GKE nodes (the provisioner's too), groups, instances, Slurm's CPU
    nodes."""
    tpu_nodes: tuple[Machines, ...]
    """Cloud TPU API VMs: queued resources and Slurm's TPU nodesets."""
    shares: tuple[Storage, ...]
    """Storage a regional quota holds (Filestore instances)."""
    buckets: tuple[tuple[str, str], ...]
    """(source, bucket name)."""
    clusters: tuple[Cluster, ...]
    image_types: tuple[str, ...]
    """GKE node image types the pools use."""
    members: tuple[tuple[str, str], ...]
    """(member, source) of every IAM grant."""
    types: tuple[tuple[str, int], ...]
    """(resource type, how many) of everything registered."""
    service_accounts: tuple[str, ...]
    """Accounts resources run as (the deployer must act as them)."""
    locations: tuple[str, ...]
    """Every region, zone and bucket location the plan places something in."""
    nat_subnets: tuple[tuple[str, str], ...] = ()
    """(source, `projects/P/regions/R/subnetworks/S`) of each subnet a Cloud NAT serves."""

    @property
    def images(self) -> tuple[tuple[str, str], ...]:
        """(source, image path) of every image the plan's VMs boot by name or family."""
        return tuple(
            (vm.source, image) for vm in (*self.vms, *self.tpu_nodes) for image in vm.images
        )

    @property
    def gke_families(self) -> dict[str, tpu_catalog.TpuFamily]:
        """TPU families of the GKE pools, by prefix (the provisioner's included)."""
        return {v.tpu.family.prefix: v.tpu.family for v in self.vms if v.gke and v.tpu}

    @property
    def flex_start_tpus(self) -> bool:
        return any(v.gke and v.tpu and v.capacity == "flex-start" for v in self.vms)


def _labelled(r: Registration, keys: Mapping[str, str]) -> str:
    key = keys.get(r.urn, "").removeprefix(f"{NAMESPACE}:")
    short = types.short(r.type)
    return f"{key} {short} {r.name}" if key else f"{short} {r.name}"


def _members(graph: Graph, keys: Mapping[str, str]) -> Iterator[tuple[str, str]]:
    for r in graph.resources_to_apply:
        inputs = unwrap(r.inputs)
        for member in [inputs.get("member"), *(inputs.get("members") or [])]:
            if isinstance(member, str):
                yield member, _labelled(r, keys)


def _service_accounts(graph: Graph) -> Iterator[str]:
    """Emails under any `serviceAccount` input: a string, or `{email: ...}`."""

    def walk(value: Any) -> Iterator[str]:
        if isinstance(value, dict):
            for key, inner in value.items():
                if key == "serviceAccount" and isinstance(inner, str) and "@" in inner:
                    yield inner
                elif key == "serviceAccount" and isinstance(inner, dict):
                    if isinstance(inner.get("email"), str):
                        yield inner["email"]
                else:
                    yield from walk(inner)
        elif isinstance(value, list):
            for inner in value:
                yield from walk(inner)

    for r in graph.resources_to_apply:
        if not types.is_kubernetes(r.type):
            yield from walk(unwrap(r.inputs))


def _locations(graph: Graph) -> Iterator[str]:
    for r in graph.resources_to_apply:
        if types.is_kubernetes(r.type):
            continue
        inputs = unwrap(r.inputs)
        for key in ("region", "zone", "location"):
            if isinstance(inputs.get(key), str):
                yield inputs[key].lower()
        yield from (z for z in inputs.get("nodeLocations") or [] if isinstance(z, str))


def _nat_subnets(graph: Graph, keys: Mapping[str, str]) -> Iterator[tuple[str, str]]:
    """Each subnet a Cloud NAT gateway serves, as org policies name it: the subnets its
    `subnetworks` input is built from."""
    subnets = {r.urn: unwrap(r.inputs) for r in graph.of_type(types.SUBNETWORK)}
    for nat in graph.of_type(types.ROUTER_NAT):
        for urn in nat.property_dependencies.get("subnetworks", ()):
            subnet = subnets.get(urn)
            if subnet is not None:
                path = (
                    f"projects/{subnet.get('project')}/regions/{subnet.get('region')}/"
                    f"subnetworks/{subnet.get('name')}"
                )
                yield _labelled(nat, keys), path


def derive(config: StackConfig, graph: Graph) -> Needs:
    """What the plan needs of the project; `graph` is the plan of `config`."""
    keys = graph.config_keys()
    inventory = capacity.read(graph)
    clusters = tuple(
        Cluster(
            source=_labelled(r, keys),
            location=r.inputs["location"],
            channel=(r.inputs.get("releaseChannel") or {}).get("channel", "UNSPECIFIED"),
            floor=r.inputs.get("minMasterVersion"),
        )
        for r in graph.of_type(types.CLUSTER)
    )
    image_types = {
        (unwrap(r.inputs).get("nodeConfig") or {}).get("imageType")
        for r in graph.of_type(types.NODE_POOL)
    }
    counted: dict[str, int] = {}
    for r in graph.resources_to_apply:
        counted[r.type] = counted.get(r.type, 0) + 1
    tpu_nodes = tuple(m for m in inventory.machines if m.tpu_api)
    return Needs(
        project=config.project,
        services=tuple(r.inputs["service"] for r in graph.of_type(types.SERVICE)),
        vms=tuple(m for m in inventory.machines if not m.tpu_api),
        tpu_nodes=tpu_nodes,
        shares=tuple(s for s in inventory.storage if s.kind in STORAGE_QUOTAS),
        buckets=tuple((_labelled(r, keys), r.inputs["name"]) for r in graph.of_type(types.BUCKET)),
        clusters=clusters,
        image_types=tuple(sorted(t for t in image_types if t)),
        members=tuple(sorted(set(_members(graph, keys)))),
        types=tuple(sorted(counted.items())),
        service_accounts=tuple(sorted(set(_service_accounts(graph)))),
        locations=tuple(sorted(set(_locations(graph)) | {z for n in tpu_nodes for z in n.zones})),
        nat_subnets=tuple(_nat_subnets(graph, keys)),
    )
