"""What a built plan needs from the live project, read off the plan itself: the resources the
program registers (their machine types, zones, node counts, capacity, images, members) and, for
what the program only configures and a controller or GKE creates later (the TPU provisioner's
pools, Slurm's TPU nodesets), the resolved config. Pure: a function of (StackConfig, Graph).

Reading the registered inputs rather than each system's config keeps new config fields flowing
through: a field that changes a node pool's machine type, count or capacity changes what is
checked without a line here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from components import tpu_catalog
from components.locations import region_of
from plan.engine import Graph, Registration
from plan.replacements import unwrap
from stacks.config import StackConfig
from stacks.messages import NAMESPACE

Capacity = Literal["on-demand", "spot", "flex-start", "reservation"]
"""How VMs get capacity; spot, flex-start and best-effort draw on preemptible quota."""
GKE_DEFAULT_ZONES = 3
"""A regional cluster's pools without node locations run in three of the region's zones (GKE
"Regional clusters": nodes are replicated across three zones by default)."""
NODE_POOL = "gcp:container/nodePool:NodePool"
CLUSTER = "gcp:container/cluster:Cluster"
INSTANCE = "gcp:compute/instance:Instance"
TEMPLATE = "gcp:compute/instanceTemplate:InstanceTemplate"
GROUP = "gcp:compute/instanceGroupManager:InstanceGroupManager"
FILESTORE = "gcp:filestore/instance:Instance"
BUCKET = "gcp:storage/bucket:Bucket"
SERVICE = "gcp:projects/service:Service"
QUEUED_RESOURCE = "pulumi-python:dynamic/tpu:QueuedResource"
_TPU_RESERVATION = re.compile(
    r"projects/(?P<owner>[^/]+)/locations/[^/]+/reservations/(?P<name>.+)"
)


@dataclass(frozen=True)
class Vms:
    """Compute Engine VMs of one machine type: a node pool, a managed instance group, an
    instance, or the pools the TPU provisioner may create."""

    source: str
    """Where it comes from, e.g. `tpuSlices[0] NodePool v5p-train-0`."""
    machine_type: str
    region: str
    zones: tuple[str, ...]
    """Empty where GKE picks the region's zones."""
    count: int
    """The most VMs it reaches."""
    capacity: Capacity
    reservation: str | None = None
    """As the plan names it: `NAME` or `projects/P/reservations/NAME`."""
    gpus: tuple[tuple[str, int], ...] = ()
    """(accelerator type, per VM)."""
    images: tuple[str, ...] = ()
    external_ips: int = 0
    """External addresses per VM."""
    secure_boot: bool | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)
    gke: bool = False

    @property
    def tpu(self) -> tpu_catalog.TpuHost | None:
        return tpu_catalog.TPU_HOSTS.get(self.machine_type)


@dataclass(frozen=True)
class TpuNodes:
    """Cloud TPU API nodes: a queued resource of TPU VMs, or a Slurm nodeset's TPU VMs."""

    source: str
    zone: str
    accelerator: str
    """`v5p-8`: the Cloud TPU accelerator type of one slice."""
    family: tpu_catalog.TpuFamily
    slices: int
    """The most slices at once."""
    cores_per_slice: int
    hosts_per_slice: int
    capacity: Literal["on-demand", "spot", "best-effort", "reserved"]
    reservation: str | None
    """`projects/P/locations/Z/reservations/R`, or None for any reservation."""
    runtime: str
    external_ips: bool
    secure_boot: bool | None
    metadata: Mapping[str, str] = field(default_factory=dict)

    @property
    def region(self) -> str:
        return region_of(self.zone)

    @property
    def reservation_parts(self) -> tuple[str, str] | None:
        """(owner project, name) of a named reservation."""
        if self.reservation is None:
            return None
        match = _TPU_RESERVATION.fullmatch(self.reservation)
        return (match["owner"], match["name"]) if match else None


@dataclass(frozen=True)
class Share:
    """A Filestore instance."""

    source: str
    region: str
    tier: str
    gib: int


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
    vms: tuple[Vms, ...]
    tpu_nodes: tuple[TpuNodes, ...]
    shares: tuple[Share, ...]
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

    @property
    def gke_families(self) -> dict[str, tpu_catalog.TpuFamily]:
        """TPU families of the GKE pools, by prefix (the provisioner's included)."""
        return {v.tpu.family.prefix: v.tpu.family for v in self.vms if v.gke and v.tpu}

    @property
    def flex_start_tpus(self) -> bool:
        return any(v.gke and v.tpu and v.capacity == "flex-start" for v in self.vms)


