"""What a stack costs at list prices: one line per resource that bills (a node pool, a VM, a
managed instance group, a queued resource, a disk, a Filestore instance, a NAT gateway, the
GKE cluster) and per capacity the program leaves to others to create (Slurm's nodesets, the
TPU provisioner's pools), each at idle and at full scale, per hour.

Idle: autoscaled pools at their minimum, flex-start pools and dynamic nodesets at zero, the
provisioner's pools absent; reservations and fixed pools bill as they stand. Full scale: every
maximum reached. Pure: a validated config and the graph the program registered in, a report
out; nothing here reads the network.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from components import tpu_catalog
from components.gke.config import PROVISIONER_SOURCE
from components.gke.quota import Flavor, allocate
from components.locations import region_of
from components.slurm.config import CORES_PER_WORKER, V2_V3_CORES_PER_CHIP
from plan.diff import integral
from plan.engine import Graph, Registration
from prices import quotes
from prices.catalog import Catalog, PriceRow
from prices.coverage import FLEX_START, ON_DEMAND, RESERVATION, SPOT, tpu_price_item
from prices.quotes import Quote
from stacks.config import StackConfig
from stacks.messages import NAMESPACE

HOURS_PER_MONTH = 720
"""A 30-day month, the month the plan reports in."""
NAT_VM_CAP = 32
"""Cloud NAT bills a gateway for at most 32 VMs an hour (Cloud NAT pricing; Cyclenerd's
pricing.pl: "The per-hour rate is capped at 32 VM instances")."""
REGIONAL_CLUSTER_ZONES = 3
"""GKE puts a regional cluster's node pools in three of its region's zones unless told
otherwise ("Regional clusters"), and the CPU pool's bounds count per zone."""

LEFT_OUT: tuple[str, ...] = (
    "sustained-use discounts (vCPU and memory of N1, up to 30%, and N2, N2D, C2, up to 20%, "
    "used more than a quarter of a month; none on E2, A2, A3, G2 or TPUs)",
    "committed-use discounts and negotiated prices; reservations are shown at the on-demand "
    "list price",
    "Spot price changes (Spot prices can change up to once a day), taxes, non-USD currencies",
    "egress and inter-zone traffic, and Cloud NAT data processing ($0.045 per GiB)",
    "bytes stored: buckets, snapshots, images (Filestore is billed by provisioned capacity, shown)",
    "Hyperdisk Balanced IOPS above 3,000 and throughput above 140 MiB/s per volume",
    "the GKE free tier's $74.40 monthly credit per billing account (one zonal cluster)",
    "boot disks of TPU VMs that Cloud TPU creates (queued resources, Slurm nodesets) and of "
    "the TPU provisioner's pools",
)
"""What the figures do not hold, because it cannot be known offline."""

SYSTEMS: dict[str, str] = {
    "network": "stack",
    "project": "stack",
    "buckets": "stack",
    "cluster": "gke",
    "tpuSlices": "gke",
    "gpuPools": "gke",
    "workloadIdentities": "gke",
    "kueue": "gke",
    "teams": "gke",
    "tpuProvisioner": "tpu-provisioner",
    "tpuVms": "tpu-vms",
    "gpuClusters": "gpu-clusters",
    "slurm": "slurm",
}
"""Top-level config key -> the system it belongs to (README "Systems")."""

