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
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from components.gke import PROVISIONER_SOURCE, Flavor, allocate
from components.locations import region_of
from graph import capacity, types
from graph.model import Graph, Registration
from prices import quotes
from prices.catalog import Catalog, PriceRow
from prices.coverage import FLEX_START, ON_DEMAND, RESERVATION, SPOT, tpu_price_item
from prices.quotes import Quote
from stacks import registry
from stacks.config import StackConfig
from stacks.messages import NAMESPACE

NAT_VM_CAP = 32
"""Cloud NAT bills a gateway for at most 32 VMs an hour (Cloud NAT pricing; Cyclenerd's
pricing.pl: "The per-hour rate is capped at 32 VM instances")."""

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
    "local SSDs a Slurm nodeset attaches (localSsd.count; those a machine type comes with are "
    "in its price)",
)
"""What the figures do not hold, because it cannot be known offline."""


BILLED_BY_USE = {
    types.BUCKET: "bytes stored (left out)",
    types.SLURM_RUNTIME_SCRIPTS: "objects in the Slurm bucket (bytes, left out)",
    types.ALERT_POLICY: "conditions and the time series they return (left out)",
}
FREE_TYPES = frozenset(
    {
        types.FIREWALL,
        types.NETWORK,
        types.ROUTER,
        types.SUBNETWORK,
        types.RESOURCE_POLICY,
        types.INSTANCE_TEMPLATE,
        types.SERVICE,
        types.PROJECT_IAM_MEMBER,
        types.CUSTOM_ROLE,
        types.SERVICE_ACCOUNT,
        types.SERVICE_ACCOUNT_IAM_MEMBER,
        types.BUCKET_IAM_MEMBER,
        types.REPOSITORY_IAM_MEMBER,
        types.BUCKET_OBJECT,
        types.SLURM_TPU_CLEANUP,
        types.SLURM_COMPUTE_CLEANUP,
        types.SLURM_FLEX_CLEANUP,
        types.FLEX_CAPACITY,
        types.GPU_STARTUP_WAIT,
        types.TPU_STARTUP_WAIT,
        types.DASHBOARD,
        types.NOTIFICATION_CHANNEL,
        types.GLOBAL_ADDRESS,
        types.SERVICE_NETWORKING_CONNECTION,
    }
)
"""Resources with no charge of their own (a template bills through its group's VMs, and so
do a flex-start group's resize requests; a startup wait only reads; a bucket object bills
through its bucket's bytes; Slurm's cleanup deletes TPU and Compute Engine VMs on destroy;
Cloud Monitoring dashboards are free; a private services access range and its peering bill
nothing of their own, only the traffic over them)."""


STORAGE_PRICES: dict[str, tuple[Callable[[Catalog, str, str], Quote], str]] = {
    "disk": (quotes.disk, "GB"),
    "filestore": (quotes.filestore, "GiB"),
    "lustre": (quotes.lustre, "GiB"),
}
"""graph.capacity Storage kind -> its quote (catalog, tier, region) and the unit of its size."""


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
    chips: int = 0
    """TPU chips at full scale."""
    gpus: int = 0
    """GPUs at full scale."""
    deferred: bool = False
    """A group whose new template reaches its running VMs only when they are recreated
    (graph.capacity `rollout`): a diff books the new price for new VMs alone."""

    @property
    def unpriced_units(self) -> tuple[tuple[str, float, float], ...]:
        """(what, idle, full) of the parts with no known price: their changes are changes."""
        return tuple((p.quote.what, p.idle, p.full) for p in self.parts if not p.quote.known)

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


_PRICE_CAPACITY: dict[str, str] = {
    "on-demand": ON_DEMAND,
    "spot": SPOT,
    "flex-start": FLEX_START,
    "reservation": RESERVATION,
}
"""How machines get capacity -> the catalog's capacity. Cloud TPU bills Spot and preemptible
(best-effort) TPUs at the one "Preemptible" SKU per family: the Billing Catalog tells them
apart by nothing else (SkyPilot fetch_gcp.py), and graph.capacity reads both as Spot."""