def _labelled(r: Registration, keys: Mapping[str, str]) -> str:
    key = keys.get(r.urn, "").removeprefix(f"{NAMESPACE}:")
    short = r.type.rsplit(":", 1)[-1]
    return f"{key} {short} {r.name}" if key else f"{short} {r.name}"


def _scheduling_capacity(scheduling: Mapping[str, Any]) -> Capacity:
    if scheduling.get("provisioningModel") == "FLEX_START":
        return "flex-start"
    if scheduling.get("provisioningModel") == "SPOT" or scheduling.get("preemptible"):
        return "spot"
    return "on-demand"


def _pool_capacity(node_config: Mapping[str, Any], pool: Mapping[str, Any]) -> Capacity:
    affinity = node_config.get("reservationAffinity") or {}
    if affinity.get("consumeReservationType") == "SPECIFIC_RESERVATION":
        return "reservation"
    queued = (pool.get("queuedProvisioning") or {}).get("enabled")
    if node_config.get("flexStart") or queued:
        return "flex-start"
    if node_config.get("spot") or node_config.get("preemptible"):
        return "spot"
    return "on-demand"


def _gpus(accelerators: Any) -> tuple[tuple[str, int], ...]:
    return tuple((a["type"], int(a.get("count", 1))) for a in accelerators or [])


def _external_ips(interfaces: Any) -> int:
    return sum(len(nic.get("accessConfigs") or []) for nic in interfaces or [])


def _secure_boot(inputs: Mapping[str, Any]) -> bool | None:
    shielded = inputs.get("shieldedInstanceConfig")
    return None if shielded is None else bool(shielded.get("enableSecureBoot"))


def _node_pools(graph: Graph, keys: Mapping[str, str]) -> Iterator[Vms]:
    clusters = {c.inputs.get("name"): unwrap(c.inputs) for c in graph.of_type(CLUSTER)}
    for r in graph.of_type(NODE_POOL):
        pool = unwrap(r.inputs)
        node = pool.get("nodeConfig") or {}
        cluster = clusters.get(pool.get("cluster"), {})
        location = pool.get("location") or cluster.get("location", "")
        zones = tuple(pool.get("nodeLocations") or cluster.get("nodeLocations") or ())
        if not zones and region_of(location) != location:
            zones = (location,)
        spread = len(zones) or GKE_DEFAULT_ZONES
        autoscaling = pool.get("autoscaling") or {}
        if "nodeCount" in pool:
            count = int(pool["nodeCount"]) * spread
        elif "totalMaxNodeCount" in autoscaling:
            count = int(autoscaling["totalMaxNodeCount"])
        elif "maxNodeCount" in autoscaling:
            count = int(autoscaling["maxNodeCount"]) * spread
        else:
            count = int(pool.get("initialNodeCount", 1)) * spread
        affinity = node.get("reservationAffinity") or {}
        values = affinity.get("values") or []
        yield Vms(
            source=_labelled(r, keys),
            machine_type=node.get("machineType", ""),
            region=region_of(location),
            zones=zones,
            count=count,
            capacity=_pool_capacity(node, pool),
            reservation=values[0] if values else None,
            gpus=_gpus(node.get("guestAccelerators")),
            secure_boot=_secure_boot(node),
            metadata=node.get("metadata") or {},
            gke=True,
        )


def _instances(graph: Graph, keys: Mapping[str, str]) -> Iterator[Vms]:
    for r in graph.of_type(INSTANCE):
        vm = unwrap(r.inputs)
        image = ((vm.get("bootDisk") or {}).get("initializeParams") or {}).get("image")
        yield Vms(
            source=_labelled(r, keys),
            machine_type=vm.get("machineType", ""),
            region=region_of(vm["zone"]),
            zones=(vm["zone"],),
            count=1,
            capacity=_scheduling_capacity(vm.get("scheduling") or {}),
            gpus=_gpus(vm.get("guestAccelerators")),
            images=(image,) if image else (),
            external_ips=_external_ips(vm.get("networkInterfaces")),
            secure_boot=_secure_boot(vm),
            metadata=vm.get("metadata") or {},
        )


