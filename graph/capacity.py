"""What each resource of a recorded plan graph provides: the machines it brings up (nodes and VMs
with their machine type, TPU chips, GPUs, boot disk, capacity type and place), at rest and at
their most, and the storage it holds; and what others create later from what the program
registers: the TPU provisioner's node pools, up to its quota, and the VMs Slurm's controller
creates from the nodeset files it reads.

The plan's numbers, the cost and preflight read `read(graph)` and nothing else of a graph's
machines, so they count the same nodes, chips and GPUs. A new resource type that brings up
machines or holds storage is one entry of `READERS`. The values it reads into are
`graph/inventory.py`'s, re-exported here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from typing import Any

import yaml
from pydantic import ValidationError

from catalog import tpu as tpu_catalog
from catalog.gpu import fixed_gpus
from components.gke import TpuProvisionerConfig
from components.locations import region_of
from graph import types
from graph.inventory import (
    Capacity,
    Inventory,
    Item,
    Machines,
    Slices,
    Storage,
    System,
    Unread,
)
from graph.model import Graph, Registration, plain

__all__ = [
    "READERS",
    "Capacity",
    "Inventory",
    "Item",
    "Machines",
    "Slices",
    "Storage",
    "System",
    "Unread",
    "read",
]
from stacks.messages import NAMESPACE

REGIONAL_ZONES = 3
"""GKE replicates a regional cluster's node pools across three of its region's zones unless
nodeLocations says otherwise (GKE "Regional clusters")."""
GKE_DEFAULT_DISK = ("pd-balanced", 100)
"""A node pool's boot disk when nodeConfig names none (GKE: 100 GB pd-balanced)."""
GCE_DEFAULT_DISK = ("pd-standard", 10)
"""A VM's boot disk when its template or instance names none (Compute Engine's default)."""


