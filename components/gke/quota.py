"""Kueue flavors and quotas, derived from the slices and GPU pools; nobody types a chip count.

A flavor is a distinct slice shape (accelerator and topology); flex-start capacity of a shape
is a flavor of its own, because only it goes through the provisioning admission check, and so
is what the TPU provisioner may create, which teams reach through queues of its own. A
flavor's capacity is the chips (or GPUs) of every slice of that shape. Each slice entry's chips
are divided among teams: explicit shares first (chips, a fraction, or a percentage), then the
rest evenly among the teams that set no share for it, in whole slices, since a job runs on
whole slices; what does not divide into whole slices per team stays with the cohort, as does
everything when every team set a share. So the quotas of a flavor across all team queues and
the cohort always add up to exactly what the slices provide.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from catalog import gpu as gpu_catalog
from catalog import tpu as tpu_catalog
from catalog.gpu import GPU_RESOURCE
from components.base import Problem

if TYPE_CHECKING:
    from components.gke.config import GpuPoolConfig, Share, TpuSliceConfig

QUEUED_PROVISIONING_TAINT = "cloud.google.com/gke-queued"
QUEUED_TOLERATION = {"key": QUEUED_PROVISIONING_TAINT, "operator": "Exists", "effect": "NoSchedule"}
"""Flex-start nodes carry the gke-queued taint; only flex-start flavors tolerate it."""
NODE_POOL_LABEL = "cloud.google.com/gke-nodepool"
CAPACITY_LABEL = "ai-infra/capacity"
"""Node label with a slice's provisioning; flex-start flavors select on it so that they never
claim nodes of the same shape that are not flex-start, and provisioner flavors carry it as
`provisioned`, which the provisioner copies from the pod's selector onto the pool it creates
(gke.go nodePoolForPod copies every selector outside cloud.google.com/ and google.com/)."""
PROVISIONED = "provisioned"
DEDICATED_KEY = "ai-infra/dedicated"
"""Node label and taint (NoSchedule, value the team) of the slices one team owns
(`tpuSlices[].team`): only that team's flavor selects the label and tolerates the taint, and
the admission policies let no other team's pod tolerate it."""
MAX_FLAVORS_PER_GROUP = 64
"""Kueue's limit of flavors in one ClusterQueue resource group."""


GIB = 2**30
MIB = 2**20


def allocatable(vcpus: int, memory_gib: int) -> tuple[int, int]:
    """(millicores, bytes) a GKE Standard node of this size offers pods: its capacity less
    what GKE reserves for the kubelet and system (6% of the first core, 1% of the second, 0.5%
    of the next two, 0.25% of the rest; 25% of the first 4 GiB of memory, 20% of the next 4,
    10% of the next 8, 6% of the next 112, 2% of the rest, and the kubelet's 100 MiB eviction
    threshold: GKE "Standard cluster architecture", node allocatable resources)."""
    reserved_millis = 0.0
    for low, high, share in ((0, 1, 0.06), (1, 2, 0.01), (2, 4, 0.005), (4, vcpus, 0.0025)):
        reserved_millis += max(0, min(vcpus, high) - low) * 1000 * share
    reserved_bytes = 100 * MIB
    for low, high, share in (
        (0, 4, 0.25),
        (4, 8, 0.2),
        (8, 16, 0.1),
        (16, 128, 0.06),
        (128, memory_gib, 0.02),
    ):
        reserved_bytes += max(0, min(memory_gib, high) - low) * GIB * share
    return vcpus * 1000 - math.ceil(reserved_millis), memory_gib * GIB - math.ceil(reserved_bytes)


@dataclass(frozen=True)
class NodeShape:
    """The node a flavor's capacity comes in: its machine type, the chips or GPUs on one, and
    what it offers pods (`allocatable`)."""

    machine_type: str
    units: int
    cpu_millis: int
    memory_bytes: int


def tpu_node(shape: tpu_catalog.TpuShape) -> NodeShape:
    host = tpu_catalog.TPU_HOSTS[shape.machine_type]
    vcpus, memory_gib = tpu_catalog.HOST_SHAPES[shape.machine_type]
    return NodeShape(shape.machine_type, host.chips, *allocatable(vcpus, memory_gib))


def gpu_node(machine_type: str, gpus: int) -> NodeShape | None:
    """A GPU pool's node, or None where the catalog does not know the machine's memory (N1
    with attached GPUs, G4, A4X Max)."""
    machine = gpu_catalog.fixed_gpus(machine_type)
    if machine is None or machine.memory_gib is None:
        return None
    return NodeShape(machine_type, gpus, *allocatable(machine.vcpus, machine.memory_gib))