def _groups(graph: Graph, keys: Mapping[str, str]) -> Iterator[Vms]:
    """Managed instance groups with the template they are made from: the template a group
    depends on (its versions name the template's self link, an output)."""
    templates = {t.urn: t for t in graph.of_type(TEMPLATE)}
    for r in graph.of_type(GROUP):
        group = unwrap(r.inputs)
        for urn in r.dependencies:
            if urn not in templates:
                continue
            template = unwrap(templates[urn].inputs)
            zone = group["zone"]
            yield Vms(
                source=_labelled(r, keys),
                machine_type=template.get("machineType", ""),
                region=region_of(zone),
                zones=(zone,),
                count=int(group.get("targetSize", 0)),
                capacity=_scheduling_capacity(template.get("scheduling") or {}),
                gpus=_gpus(template.get("guestAccelerators")),
                images=tuple(
                    d["sourceImage"] for d in template.get("disks") or [] if d.get("sourceImage")
                ),
                external_ips=_external_ips(template.get("networkInterfaces")),
                secure_boot=_secure_boot(template),
                metadata=template.get("metadata") or {},
            )


def _provisioned(config: StackConfig) -> Iterator[Vms]:
    """The pools the TPU provisioner may create, at its quota's most. It creates on-demand
    pools unless a pod selects Spot or a reservation, so they count as on-demand."""
    gke = config.gke
    for source, (shape, chips) in gke.provisioned().items():
        zone = gke.provisioner_zone
        yield Vms(
            source=f"tpuProvisioner.quota.{source.split('.', 1)[1]}",
            machine_type=shape.machine_type,
            region=region_of(zone),
            zones=(zone,),
            count=chips // shape.chips_per_host,
            capacity="on-demand",
            gke=True,
        )


def _queued_resources(graph: Graph, keys: Mapping[str, str]) -> Iterator[TpuNodes]:
    for r in graph.of_type(QUEUED_RESOURCE):
        qr = unwrap(r.inputs)
        shape = tpu_catalog.resolve(qr["acceleratorType"])
        yield TpuNodes(
            source=_labelled(r, keys),
            zone=qr["zone"],
            accelerator=shape.accelerator,
            family=shape.family,
            slices=int(qr.get("nodeCount", 1)),
            cores_per_slice=shape.family.size_of(shape.chips),
            hosts_per_slice=shape.hosts,
            capacity=qr.get("capacity", "on-demand"),
            reservation=qr.get("reservationName") or None,
            runtime=qr["runtimeVersion"],
            external_ips=bool(qr.get("enableExternalIps")),
            secure_boot=bool(qr.get("secureBoot")),
            metadata=qr.get("metadata") or {},
        )