class _Reading:
    """One graph being read: its config keys and the lookups several readers share."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.keys = {u: k.removeprefix(f"{NAMESPACE}:") for u, k in graph.config_keys().items()}
        self.templates_by_urn = {t.urn: t for t in graph.of_type(types.INSTANCE_TEMPLATE)}
        self.templates_by_name = {
            str(plain(t.inputs).get("name")): t for t in self.templates_by_urn.values()
        }

    def label(self, r: Registration) -> str:
        return f"{types.short(r.type)} {r.name}"

    def config(self, key: str) -> Any:
        """A config value the program ran with (the engine hands objects over as JSON); None
        when absent or unreadable."""
        raw = self.graph.config.get(key)
        if raw is None:
            return None
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return raw


def _gpus(accelerators: Any, machine_type: str) -> tuple[tuple[str, int], ...]:
    """GPUs per VM: those attached, or else the ones the machine type is built with."""
    attached = tuple(
        (str(a["type"]), int(a.get("count", 1)))
        for a in accelerators or []
        if int(a.get("count", 1))
    )
    if attached:
        return attached
    built_in = fixed_gpus(machine_type)
    return ((built_in.gpu_type, built_in.gpu_count),) if built_in else ()


def _external_ips(interfaces: Any) -> int:
    return sum(len(nic.get("accessConfigs") or []) for nic in interfaces or [])


def _secure_boot(inputs: Mapping[str, Any]) -> bool | None:
    shielded = inputs.get("shieldedInstanceConfig")
    return None if shielded is None else bool(shielded.get("enableSecureBoot"))


def _provisioning(capacity: Capacity, reservation: str | None) -> str:
    return f"reservation {reservation}" if capacity == "reservation" and reservation else capacity


def _pool_capacity(pool: Mapping[str, Any]) -> tuple[Capacity, str | None]:
    node = pool.get("nodeConfig") or {}
    affinity = node.get("reservationAffinity") or {}
    if affinity.get("consumeReservationType") == "SPECIFIC_RESERVATION":
        return "reservation", ",".join(affinity.get("values") or []) or None
    if node.get("flexStart") or (pool.get("queuedProvisioning") or {}).get("enabled"):
        return "flex-start", None
    if node.get("spot") or node.get("preemptible"):
        return "spot", None
    return "on-demand", None


def _pool_size(pool: Mapping[str, Any], zones: int) -> tuple[int, int, bool, int | None]:
    """(idle, full, autoscaled, per-zone maximum) of a node pool: a fixed count per zone, or
    autoscaling bounds per zone or in total; a queued-provisioning pool rests at zero."""
    scaling = pool.get("autoscaling") or {}
    if "nodeCount" in pool:
        low = high = int(pool["nodeCount"]) * zones
        autoscaled, per_zone = False, None
    elif "totalMaxNodeCount" in scaling:
        low, high = int(scaling.get("totalMinNodeCount", 0)), int(scaling["totalMaxNodeCount"])
        autoscaled, per_zone = True, None
    elif "maxNodeCount" in scaling:
        low = int(scaling.get("minNodeCount", 0)) * zones
        high = int(scaling["maxNodeCount"]) * zones
        autoscaled, per_zone = True, int(scaling["maxNodeCount"])
    else:
        low = high = int(pool.get("initialNodeCount", 0)) * zones
        autoscaled, per_zone = False, None
    if (pool.get("queuedProvisioning") or {}).get("enabled"):
        low = 0
    return low, high, autoscaled, per_zone


def _node_pools(reading: _Reading, r: Registration) -> Iterator[Machines]:
    pool = plain(r.inputs)
    node = pool.get("nodeConfig") or {}
    clusters = {
        plain(c.inputs).get("name"): plain(c.inputs) for c in reading.graph.of_type(types.CLUSTER)
    }
    cluster = clusters.get(pool.get("cluster"), {})
    location = str(pool.get("location") or cluster.get("location", ""))
    zones = tuple(pool.get("nodeLocations") or cluster.get("nodeLocations") or ())
    if not zones and region_of(location) != location:
        zones = (location,)
    idle, full, autoscaled, per_zone = _pool_size(pool, len(zones) or REGIONAL_ZONES)
    capacity, reservation = _pool_capacity(pool)
    machine_type = str(node.get("machineType", ""))
    yield Machines(
        key=r.urn,
        label=reading.label(r),
        name=r.name,
        config_key=reading.keys.get(r.urn, ""),
        system=System.GKE_POOLS,
        machine_type=machine_type,
        region=region_of(location),
        zones=zones,
        idle=idle,
        full=full,
        capacity=capacity,
        provisioning=_provisioning(capacity, reservation),
        autoscaled=autoscaled,
        per_zone=per_zone if per_zone is not None and len(zones) != 1 else None,
        reservation=reservation,
        tpu=tpu_catalog.TPU_HOSTS.get(machine_type),
        gpus=_gpus(node.get("guestAccelerators"), machine_type),
        boot_disk=(
            str(node.get("diskType", GKE_DEFAULT_DISK[0])),
            int(node.get("diskSizeGb", GKE_DEFAULT_DISK[1])),
        ),
        secure_boot=_secure_boot(node),
        metadata=node.get("metadata") or {},
        gke=True,
    )


def _instances(reading: _Reading, r: Registration) -> Iterator[Machines]:
    vm = plain(r.inputs)
    params = (vm.get("bootDisk") or {}).get("initializeParams") or {}
    capacity = _scheduling_capacity(vm.get("scheduling") or {})
    machine_type = str(vm.get("machineType", ""))
    yield Machines(
        key=r.urn,
        label=reading.label(r),
        name=str(vm.get("name", r.name)),
        config_key=reading.keys.get(r.urn, ""),
        system=System.VMS,
        machine_type=machine_type,
        region=region_of(vm["zone"]),
        zones=(vm["zone"],),
        idle=1,
        full=1,
        capacity=capacity,
        provisioning=capacity,
        gpus=_gpus(vm.get("guestAccelerators"), machine_type),
        boot_disk=(
            str(params.get("type", GCE_DEFAULT_DISK[0])),
            int(params.get("size", GCE_DEFAULT_DISK[1])),
        ),
        images=(params["image"],) if params.get("image") else (),
        external_ips=_external_ips(vm.get("networkInterfaces")),
        secure_boot=_secure_boot(vm),
        metadata=vm.get("metadata") or {},
    )


def _scheduling_capacity(scheduling: Mapping[str, Any]) -> Capacity:
    model = scheduling.get("provisioningModel")
    if model == "FLEX_START":
        return "flex-start"
    if model == "SPOT" or scheduling.get("preemptible"):
        return "spot"
    return "on-demand"


def _template_capacity(template: Mapping[str, Any]) -> tuple[Capacity, str | None]:
    """A template's capacity: its provisioning model, or a reservation it consumes (a named
    one, or any matching one)."""
    capacity = _scheduling_capacity(template.get("scheduling") or {})
    affinity = template.get("reservationAffinity") or {}
    if capacity == "on-demand" and affinity.get("type") in (
        "SPECIFIC_RESERVATION",
        "ANY_RESERVATION",
    ):
        values = (affinity.get("specificReservation") or {}).get("values") or []
        return "reservation", ",".join(values) or None
    return capacity, None


def _template_vms(template: Mapping[str, Any], **fields: Any) -> Machines:
    """VMs made from an instance template: its machine, capacity, GPUs, boot disk, images,
    addresses, Secure Boot and metadata; `fields` give who they are and how many."""
    machine_type = str(template.get("machineType", ""))
    capacity, reservation = _template_capacity(template)
    boot = next((d for d in template.get("disks") or [] if d.get("boot")), {})
    return Machines(
        machine_type=machine_type,
        capacity=capacity,
        provisioning=_provisioning(capacity, reservation),
        reservation=reservation,
        gpus=_gpus(template.get("guestAccelerators"), machine_type),
        boot_disk=(
            str(boot.get("diskType", GCE_DEFAULT_DISK[0])),
            int(boot.get("diskSizeGb", GCE_DEFAULT_DISK[1])),
        ),
        extra_disks=tuple(
            (str(d["diskType"]), int(d["diskSizeGb"]))
            for d in template.get("disks") or []
            if not d.get("boot") and d.get("type") == "PERSISTENT" and d.get("diskSizeGb")
        ),
        images=tuple(d["sourceImage"] for d in template.get("disks") or [] if d.get("sourceImage")),
        external_ips=_external_ips(template.get("networkInterfaces")),
        secure_boot=_secure_boot(template),
        metadata=template.get("metadata") or {},
        **fields,
    )


def _groups(reading: _Reading, r: Registration) -> Iterator[Machines | Unread]:
    """A managed instance group's VMs: the template its versions name (a dependency, as they
    name its self link, an output), `targetSize` of them. A group with no target size
    (flex-start) rests at none: its FlexCapacity's resize requests bring it to its size when
    capacity is found, for their run duration."""
    group = plain(r.inputs)
    linked = set(r.property_dependencies.get("versions", ())) or set(r.dependencies)
    templates = [t for u, t in reading.templates_by_urn.items() if u in linked]
    if len(templates) != 1:
        yield Unread(r.urn, reading.label(r), f"it names {len(templates)} instance templates")
        return
    sizes = [
        int(plain(q.inputs).get("size", 0))
        for q in reading.graph.of_type(types.FLEX_CAPACITY)
        if r.urn in q.dependencies or q.parent == r.parent
    ]
    full = int(group.get("targetSize", 0)) + sum(sizes)
    idle = 0 if sizes and "targetSize" not in group else full
    zone = str(group["zone"])
    policy = group.get("updatePolicy") or {}
    yield _template_vms(
        plain(templates[0].inputs),
        rollout=str(policy.get("type", "OPPORTUNISTIC")).lower(),
        key=r.urn,
        label=reading.label(r),
        name=str(group.get("name", r.name)),
        config_key=reading.keys.get(r.urn, ""),
        system=System.GPU_CLUSTERS,
        region=region_of(zone),
        zones=(zone,),
        idle=idle,
        full=full,
    )


_TPU_API_CAPACITY: dict[str, Capacity] = {
    "on-demand": "on-demand",
    "reserved": "reservation",
    "spot": "spot",
    "best-effort": "spot",
    "flex-start": "flex-start",
}
"""A queued resource's `capacity` -> how its VMs get capacity."""