@dataclass(frozen=True)
class Source:
    """A slice entry or GPU pool that contributes capacity to a flavor."""

    name: str
    units: int
    """Chips (TPU) or GPUs this entry provides in total."""
    slice_units: int = 1
    """Chips of one slice, the least a job takes of a TPU entry; 1 for GPUs."""


@dataclass
class Flavor:
    """One Kueue ResourceFlavor and the capacity behind it."""

    name: str
    resource: str
    node_labels: dict[str, str]
    tolerations: list[dict[str, str]]
    flex_start: bool
    sources: list[Source] = field(default_factory=list)
    node: NodeShape | None = None
    """The node its capacity comes in; None where the catalog does not know the machine."""
    provisioned: bool = False
    """Capacity the TPU provisioner creates per JobSet: never borrowed, never lent (teams
    reach it through ClusterQueues outside the cohort)."""
    team: str | None = None
    """The one team whose slices these are (`tpuSlices[].team`): only its ClusterQueue lists
    the flavor, with all of its chips."""


def tpu_flavor_name(slice_: TpuSliceConfig) -> str:
    name = shape_flavor_name(slice_.shape, flex_start=slice_.provisioning == "flex-start")
    return f"{name}-team-{slice_.team}" if slice_.team is not None else name


def shape_flavor_name(
    shape: tpu_catalog.TpuShape, *, flex_start: bool = False, provisioned: bool = False
) -> str:
    name = shape.accelerator
    if shape.topology != tpu_catalog.topologies_for(shape.accelerator)[0]:
        name += f"-{shape.topology}"
    if flex_start:
        name += "-flex-start"
    if provisioned:
        name += f"-{PROVISIONED}"
    return name