BILLED_BY_USE = {
    "gcp:storage/bucket:Bucket": "bytes stored (left out)",
    "pulumi-python:dynamic/slurm:RuntimeScripts": "objects in the Slurm bucket (bytes, left out)",
}
FREE_TYPES = frozenset(
    {
        "gcp:compute/firewall:Firewall",
        "gcp:compute/network:Network",
        "gcp:compute/router:Router",
        "gcp:compute/subnetwork:Subnetwork",
        "gcp:compute/resourcePolicy:ResourcePolicy",
        "gcp:compute/instanceTemplate:InstanceTemplate",
        "gcp:projects/service:Service",
        "gcp:projects/iAMMember:IAMMember",
        "gcp:projects/iAMCustomRole:IAMCustomRole",
        "gcp:serviceaccount/account:Account",
        "gcp:serviceaccount/iAMMember:IAMMember",
        "gcp:storage/bucketIAMMember:BucketIAMMember",
        "gcp:storage/bucketObject:BucketObject",
        "pulumi-python:dynamic/slurm:TpuCleanup",
        "pulumi-python:dynamic/slurm:ComputeCleanup",
        "gcp:compute/resizeRequest:ResizeRequest",
        "pulumi-python:dynamic/compute:FlexCapacity",
        "pulumi-python:dynamic/compute:StartupWait",
        "pulumi-python:dynamic/tpu:StartupWait",
        "gcp:monitoring/dashboard:Dashboard",
    }
)
"""Resources with no charge of their own (a template bills through its group's VMs, and so
does a resize request; a bucket object through its bucket's bytes; Slurm's cleanup deletes
TPU and Compute Engine VMs on destroy; Cloud Monitoring dashboards are free)."""


@dataclass(frozen=True)
class Amount:
    """Dollars per hour, with what could not be priced (kept apart, never counted as zero)."""

    usd: float = 0.0
    unknown: tuple[str, ...] = ()

    def __add__(self, other: Amount) -> Amount:
        return Amount(self.usd + other.usd, tuple(dict.fromkeys((*self.unknown, *other.unknown))))

    def times(self, factor: float) -> Amount:
        return Amount(self.usd * factor, self.unknown)

    @property
    def known(self) -> bool:
        return not self.unknown


def total(amounts: Iterable[Amount]) -> Amount:
    found = Amount()
    for amount in amounts:
        found = found + amount
    return found


@dataclass(frozen=True)
class Part:
    """One priced component of a line: `idle` and `full` units (chips, VMs, GB) of a quote."""

    quote: Quote
    idle: float
    full: float
    label: str = ""
    """Whose part this is, in the `unknown` of an amount: `NodePool iron-0: tpu7x chip`."""

    def amount(self, units: float) -> Amount:
        if units == 0:
            return Amount()
        if self.quote.usd_per_hour is None:
            return Amount(0.0, (f"{self.label}: {self.quote.what}",))
        return Amount(units * self.quote.usd_per_hour)


@dataclass(frozen=True)
class Line:
    """What one resource (or capacity others create) costs per hour, idle and at full scale."""

    key: str
    """The resource's URN, or `<config key>` for capacity with no resource of its own."""
    label: str
    """`NodePool v5p-train-0`."""
    config_key: str
    """`tpuSlices[0]`; empty where the resource has none."""
    system: str
    capacity: str
    """on-demand, spot, reservation, flex-start, or empty where it does not apply."""
    units: str
    """What it is, in numbers: `64 x ct5p-hightpu-4t, 256 v5p chips`."""
    parts: tuple[Part, ...]
    quota_source: str | None = None
    """The slice entry, GPU pool or provisioner shape whose chips teams' quotas split."""
    vms: tuple[int, int] = (0, 0)
    """VMs at idle and full scale, for the NAT gateway that serves them."""
    nat: str | None = None
    """Config key of the Cloud NAT the VMs reach the internet through."""

    @property
    def idle(self) -> Amount:
        return total(p.amount(p.idle) for p in self.parts)

    @property
    def full(self) -> Amount:
        return total(p.amount(p.full) for p in self.parts)

    @property
    def rows(self) -> tuple[PriceRow, ...]:
        return tuple(row for part in self.parts for row in part.quote.rows)


@dataclass(frozen=True)
class Share:
    idle: Amount
    full: Amount