def _slices(shape: tpu_catalog.TpuShape, count: int, runtime: str = "") -> Slices:
    return Slices(
        accelerator=shape.accelerator,
        count=count,
        hosts=shape.hosts,
        cores=shape.family.size_of(shape.chips),
        runtime=runtime,
    )


def _host(shape: tpu_catalog.TpuShape) -> tpu_catalog.TpuHost:
    return tpu_catalog.TpuHost(shape.family, shape.chips_per_host)


def _queued_resources(reading: _Reading, r: Registration) -> Iterator[Machines | Unread]:
    qr = plain(r.inputs)
    try:
        shape = tpu_catalog.resolve(str(qr.get("acceleratorType", "")))
    except tpu_catalog.CatalogError as error:
        yield Unread(r.urn, reading.label(r), str(error))
        return
    count = int(qr.get("nodeCount", 1))
    hosts = count * shape.hosts
    written = str(qr.get("capacity", "on-demand"))
    zone = str(qr["zone"])
    yield Machines(
        key=r.urn,
        label=reading.label(r),
        name=str(qr.get("queuedResourceId", r.name)),
        config_key=reading.keys.get(r.urn, ""),
        system=System.TPU_VMS,
        machine_type=shape.machine_type,
        region=region_of(zone),
        zones=(zone,),
        idle=hosts,
        full=hosts,
        capacity=_TPU_API_CAPACITY.get(written, "on-demand"),
        provisioning=written,
        reservation=qr.get("reservationName") or None,
        tpu=_host(shape),
        slices=_slices(shape, count, str(qr.get("runtimeVersion", ""))),
        tpu_api=True,
        external_ips=1 if qr.get("enableExternalIps") else 0,
        secure_boot=bool(qr.get("secureBoot")),
        metadata=qr.get("metadata") or {},
    )