def derive_flavors(
    slices: Sequence[TpuSliceConfig],
    gpu_pools: Sequence[GpuPoolConfig],
    provisioned: Mapping[str, tuple[tpu_catalog.TpuShape, int]] | None = None,
) -> list[Flavor]:
    """Flavors in config order: TPU shapes of the slices, then those only the TPU provisioner
    creates, then one per GPU pool.

    `provisioned` maps a quota source name (`tpuProvisioner.v5p-32`) to the shape and the chips
    the provisioner may create of it. That capacity is a `<shape>-provisioned` flavor of its
    own, selecting `ai-infra/capacity: provisioned`: the controller keeps a pool until its
    JobSet is gone, completed or failed (deletion_controller.go at 6789e2a), so a JobSet Kueue
    suspends to lend or reclaim chips would keep billing an idle slice.
    """
    flavors: dict[str, Flavor] = {}

    def add(
        shape: tpu_catalog.TpuShape,
        source: Source,
        flex_start: bool,
        provisioned: bool = False,
        team: str | None = None,
    ) -> None:
        name = shape_flavor_name(shape, flex_start=flex_start, provisioned=provisioned)
        if team is not None:
            # No other flavor's name has "-team-": shapes, flex-start and provisioned don't.
            name += f"-team-{team}"
        if name not in flavors:
            tolerations = [
                {"key": tpu_catalog.TPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}
            ]
            node_labels = dict(shape.node_labels)
            if flex_start:
                # Flex-start nodes are also tainted gke-queued, so other flavors' pods, which
                # do not tolerate it, never land on them.
                tolerations.append(QUEUED_TOLERATION)
                node_labels[CAPACITY_LABEL] = "flex-start"
            if provisioned:
                node_labels[CAPACITY_LABEL] = PROVISIONED
            if team is not None:
                node_labels[DEDICATED_KEY] = team
                tolerations.append(
                    {
                        "key": DEDICATED_KEY,
                        "operator": "Equal",
                        "value": team,
                        "effect": "NoSchedule",
                    }
                )
            flavors[name] = Flavor(
                name=name,
                resource=tpu_catalog.TPU_RESOURCE,
                node_labels=node_labels,
                tolerations=tolerations,
                flex_start=flex_start,
                node=tpu_node(shape),
                provisioned=provisioned,
                team=team,
            )
        flavors[name].sources.append(source)

    for slice_ in slices:
        add(
            slice_.shape,
            Source(slice_.name, slice_.chips, slice_.shape.chips),
            flex_start=slice_.provisioning == "flex-start",
            team=slice_.team,
        )
    for source_name, (shape, chips) in (provisioned or {}).items():
        add(shape, Source(source_name, chips, shape.chips), flex_start=False, provisioned=True)
    for pool in gpu_pools:
        tolerations = [{"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}]
        if pool.provisioning == "flex-start":
            tolerations.append(QUEUED_TOLERATION)
        flavors[f"gpu-{pool.name}"] = Flavor(
            name=f"gpu-{pool.name}",
            resource=GPU_RESOURCE,
            node_labels={NODE_POOL_LABEL: pool.name},
            tolerations=tolerations,
            flex_start=pool.provisioning == "flex-start",
            node=gpu_node(pool.machine_type, pool.accelerator_count),
            sources=[Source(pool.name, pool.gpus)],
        )
    return list(flavors.values())


def flavor_problems(flavors: Sequence[Flavor]) -> list[Problem]:
    """A `tpuSlices` problem when the slices make more flavors of one resource than a
    ClusterQueue resource group may list."""
    found = []
    for resource in dict.fromkeys(f.resource for f in flavors):
        count = sum(f.resource == resource for f in flavors)
        if count > MAX_FLAVORS_PER_GROUP:
            found.append(
                Problem(
                    ("tpuSlices",),
                    f"{count} distinct {resource} flavors exceed Kueue's "
                    f"{MAX_FLAVORS_PER_GROUP} per resource group; use fewer distinct shapes",
                )
            )
    return found


def explicit_units(share: Share, units: int) -> int:
    """Whole chips (or GPUs) of a share, rounded down. A fraction is rounded to 9 places
    first: 0.29 * 100 is 28.999999999999996 in floating point, and "29%" of 100 is 29."""
    if isinstance(share, float):
        return math.floor(round(share * units, 9))
    return share


@dataclass
class Allocation:
    """Nominal quota per team and flavor, and what the cohort itself holds."""

    teams: dict[str, dict[str, int]]
    cohort: dict[str, int]


def allocate(flavors: Sequence[Flavor], shares: Mapping[str, Mapping[str, Share]]) -> Allocation:
    """Split every source's units among teams (`shares`: team -> source -> share): explicit
    shares as given, the rest in equal whole slices to the teams without one, and what is left
    over to the cohort. A team's own flavor's units are all its own.

    Callers validate that explicit shares fit; here they are assumed to.
    """
    teams = {team: {f.name: 0 for f in flavors} for team in shares}
    cohort = {f.name: 0 for f in flavors}
    for flavor in flavors:
        if flavor.team is not None:
            if flavor.team in teams:
                teams[flavor.team][flavor.name] = sum(s.units for s in flavor.sources)
            continue
        for source in flavor.sources:
            explicit = {
                team: explicit_units(team_shares[source.name], source.units)
                for team, team_shares in shares.items()
                if source.name in team_shares
            }
            rest = source.units - sum(explicit.values())
            implicit = [team for team in shares if team not in explicit]
            for team, units in explicit.items():
                teams[team][flavor.name] += units
            each = 0
            if implicit:
                # Rounded down to whole slices: 2 slices among 3 teams is none each, not 2/3
                # of a slice each, which no job could run on without borrowing.
                each = rest // source.slice_units // len(implicit) * source.slice_units
            for team in implicit:
                teams[team][flavor.name] += each
            cohort[flavor.name] += rest - each * len(implicit)
    return Allocation(teams=teams, cohort=cohort)


@dataclass(frozen=True)
class HostQuota:
    """The CPU and memory of the nodes behind some accelerator quota, and the flavors whose
    nodes the catalog cannot size."""

    cpu_millis: int
    memory_bytes: int
    unsized: tuple[str, ...] = ()

    @property
    def cpu(self) -> str:
        """As a Kubernetes quantity, in whole cores (rounded down)."""
        return str(self.cpu_millis // 1000)

    @property
    def memory(self) -> str:
        """As a Kubernetes quantity, in whole GiB (rounded down)."""
        return f"{self.memory_bytes // GIB}Gi"

    @property
    def quantities(self) -> dict[str, str]:
        """The `cpu` flavor's quota as a ClusterQueue lists it."""
        return {"cpu": self.cpu, "memory": self.memory}


def host_quota(flavors: Sequence[Flavor], quotas: Mapping[str, int]) -> HostQuota:
    """What the nodes behind `quotas` (flavor -> chips or GPUs) offer pods: a team whose job
    takes its whole accelerator quota then has the CPU and memory of those nodes as its own,
    and never borrows them (and so is never reclaimed for them)."""
    cpu = memory = 0
    unsized = []
    for flavor in flavors:
        units = quotas.get(flavor.name, 0)
        if not units:
            continue
        if flavor.node is None:
            unsized.append(flavor.name)
            continue
        cpu += units * flavor.node.cpu_millis // flavor.node.units
        memory += units * flavor.node.memory_bytes // flavor.node.units
    return HostQuota(cpu, memory, tuple(unsized))