@dataclass(frozen=True)
class CostReport:
    lines: tuple[Line, ...]
    teams: dict[str, Share]
    """Team -> its share of the lines its quota covers, by chips or GPUs; plus `(cohort)` for
    quota no team holds and `(outside team quotas)` for everything else."""
    unpriced: tuple[str, ...] = ()
    """Resource types that bill and that the cost model has no rule for."""
    left_out: tuple[str, ...] = LEFT_OUT

    @property
    def idle(self) -> Amount:
        return total(line.idle for line in self.lines)

    @property
    def full(self) -> Amount:
        return total(line.full for line in self.lines)

    def by_system(self) -> dict[str, Share]:
        systems: dict[str, Share] = {}
        for line in self.lines:
            was = systems.get(line.system, Share(Amount(), Amount()))
            systems[line.system] = Share(was.idle + line.idle, was.full + line.full)
        return systems

    @property
    def rows(self) -> tuple[PriceRow, ...]:
        """Every catalog row the figures rest on, once each."""
        return tuple(dict.fromkeys(row for line in self.lines for row in line.rows))


COHORT = "(cohort)"
OUTSIDE = "(outside team quotas)"

_KEY = re.compile(r"(?P<root>[A-Za-z]+)(?:\[(?P<index>[0-9]+)\])?")


def _short(key: str | None) -> str:
    return (key or "").removeprefix(f"{NAMESPACE}:")


def _entry(key: str) -> tuple[str, int | None]:
    match = _KEY.match(key)
    if match is None:
        return "", None
    index = match["index"]
    return match["root"], int(index) if index is not None else None


def _short_type(type_: str) -> str:
    return type_.rsplit(":", 1)[-1]


def _count(idle: int, full: int) -> str:
    return str(full) if idle == full else f"{idle}..{full}"


def _zones(location: str, node_locations: list[str]) -> int:
    if node_locations:
        return len(node_locations)
    return 1 if region_of(location) != location else REGIONAL_CLUSTER_ZONES


def pool_nodes(inputs: Mapping[str, Any]) -> tuple[int, int]:
    """(idle, full) nodes of a GKE node pool from its inputs: a fixed count per zone, or
    autoscaling bounds per zone or in total; a flex-start pool rests at zero."""
    zones = _zones(inputs.get("location", ""), inputs.get("nodeLocations") or [])
    scaling = inputs.get("autoscaling") or {}
    if "nodeCount" in inputs:
        low = high = inputs["nodeCount"] * zones
    elif "totalMaxNodeCount" in scaling:
        low, high = scaling.get("totalMinNodeCount", 0), scaling["totalMaxNodeCount"]
    elif "maxNodeCount" in scaling:
        low, high = scaling.get("minNodeCount", 0) * zones, scaling["maxNodeCount"] * zones
    else:
        low = high = inputs.get("initialNodeCount", 0) * zones
    if (inputs.get("queuedProvisioning") or {}).get("enabled"):
        low = 0
    return low, high


def pool_capacity(node_config: Mapping[str, Any]) -> str:
    if node_config.get("flexStart"):
        return FLEX_START
    if node_config.get("spot"):
        return SPOT
    affinity = node_config.get("reservationAffinity") or {}
    if affinity.get("consumeReservationType") == "SPECIFIC_RESERVATION":
        return RESERVATION
    return ON_DEMAND


_TPU_VM_CAPACITY = {
    "on-demand": ON_DEMAND,
    "reserved": RESERVATION,
    "spot": SPOT,
    # Cloud TPU bills Spot and preemptible (best-effort) TPUs at the one "Preemptible" SKU per
    # family: the Billing Catalog tells them apart by nothing else (SkyPilot fetch_gcp.py).
    "best-effort": SPOT,
    "flex-start": FLEX_START,
}