def _nodeset_document(r: Registration) -> dict[str, Any] | None:
    """A Slurm-GCP nodeset file (`nodeset_configs/*.yaml`, `nodeset_tpu_configs/*.yaml`), as
    the controller reads it; None for any other object."""
    try:
        content = yaml.safe_load(str(plain(r.inputs).get("content", "")))
    except yaml.YAMLError:
        return None
    return content if isinstance(content, dict) and "nodeset_name" in content else None


def _slurm_index(reading: _Reading, list_key: str, name: str) -> str:
    """The config key of a nodeset the program wrote: `slurm.tpuNodesets[0]`; `slurm.<list>`
    alone for one the config does not list (the debug partition's)."""
    slurm = reading.config(f"{NAMESPACE}:slurm")
    entries = slurm.get(list_key) if isinstance(slurm, dict) else None
    for i, entry in enumerate(entries if isinstance(entries, list) else []):
        if isinstance(entry, dict) and entry.get("name") == name:
            return f"slurm.{list_key}[{i}]"
    return "slurm.debugPartition" if list_key == "cpuNodesets" else f"slurm.{list_key}"


def _tpu_nodeset_shape(document: Mapping[str, Any]) -> tpu_catalog.TpuShape | None:
    """The slice shape of a TPU nodeset: its node_type, or its accelerator_config (tpu.py
    reads accelerator_config first, node_type when its fields are empty)."""
    accelerator = document.get("accelerator_config") or {}
    version, topology = str(accelerator.get("version", "")), str(accelerator.get("topology", ""))
    try:
        if version and topology:
            family = next(f for f in tpu_catalog.FAMILIES if f.prefix == version.lower())
            return tpu_catalog.resolve(family.accelerator_of(topology), topology)
        return tpu_catalog.resolve(str(document.get("node_type", "")))
    except (StopIteration, ValueError):
        return None