def _nodesets(config: StackConfig) -> Iterator[TpuNodes]:
    """Slurm's TPU nodesets, which its controller creates per job: the plan holds them only as
    the config files it uploads, so they are read from the resolved config."""
    if config.slurm is None:
        return
    for i, n in enumerate(config.slurm.tpu_nodesets):
        accelerator = n.node_type or f"{n.family}-{n.cores}"
        shape = tpu_catalog.resolve(accelerator)
        slices = -(-(n.node_count_static + n.node_count_dynamic_max) // n.workers_per_slice)
        capacity = "reserved" if n.reserved else "spot" if n.preemptible else "on-demand"
        yield TpuNodes(
            source=f"slurm.tpuNodesets[{i}] {n.name}",
            zone=config.context.zone_of(n.zone),
            accelerator=accelerator,
            family=shape.family,
            slices=slices,
            cores_per_slice=n.cores,
            hosts_per_slice=n.workers_per_slice,
            capacity=capacity,
            reservation=None,
            runtime=n.runtime,
            external_ips=n.enable_public_ips,
            # The controller creates them (tpu.py) without a shielded instance config.
            secure_boot=None,
        )


def _cpu_nodesets(config: StackConfig, graph: Graph, keys: Mapping[str, str]) -> Iterator[Vms]:
    """Slurm's CPU nodesets at their most (static and dynamic nodes), which its controller
    creates from the nodeset's instance template: the template gives machine, capacity, GPUs
    and image; the config gives counts and zones."""
    if config.slurm is None:
        return
    # components/slurm/cluster.py names each nodeset's template `slurm-template-<nodeset>`.
    templates = {
        t.name: unwrap(t.inputs)
        for t in graph.of_type(TEMPLATE)
        if keys.get(t.urn) == f"{NAMESPACE}:slurm"
    }
    for i, n in enumerate(config.slurm.cpu_nodesets):
        key = f"slurm.cpuNodesets[{i}]"
        template = templates.get(f"slurm-template-{n.name}", {})
        zones = tuple(n.zones) or (config.context.zone,)
        yield Vms(
            source=f"{key} {n.name}",
            machine_type=n.machine_type,
            region=config.context.region,
            zones=zones,
            count=n.node_count_static + n.node_count_dynamic_max,
            capacity=(
                "reservation"
                if n.reservation
                else "flex-start"
                if n.flex
                else "spot"
                if n.spot
                else "on-demand"
            ),
            reservation=n.reservation,
            gpus=((g.type, g.count),) if (g := n.gpus()) is not None else (),
            images=tuple(
                d["sourceImage"] for d in template.get("disks") or [] if d.get("sourceImage")
            ),
            external_ips=int(n.enable_public_ips),
            secure_boot=_secure_boot(template),
            metadata=template.get("metadata") or {},
        )


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
        if not r.type.startswith("kubernetes:"):
            yield from walk(unwrap(r.inputs))


def _locations(graph: Graph) -> Iterator[str]:
    for r in graph.resources_to_apply:
        if r.type.startswith("kubernetes:"):
            continue
        inputs = unwrap(r.inputs)
        for key in ("region", "zone", "location"):
            if isinstance(inputs.get(key), str):
                yield inputs[key].lower()
        yield from (z for z in inputs.get("nodeLocations") or [] if isinstance(z, str))


def derive(config: StackConfig, graph: Graph) -> Needs:
    """What the plan needs of the project; `graph` is the plan of `config`."""
    keys = graph.config_keys()
    vms = (
        *_node_pools(graph, keys),
        *_provisioned(config),
        *_groups(graph, keys),
        *_cpu_nodesets(config, graph, keys),
        *_instances(graph, keys),
    )
    tpu_nodes = (*_queued_resources(graph, keys), *_nodesets(config))
    shares = []
    for r in graph.of_type(FILESTORE):
        inputs = unwrap(r.inputs)
        file_shares = inputs.get("fileShares") or {}
        if isinstance(file_shares, list):
            gib = sum(int(s.get("capacityGb", 0)) for s in file_shares)
        else:
            gib = int(file_shares.get("capacityGb", 0))
        shares.append(Share(_labelled(r, keys), region_of(inputs["location"]), inputs["tier"], gib))
    clusters = tuple(
        Cluster(
            source=_labelled(r, keys),
            location=r.inputs["location"],
            channel=(r.inputs.get("releaseChannel") or {}).get("channel", "UNSPECIFIED"),
            floor=r.inputs.get("minMasterVersion"),
        )
        for r in graph.of_type(CLUSTER)
    )
    image_types = {
        (unwrap(r.inputs).get("nodeConfig") or {}).get("imageType")
        for r in graph.of_type(NODE_POOL)
    }
    types: dict[str, int] = {}
    for r in graph.resources_to_apply:
        types[r.type] = types.get(r.type, 0) + 1
    tpu_zones = {n.zone for n in tpu_nodes}
    return Needs(
        project=config.project,
        services=tuple(r.inputs["service"] for r in graph.of_type(SERVICE)),
        vms=vms,
        tpu_nodes=tpu_nodes,
        shares=tuple(shares),
        buckets=tuple((_labelled(r, keys), r.inputs["name"]) for r in graph.of_type(BUCKET)),
        clusters=clusters,
        image_types=tuple(sorted(t for t in image_types if t)),
        members=tuple(sorted(set(_members(graph, keys)))),
        types=tuple(sorted(types.items())),
        service_accounts=tuple(sorted(set(_service_accounts(graph)))),
        locations=tuple(sorted(set(_locations(graph)) | tpu_zones)),
    )