class _Builder:
    def __init__(self, config: StackConfig, graph: Graph, catalog: Catalog):
        self.config = config
        self.graph = graph
        self.catalog = catalog
        self.keys = {urn: _short(key) for urn, key in graph.config_keys().items()}
        self.lines: list[Line] = []
        self.unpriced: list[str] = []

    def line(
        self,
        r: Registration | None,
        *,
        key: str = "",
        label: str = "",
        config_key: str | None = None,
        capacity: str = "",
        units: str,
        parts: Iterable[tuple[Quote, float, float]],
        quota_source: str | None = None,
        vms: tuple[int, int] = (0, 0),
        nat: str | None = None,
    ) -> None:
        if r is not None:
            key = key or r.urn
            label = label or f"{_short_type(r.type)} {r.name}"
            config_key = config_key if config_key is not None else self.keys.get(r.urn, "")
        config_key = config_key or ""
        self.lines.append(
            Line(
                key=key,
                label=label,
                config_key=config_key,
                system=SYSTEMS.get(_entry(config_key)[0], "stack"),
                capacity=capacity,
                units=units,
                parts=tuple(Part(q, idle, full, label) for q, idle, full in parts),
                quota_source=quota_source,
                vms=vms,
                nat=nat,
            )
        )

    def capacity_line(self, config_key: str, label: str, **line: Any) -> None:
        """A line for capacity others create from the config, with no resource of its own:
        its config key is its key."""
        self.line(None, key=config_key, label=label, config_key=config_key, **line)

    def vm_parts(
        self,
        machine_type: str,
        region: str,
        capacity: str,
        gpus: list[Mapping[str, Any]],
        disk: tuple[str, float] | None,
        idle: int,
        full: int,
    ) -> list[tuple[Quote, float, float]]:
        """The machine of `idle` and `full` VMs, the GPUs an N1 machine attaches, and each
        VM's boot disk."""
        parts: list[tuple[Quote, float, float]] = [
            (quotes.machine(self.catalog, machine_type, region, capacity), idle, full)
        ]
        if quotes.gpus_billed_apart(machine_type):
            for gpu in gpus:
                quote = quotes.attached_gpu(self.catalog, gpu["type"], region, capacity)
                parts.append((quote, idle * gpu["count"], full * gpu["count"]))
        if disk is not None:
            disk_type, size = disk
            quote = quotes.disk(self.catalog, disk_type, region)
            parts.append((quote, idle * size, full * size))
        return parts

    def quota_source(self, config_key: str) -> str | None:
        root, index = _entry(config_key)
        if index is None:
            return None
        if root == "tpuSlices":
            return self.config.tpu_slices[index].name
        if root == "gpuPools":
            return self.config.gpu_pools[index].name
        return None

    def node_pool(self, r: Registration) -> None:
        i = integral(r.inputs)
        node_config = i.get("nodeConfig") or {}
        machine_type = node_config.get("machineType", "")
        region = region_of((i.get("nodeLocations") or [i.get("location", "")])[0])
        capacity = pool_capacity(node_config)
        idle, full = pool_nodes(i)
        disk = (node_config.get("diskType", "pd-balanced"), node_config.get("diskSizeGb", 100))
        config_key = self.keys.get(r.urn, "")
        host = tpu_catalog.TPU_HOSTS.get(machine_type)
        if host is not None:
            family, chips = host.family, host.chips
            item = tpu_price_item(family, chips * full)
            parts = [
                (quotes.tpu_chip(self.catalog, item, region, capacity), idle * chips, full * chips),
                (quotes.tpu_host(self.catalog, machine_type, region, capacity), idle, full),
                (quotes.disk(self.catalog, disk[0], region), idle * disk[1], full * disk[1]),
            ]
            units = f"{_count(idle, full)} x {machine_type}, {full * chips} {family.prefix} chips"
        else:
            gpus = node_config.get("guestAccelerators") or []
            parts = self.vm_parts(machine_type, region, capacity, gpus, disk, idle, full)
            units = f"{_count(idle, full)} x {machine_type}"
        self.line(
            r,
            capacity=capacity,
            units=units,
            parts=parts,
            quota_source=self.quota_source(config_key),
            vms=(idle, full),
            nat="network",
        )

    def instance(self, r: Registration) -> None:
        i = integral(r.inputs)
        params = (i.get("bootDisk") or {}).get("initializeParams") or {}
        spot = (i.get("scheduling") or {}).get("provisioningModel") == "SPOT"
        capacity = SPOT if spot else ON_DEMAND
        disk = (params.get("type", "pd-standard"), params.get("size", 10))
        parts = self.vm_parts(i["machineType"], region_of(i["zone"]), capacity, [], disk, 1, 1)
        self.line(
            r,
            capacity=capacity,
            units=f"1 x {i['machineType']}",
            parts=parts,
            vms=(1, 1),
            nat="network",
        )

    def disk(self, r: Registration) -> None:
        i = integral(r.inputs)
        quote = quotes.disk(self.catalog, i.get("type", "pd-standard"), region_of(i["zone"]))
        size = i.get("size", 0)
        self.line(r, units=f"{size} GB {i.get('type', 'pd-standard')}", parts=[(quote, size, size)])

    def instance_group(self, r: Registration) -> None:
        i = integral(r.inputs)
        templates = [
            t
            for t in self.graph.of_type("gcp:compute/instanceTemplate:InstanceTemplate")
            if t.parent == r.parent
        ]
        config_key = self.keys.get(r.urn, "")
        if len(templates) != 1:
            self.unpriced.append(f"{r.type} {r.name} (its instance template is not one)")
            return
        template = integral(templates[0].inputs)
        model = str((template.get("scheduling") or {}).get("provisioningModel", "STANDARD"))
        reserved = (template.get("reservationAffinity") or {}).get("type") in (
            "SPECIFIC_RESERVATION",
            "ANY_RESERVATION",
        )
        capacity = {"SPOT": SPOT, "FLEX_START": FLEX_START}.get(
            model, RESERVATION if reserved else ON_DEMAND
        )
        boot = next((d for d in template.get("disks") or [] if d.get("boot")), {})
        disk = (boot.get("diskType", "pd-standard"), boot.get("diskSizeGb", 10))
        # A flex-start group has no target size: its resize requests bring it to its size
        # (FlexCapacity) when capacity is found, for their run duration, and it rests at none.
        requests = [
            integral(q.inputs).get("size", 0)
            for q in self.graph.of_type("pulumi-python:dynamic/compute:FlexCapacity")
            if q.parent == r.parent
        ]
        count = i.get("targetSize", 0) + sum(requests)
        idle = 0 if requests and "targetSize" not in i else count
        machine_type = template["machineType"]
        parts = self.vm_parts(
            machine_type,
            region_of(i["zone"]),
            capacity,
            template.get("guestAccelerators") or [],
            disk,
            idle,
            count,
        )
        root, index = _entry(config_key)
        own_nat = (
            root == "gpuClusters"
            and index is not None
            and self.config.gpu_clusters[index].network != "default"
        )
        self.line(
            r,
            capacity=capacity,
            units=f"{count} x {machine_type}",
            parts=parts,
            vms=(idle, count),
            nat=config_key if own_nat else "network",
        )

    def filestore(self, r: Registration) -> None:
        i = integral(r.inputs)
        size = (i.get("fileShares") or {}).get("capacityGb", 0)
        quote = quotes.filestore(self.catalog, i["tier"], region_of(i["location"]))
        self.line(r, units=f"{size} GiB {i['tier']}", parts=[(quote, size, size)])

    def queued_resource(self, r: Registration) -> None:
        i = integral(r.inputs)
        shape = tpu_catalog.resolve(i["acceleratorType"])
        slices = i["nodeCount"]
        region = region_of(i["zone"])
        capacity = _TPU_VM_CAPACITY[i["capacity"]]
        item = tpu_price_item(shape.family, shape.chips)
        chips = shape.chips * slices
        hosts = shape.hosts * slices
        parts = [(quotes.tpu_chip(self.catalog, item, region, capacity), chips, chips)]
        if shape.machine_type:
            host = quotes.tpu_host(self.catalog, shape.machine_type, region, capacity)
            parts.append((host, hosts, hosts))
        root, index = _entry(self.keys.get(r.urn, ""))
        on_stack_network = (
            root == "tpuVms" and index is not None and (self.config.tpu_vms[index].network is None)
        )
        self.line(
            r,
            capacity=capacity,
            units=f"{slices} x {shape.accelerator}, {chips} chips on {hosts} TPU VMs",
            parts=parts,
            vms=(hosts, hosts),
            nat="network" if on_stack_network else None,
        )

    def cluster(self, r: Registration) -> None:
        region = region_of(r.inputs.get("location", ""))
        self.line(r, units="1 cluster", parts=[(quotes.gke_cluster(self.catalog, region), 1, 1)])

    def slurm_nodesets(self) -> None:
        slurm = self.config.slurm
        if slurm is None:
            return
        ctx = self.config.context
        for index, nodeset in enumerate(slurm.tpu_nodesets):
            family_prefix = nodeset.family or ""
            family = tpu_catalog.resolve(f"{family_prefix}-8").family
            # One Slurm node is one TPU VM of four chips (8 TensorCores, CORES_PER_WORKER).
            chips_per_node = CORES_PER_WORKER // V2_V3_CORES_PER_CHIP
            item = tpu_price_item(family, nodeset.cores // V2_V3_CORES_PER_CHIP)
            capacity = (
                RESERVATION if nodeset.reserved else SPOT if nodeset.preemptible else ON_DEMAND
            )
            idle = nodeset.node_count_static
            full = nodeset.node_count_static + nodeset.node_count_dynamic_max
            region = region_of(ctx.zone_of(nodeset.zone))
            quote = quotes.tpu_chip(self.catalog, item, region, capacity)
            self.capacity_line(
                f"slurm.tpuNodesets[{index}]",
                f"Slurm nodeset {nodeset.name}",
                capacity=capacity,
                units=f"{idle}..{full} TPU VMs of {chips_per_node} {family.prefix} chips",
                parts=[(quote, idle * chips_per_node, full * chips_per_node)],
                vms=(idle, full),
                nat="network" if nodeset.subnetwork is None else None,
            )

    def slurm_cpu_nodesets(self) -> None:
        """CPU nodesets' VMs, which the controller creates from their templates: static nodes
        at idle, every dynamic one at full scale, in the zone they would land in."""
        slurm = self.config.slurm
        if slurm is None:
            return
        ctx = self.config.context
        for index, nodeset in enumerate(slurm.cpu_nodesets):
            capacity = SPOT if nodeset.spot else ON_DEMAND
            idle = nodeset.node_count_static
            full = idle + nodeset.node_count_dynamic_max
            gpus = nodeset.gpus()
            self.capacity_line(
                f"slurm.cpuNodesets[{index}]",
                f"Slurm nodeset {nodeset.name}",
                capacity=capacity,
                units=f"{idle}..{full} x {nodeset.machine_type}",
                parts=self.vm_parts(
                    nodeset.machine_type,
                    ctx.region,
                    capacity,
                    [] if gpus is None else [{"type": gpus.type, "count": gpus.count}],
                    (nodeset.disk_type, nodeset.disk_size_gb),
                    idle,
                    full,
                ),
                vms=(idle, full),
                nat="network",
            )

    def provisioner(self) -> None:
        gke = self.config.gke
        if not gke.tpu_provisioner.enabled:
            return
        for accelerator, shape in gke.tpu_provisioner.shapes().items():
            slices = gke.tpu_provisioner.quota[accelerator]
            region = region_of(gke.provisioner_zone)
            chips = slices * shape.chips
            hosts = slices * shape.hosts
            item = tpu_price_item(shape.family, shape.chips)
            self.capacity_line(
                f"tpuProvisioner.quota.{accelerator}",
                f"TPU provisioner {accelerator} pools",
                # Pods may select Spot or a reservation; the provisioner's pools are priced as
                # it creates them by default.
                capacity=ON_DEMAND,
                units=f"0..{slices} x {accelerator}, {chips} chips on {hosts} hosts",
                parts=[
                    (quotes.tpu_chip(self.catalog, item, region, ON_DEMAND), 0, chips),
                    (
                        quotes.tpu_host(self.catalog, shape.machine_type, region, ON_DEMAND),
                        0,
                        hosts,
                    ),
                ],
                quota_source=f"{PROVISIONER_SOURCE}{accelerator}",
                vms=(0, hosts),
                nat="network",
            )

    def nats(self, nat_resources: list[Registration]) -> None:
        """A gateway bills per VM it serves, up to 32; run after every VM's line."""
        for r in nat_resources:
            config_key = self.keys.get(r.urn, "")
            served = [line for line in self.lines if line.nat == config_key]
            idle = sum(line.vms[0] for line in served)
            full = sum(line.vms[1] for line in served)
            quote = quotes.nat_vm(self.catalog, r.inputs.get("region", ""))
            self.line(
                r,
                units=f"{idle}..{full} VMs, billed for at most {NAT_VM_CAP}",
                parts=[(quote, min(idle, NAT_VM_CAP), min(full, NAT_VM_CAP))],
            )

    def build(self) -> None:
        handlers = {
            "gcp:container/cluster:Cluster": self.cluster,
            "gcp:container/nodePool:NodePool": self.node_pool,
            "gcp:compute/instance:Instance": self.instance,
            "gcp:compute/disk:Disk": self.disk,
            "gcp:compute/instanceGroupManager:InstanceGroupManager": self.instance_group,
            "gcp:filestore/instance:Instance": self.filestore,
            "pulumi-python:dynamic/tpu:QueuedResource": self.queued_resource,
        }
        nat_resources = []
        for r in self.graph.resources_to_apply:
            if r.type in handlers:
                handlers[r.type](r)
            elif r.type == "gcp:compute/routerNat:RouterNat":
                nat_resources.append(r)
            elif not (r.type in FREE_TYPES or r.type in BILLED_BY_USE or _free_elsewhere(r.type)):
                self.unpriced.append(f"{r.type} {r.name}")
        self.slurm_nodesets()
        self.slurm_cpu_nodesets()
        self.provisioner()
        self.nats(nat_resources)


def _free_elsewhere(type_: str) -> bool:
    """Kubernetes objects and providers bill nothing of their own: the nodes they run on do."""
    return type_.startswith(("kubernetes:", "pulumi:providers:"))


def team_shares(config: StackConfig, lines: Iterable[Line]) -> dict[str, Share]:
    """Each team's share of the lines its quota covers: a slice entry's (or GPU pool's, or
    provisioner shape's) cost split as Kueue splits its chips (`quota.allocate`); what no team
    holds goes to the cohort, and lines no quota covers are outside team quotas."""
    gke = config.gke
    units = gke.quota_sources()
    # One flavor per source, keeping its slice size, so that each source's split is the one
    # Kueue's quota gets (whole slices to teams without a share, the rest to the cohort).
    flavors = [
        Flavor(source.name, "", {}, [], False, [source])
        for flavor in gke.flavors
        for source in flavor.sources
    ]
    allocation = allocate(flavors, {team.name: team.quota for team in config.teams})
    shares: dict[str, Share] = {
        name: Share(Amount(), Amount()) for name in [*allocation.teams, COHORT, OUTSIDE]
    }

    def add(who: str, line: Line, fraction: float) -> None:
        was = shares[who]
        shares[who] = Share(
            was.idle + line.idle.times(fraction), was.full + line.full.times(fraction)
        )

    for line in lines:
        source = line.quota_source
        if source is None or not units.get(source):
            add(OUTSIDE, line, 1.0)
            continue
        for team, held in allocation.teams.items():
            if held[source]:
                add(team, line, held[source] / units[source])
        if allocation.cohort[source]:
            add(COHORT, line, allocation.cohort[source] / units[source])
    return shares


def report(config: StackConfig, graph: Graph, catalog: Catalog) -> CostReport:
    """The stack's cost at list prices, from its validated config and the graph the program
    registered for it."""
    builder = _Builder(config, graph, catalog)
    builder.build()
    lines = tuple(builder.lines)
    return CostReport(lines, team_shares(config, lines), tuple(builder.unpriced))