def _slurm_nodesets(reading: _Reading, r: Registration) -> Iterator[Machines | Unread]:
    """The VMs Slurm's controller creates from one nodeset file: `node_count_static` kept up,
    up to `node_count_dynamic_max` more on demand."""
    document = _nodeset_document(r)
    if document is None:
        return
    idle = int(document.get("node_count_static") or 0)
    full = idle + int(document.get("node_count_dynamic_max") or 0)
    if document.get("instance_template"):
        yield _cpu_nodeset(reading, r, document, idle, full)
    else:
        yield _tpu_nodeset(reading, r, document, idle, full)


def _cpu_nodeset(
    reading: _Reading, r: Registration, document: Mapping[str, Any], idle: int, full: int
) -> Machines | Unread:
    """A CPU nodeset's VMs are its instance template's, which the file names by self link."""
    name = str(document["nodeset_name"])
    template_name = str(document["instance_template"]).rsplit("/", 1)[-1]
    template = reading.templates_by_name.get(template_name)
    if template is None:
        return Unread(r.urn, f"Slurm nodeset {name}", f"no instance template {template_name}")
    zones = tuple(document.get("zone_policy_allow") or ())
    region = region_of(zones[0]) if zones else str(reading.graph.config.get("gcp:region", ""))
    config_key = _slurm_index(reading, "cpuNodesets", name)
    machines = _template_vms(
        plain(template.inputs),
        key=config_key,
        label=f"Slurm nodeset {name}",
        name=name,
        config_key=config_key,
        system=System.SLURM,
        region=region,
        zones=zones,
        idle=idle,
        full=full,
        autoscaled=True,
        later=True,
    )
    # Slurm-GCP consumes a nodeset's reservation at resume (resume.py), not through the
    # template.
    reservation = str(document.get("reservation_name") or "")
    if not reservation:
        return machines
    return replace(
        machines,
        capacity="reservation",
        provisioning=_provisioning("reservation", reservation),
        reservation=reservation,
    )


def _tpu_nodeset(
    reading: _Reading, r: Registration, document: Mapping[str, Any], idle: int, full: int
) -> Machines | Unread:
    """A TPU nodeset's VMs are TPU VMs of its accelerator type, one Slurm node per host
    (tpu.py `vmcount`), created without a shielded instance config."""
    name = str(document["nodeset_name"])
    shape = _tpu_nodeset_shape(document)
    if shape is None:
        return Unread(r.urn, f"Slurm nodeset {name}", "its accelerator is not in the catalog")
    zone = str(document.get("zone", ""))
    flags = [f for f in ("preemptible", "reserved") if document.get(f)]
    capacity: Capacity = "reservation" if "reserved" in flags else "spot" if flags else "on-demand"
    config_key = _slurm_index(reading, "tpuNodesets", name)
    runtime = f"tpu-vm-tf-{document.get('tf_version', '')}"
    return Machines(
        key=config_key,
        label=f"Slurm nodeset {name}",
        name=name,
        config_key=config_key,
        system=System.SLURM,
        machine_type=shape.machine_type,
        region=region_of(zone),
        zones=(zone,),
        idle=idle,
        full=full,
        capacity=capacity,
        provisioning=", ".join(flags) or "on-demand",
        autoscaled=True,
        tpu=_host(shape),
        slices=_slices(shape, math.ceil(full / shape.hosts), runtime),
        tpu_api=True,
        external_ips=1 if document.get("enable_public_ip") else 0,
        secure_boot=None,
        later=True,
    )