def _units(m: capacity.Machines) -> str:
    """What machines are, in numbers: `1..4 x ct5p-hightpu-4t, 16 v5p chips`."""
    count = _count(m.idle, m.full)
    if m.capacity == "reservation" and m.idle != m.full:
        return f"{_plain_units(m, count)}, the reservation billed for {m.full} while idle"
    return _plain_units(m, count)


def _plain_units(m: capacity.Machines, count: str) -> str:
    if m.tpu is None:
        return f"{count} x {m.machine_type}"
    chips = f"{m.chips} {m.tpu.family.prefix} chips"
    if m.slices is None:
        return f"{count} x {m.machine_type}, {chips}"
    idle_slices = m.idle // m.slices.hosts
    return (
        f"{_count(idle_slices, m.slices.count)} x {m.slices.accelerator}, {chips} on "
        f"{m.full} {'TPU VMs' if m.tpu_api else 'hosts'}"
    )


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
        *,
        key: str,
        label: str,
        config_key: str,
        capacity: str = "",
        units: str,
        parts: Iterable[tuple[Quote, float, float]],
        quota_source: str | None = None,
        vms: tuple[int, int] = (0, 0),
        nat: str | None = None,
        chips: int = 0,
        gpus: int = 0,
        deferred: bool = False,
    ) -> None:
        self.lines.append(
            Line(
                key=key,
                label=label,
                config_key=config_key,
                system=registry.owner_of(_entry(config_key)[0]).name,
                capacity=capacity,
                units=units,
                parts=tuple(Part(q, idle, full, label) for q, idle, full in parts),
                quota_source=quota_source,
                vms=vms,
                nat=nat,
                chips=chips,
                gpus=gpus,
                deferred=deferred,
            )
        )

    def resource_line(self, r: Registration, **line: Any) -> None:
        self.line(
            key=r.urn,
            label=f"{types.short(r.type)} {r.name}",
            config_key=self.keys.get(r.urn, ""),
            **line,
        )

    def vm_parts(self, m: capacity.Machines, capacity_: str) -> list[tuple[Quote, float, float]]:
        """The machines of `m` at idle and full scale: TPU chips (and their host, where the
        catalog names one), or the machine type with the GPUs an N1 machine attaches; and each
        VM's boot disk and other persistent disks. An autoscaled pool on a reservation bills
        the reservation, taken as large as the pool's maximum, whether its nodes run or not
        (Cloud TPU "Consumption options", Compute Engine "Reservations": a reservation is
        billed while it exists); its disks exist only with the nodes."""
        region, full = m.region, m.full
        idle = full if m.capacity == "reservation" else m.idle
        parts: list[tuple[Quote, float, float]] = []
        if m.tpu is not None:
            per_slice = m.slices.hosts if m.slices is not None else m.full
            item = tpu_price_item(m.tpu.family, per_slice * m.tpu.chips)
            chips = m.tpu.chips
            parts.append(
                (quotes.tpu_chip(self.catalog, item, region, capacity_), idle * chips, full * chips)
            )
            if m.machine_type:
                host = quotes.tpu_host(self.catalog, m.machine_type, region, capacity_)
                parts.append((host, idle, full))
        else:
            parts.append(
                (quotes.machine(self.catalog, m.machine_type, region, capacity_), idle, full)
            )
            if quotes.gpus_billed_apart(m.machine_type):
                for gpu_type, count in m.gpus:
                    quote = quotes.attached_gpu(self.catalog, gpu_type, region, capacity_)
                    parts.append((quote, idle * count, full * count))
        for disk_type, size in (*((m.boot_disk,) if m.boot_disk else ()), *m.extra_disks):
            quote = quotes.disk(self.catalog, disk_type, region)
            parts.append((quote, m.idle * size, full * size))
        return parts

    def quota_source(self, m: capacity.Machines) -> str | None:
        """The slice entry, GPU pool or provisioner shape whose chips teams' quotas split."""
        if m.system is capacity.System.PROVISIONER:
            return f"{PROVISIONER_SOURCE}{m.name}"
        root, index = _entry(m.config_key)
        if index is None:
            return None
        if root == "tpuSlices":
            return self.config.tpu_slices[index].name
        if root == "gpuPools":
            return self.config.gpu_pools[index].name
        return None

    def nat(self, m: capacity.Machines) -> str | None:
        """The config key of the Cloud NAT these machines reach the internet through: the
        stack's, a GPU cluster's own, or none (TPU VMs on a network of their own)."""
        root, index = _entry(m.config_key)
        if index is None:
            return "network"
        if root == "gpuClusters" and self.config.gpu_clusters[index].network != "default":
            return m.config_key
        if root == "tpuVms" and self.config.tpu_vms[index].network is not None:
            return None
        slurm = self.config.slurm
        if m.config_key.startswith("slurm.tpuNodesets[") and slurm is not None:
            return "network" if slurm.tpu_nodesets[index].subnetwork is None else None
        return "network"

    def machines(self, m: capacity.Machines) -> None:
        capacity_ = _PRICE_CAPACITY[m.capacity]
        self.line(
            key=m.key,
            label=m.label,
            config_key=m.config_key,
            capacity=capacity_,
            units=_units(m),
            parts=self.vm_parts(m, capacity_),
            quota_source=self.quota_source(m),
            vms=(m.idle, m.full),
            nat=self.nat(m),
            chips=m.chips,
            gpus=m.gpu_count,
            deferred=m.rollout == "opportunistic",
        )

    def storage(self, s: capacity.Storage) -> None:
        price, unit = STORAGE_PRICES[s.kind]
        quote = price(self.catalog, s.tier, s.region)
        units = f"{s.gib} {unit} {s.tier}"
        self.line(
            key=s.key,
            label=s.label,
            config_key=s.config_key,
            units=units,
            parts=[(quote, s.gib, s.gib)],
        )

    def cluster(self, r: Registration) -> None:
        region = region_of(r.inputs.get("location", ""))
        self.resource_line(
            r, units="1 cluster", parts=[(quotes.gke_cluster(self.catalog, region), 1, 1)]
        )

    def nats(self, nat_resources: list[Registration]) -> None:
        """A gateway bills per VM it serves, up to 32, and per external address it uses; run
        after every VM's line."""
        for r in nat_resources:
            config_key = self.keys.get(r.urn, "")
            served = [line for line in self.lines if line.nat == config_key]
            idle = sum(line.vms[0] for line in served)
            full = sum(line.vms[1] for line in served)
            region = r.inputs.get("region", "")
            ips = (nat_ips(idle), nat_ips(full))
            self.resource_line(
                r,
                units=f"{idle}..{full} VMs, billed for at most {NAT_VM_CAP}; "
                f"{ips[0]}..{ips[1]} IP addresses",
                parts=[
                    (
                        quotes.nat_vm(self.catalog, region),
                        min(idle, NAT_VM_CAP),
                        min(full, NAT_VM_CAP),
                    ),
                    (quotes.nat_ip(self.catalog, region), *ips),
                ],
            )

    def build(self) -> None:
        inventory = capacity.read(self.graph)
        nat_resources = []
        for r in self.graph.resources_to_apply:
            if r.type == types.CLUSTER:
                self.cluster(r)
            elif r.type == types.ROUTER_NAT:
                nat_resources.append(r)
            elif not (r.type in capacity.READERS or _free(r.type)):
                self.unpriced.append(f"{r.type} {r.name}")
        for item in inventory.items:
            if isinstance(item, capacity.Machines):
                self.machines(item)
            else:
                self.storage(item)
        self.unpriced += [f"{u.label} ({u.why})" for u in inventory.unread]
        self.nats(nat_resources)


NAT_PORTS_PER_IP = 64_512
"""Source ports of one NAT address (Cloud NAT "Ports and addresses": 1024-65535)."""
NAT_MIN_PORTS_PER_VM = 64
"""The gateway's default minimum per VM (static port allocation; components/network.py sets
no other): with AUTO_ONLY, Cloud NAT adds an address per 1,008 VMs."""


def nat_ips(vms: int) -> int:
    """The addresses an AUTO_ONLY gateway allocates for `vms` VMs at the default ports."""
    return -(-vms * NAT_MIN_PORTS_PER_VM // NAT_PORTS_PER_IP)


def _free(type_: str) -> bool:
    """Resources that bill nothing of their own: Kubernetes objects and providers bill
    through the nodes they run on."""
    return (
        type_ in FREE_TYPES
        or type_ in BILLED_BY_USE
        or types.is_kubernetes(type_)
        or types.is_provider(type_)
    )


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