def _provisioner(reading: _Reading) -> Iterator[Machines]:
    """The node pools the TPU provisioner may create: per pending JobSet, up to its quota of
    slices of each shape, on demand unless a pod selects Spot or a reservation (gke.go), in its
    zone. Read from the config the program ran with, where the graph registers the
    provisioner."""
    if not reading.graph.of_type(types.TPU_PROVISIONER):
        return
    try:
        config = TpuProvisionerConfig.model_validate(
            reading.config(f"{NAMESPACE}:tpuProvisioner") or {}
        )
        shapes = config.shapes()
    except (ValidationError, tpu_catalog.CatalogError):
        return
    zone = config.zone or str(reading.graph.config.get("gcp:zone", ""))
    for accelerator, shape in sorted(shapes.items()):
        count = config.quota[accelerator]
        key = f"tpuProvisioner.quota.{accelerator}"
        yield Machines(
            key=key,
            label=f"TPU provisioner {accelerator} pools",
            name=accelerator,
            config_key=key,
            system=System.PROVISIONER,
            machine_type=shape.machine_type,
            region=region_of(zone),
            zones=(zone,),
            idle=0,
            full=count * shape.hosts,
            capacity="on-demand",
            provisioning="on demand, per pending JobSet",
            autoscaled=True,
            tpu=_host(shape),
            slices=_slices(shape, count),
            gke=True,
            later=True,
        )


def _held(
    reading: _Reading, r: Registration, kind: str, tier: str, where: str, gib: int
) -> Storage:
    """What one storage resource holds, wherever it is read from."""
    return Storage(
        key=r.urn,
        label=reading.label(r),
        config_key=reading.keys.get(r.urn, ""),
        kind=kind,
        tier=tier,
        region=region_of(where),
        gib=gib,
    )


def _disks(reading: _Reading, r: Registration) -> Iterator[Storage]:
    disk = plain(r.inputs)
    tier = str(disk.get("type", GCE_DEFAULT_DISK[0]))
    yield _held(reading, r, "disk", tier, str(disk["zone"]), int(disk.get("size", 0)))


def _filestore(reading: _Reading, r: Registration) -> Iterator[Storage]:
    share = plain(r.inputs)
    file_shares = share.get("fileShares") or {}
    listed = file_shares if isinstance(file_shares, list) else [file_shares]
    gib = sum(int(s.get("capacityGb", 0)) for s in listed)
    yield _held(reading, r, "filestore", str(share["tier"]), str(share["location"]), gib)


def _lustre(reading: _Reading, r: Registration) -> Iterator[Storage]:
    """Billed by provisioned capacity at the instance's throughput tier."""
    instance = plain(r.inputs)
    tier = str(instance["perUnitStorageThroughput"])
    gib = int(instance["capacityGib"])
    yield _held(reading, r, "lustre", tier, str(instance["location"]), gib)


Reader = Callable[[_Reading, Registration], Iterator[Item | Unread]]
READERS: dict[str, Reader] = {
    types.NODE_POOL: _node_pools,
    types.INSTANCE: _instances,
    types.INSTANCE_GROUP_MANAGER: _groups,
    types.QUEUED_RESOURCE: _queued_resources,
    types.BUCKET_OBJECT: _slurm_nodesets,
    types.DISK: _disks,
    types.FILESTORE: _filestore,
    types.LUSTRE: _lustre,
}
"""Resource type -> what one such resource provides. Types not here provide no machines and
hold no storage (an instance template's VMs are its group's; a bucket bills by bytes)."""


def read(graph: Graph) -> Inventory:
    """What `graph` brings up and holds, and what others create later from it."""
    reading = _Reading(graph)
    found: list[Item | Unread] = []
    for r in graph.resources_to_apply:
        reader = READERS.get(r.type)
        if reader is not None:
            found += reader(reading, r)
    found += _provisioner(reading)
    return Inventory(
        items=tuple(i for i in found if not isinstance(i, Unread)),
        unread=tuple(i for i in found if isinstance(i, Unread)),
    )
