"""The numbers a reviewer decides on, read from a recorded graph: TPU chips by kind and in total,
GPUs by type, nodes and VMs (each at its maximum), each Kueue queue's quota by flavor, and the
stack outputs with their values where they are known before `pulumi up`.

One `Summary` per graph; the text plan, the diff and the JSON all read it, and a cost line is
one more field of `Capacity`. It reads only the registrations and the config the program ran
with, so a base built by another commit's code (plan/base.py) is summarised the same way.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import yaml

from components import tpu_catalog
from components.gpu_catalog import fixed_gpus
from plan.diff import render_path
from plan.engine import INVENTED, INVENTED_PREFIXES, Graph, Registration
from plan.replacements import SECRET_SIG, unwrap

UNKNOWN_OUTPUT = "(known after pulumi up)"
SECRET_OUTPUT = "[secret]"
REGIONAL_ZONES = 3
"""GKE replicates a regional cluster's node pools across three zones unless nodeLocations
says otherwise (GKE "Regional clusters")."""


@dataclass(frozen=True)
class Capacity:
    """Machines of one kind that one resource (or one config entry) brings up."""

    system: str
    """`GKE node pools`, `TPU VMs`, `TPU provisioner`, `Slurm nodesets`, `GPU clusters`, `VMs`."""
    name: str
    machine_type: str
    nodes: int
    """Nodes or VMs, at their maximum when `maximum`."""
    maximum: bool = False
    provisioning: str = "on-demand"
    tpu_kind: str = ""
    """The Cloud TPU family (`v5p`, `v6e`, `v5litepod`, `tpu7x`), when these are TPU hosts."""
    chips_per_node: int = 0
    gpu_type: str = ""
    gpus_per_node: int = 0
    note: str = ""

    @property
    def chips(self) -> int:
        return self.nodes * self.chips_per_node

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    def line(self) -> str:
        up_to = "up to " if self.maximum else ""
        text = f"{self.system}: {self.name} {up_to}{self.nodes} x {self.machine_type}"
        if self.chips_per_node:
            text += f" = {self.chips} {self.tpu_kind} chips"
        if self.gpus_per_node:
            text += f" with {self.gpus_per_node} x {self.gpu_type} = {self.gpus} GPUs"
        text += f", {self.provisioning}"
        return f"{text} ({self.note})" if self.note else text


@dataclass(frozen=True)
class Summary:
    capacity: tuple[Capacity, ...] = ()
    quotas: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Queue (`research`, `cohort ai-infra`) -> `flavor resource` -> nominal quota."""
    outputs: dict[str, Any] | None = None
    """Stack output -> its value, with `[secret]` and `(known after pulumi up)` in place of
    what the plan must not or cannot show; None when the graph did not record them."""

    def _tally(self, kind: str, count: str) -> dict[str, int]:
        counted: Counter[str] = Counter()
        for c in self.capacity:
            if getattr(c, count):
                counted[getattr(c, kind)] += getattr(c, count)
        return dict(sorted(counted.items()))

    def chips_by_kind(self) -> dict[str, int]:
        return self._tally("tpu_kind", "chips")

    def gpus_by_type(self) -> dict[str, int]:
        return self._tally("gpu_type", "gpus")

    def nodes_by_system(self) -> dict[str, int]:
        counted: Counter[str] = Counter()
        for c in self.capacity:
            counted[c.system] += c.nodes
        return dict(counted)

    @property
    def chips(self) -> int:
        return sum(self.chips_by_kind().values())

    @property
    def gpus(self) -> int:
        return sum(self.gpus_by_type().values())

    @property
    def nodes(self) -> int:
        return sum(c.nodes for c in self.capacity)

    def to_json(self) -> dict[str, Any]:
        return {
            "tpuChips": {"total": self.chips, "byKind": self.chips_by_kind()},
            "gpus": {"total": self.gpus, "byType": self.gpus_by_type()},
            "nodesAndVms": {"total": self.nodes, "bySystem": self.nodes_by_system()},
            "capacity": [{**asdict(c), "chips": c.chips, "gpus": c.gpus} for c in self.capacity],
            "quotas": self.quotas,
            "outputs": self.outputs,
        }


def _int(value: Any) -> int:
    value = unwrap(value)
    return int(value) if isinstance(value, int | float) else 0


def _shape(accelerator: str, topology: str | None = None) -> tpu_catalog.TpuShape | None:
    try:
        return tpu_catalog.resolve(accelerator, topology)
    except tpu_catalog.CatalogError:
        return None


def _pool_provisioning(inputs: dict[str, Any]) -> str:
    node_config = inputs.get("nodeConfig") or {}
    if node_config.get("spot"):
        return "spot"
    if node_config.get("flexStart"):
        return "flex-start"
    if (inputs.get("queuedProvisioning") or {}).get("enabled"):
        return "queued"
    reservation = node_config.get("reservationAffinity") or {}
    if reservation.get("consumeReservationType") == "SPECIFIC_RESERVATION":
        return f"reservation {','.join(reservation.get('values') or [])}"
    return "on-demand"


def _node_pool(r: Registration, cluster_zonal: bool) -> Capacity:
    i = unwrap(r.inputs)
    node_config = i.get("nodeConfig") or {}
    machine_type = str(node_config.get("machineType", "?"))
    autoscaling = i.get("autoscaling") or {}
    zones = len(i.get("nodeLocations") or []) or (1 if cluster_zonal else REGIONAL_ZONES)
    note = ""
    if "totalMaxNodeCount" in autoscaling:
        nodes, maximum = _int(autoscaling["totalMaxNodeCount"]), True
    elif "maxNodeCount" in autoscaling:
        nodes, maximum = _int(autoscaling["maxNodeCount"]) * zones, True
        if zones > 1:
            note = f"{_int(autoscaling['maxNodeCount'])} per zone in {zones} zones"
    else:
        nodes, maximum = _int(i.get("nodeCount", i.get("initialNodeCount"))) * zones, False
    tpu = tpu_catalog.TPU_HOSTS.get(machine_type)
    gpus = [g for g in node_config.get("guestAccelerators") or [] if _int(g.get("count"))]
    fixed = fixed_gpus(machine_type)
    return Capacity(
        system="GKE node pools",
        name=r.name,
        machine_type=machine_type,
        nodes=nodes,
        maximum=maximum,
        provisioning=_pool_provisioning(i),
        tpu_kind=tpu.family.prefix if tpu else "",
        chips_per_node=tpu.chips if tpu else 0,
        gpu_type=str(gpus[0]["type"]) if gpus else (fixed.gpu_type if fixed else ""),
        gpus_per_node=_int(gpus[0]["count"]) if gpus else (fixed.gpu_count if fixed else 0),
        note=note,
    )


def _queued_resource(r: Registration) -> Capacity | None:
    i = unwrap(r.inputs)
    shape = _shape(str(i.get("acceleratorType", "")))
    if shape is None:
        return None
    slices = _int(i.get("nodeCount"))
    return Capacity(
        system="TPU VMs",
        name=str(i.get("queuedResourceId", r.name)),
        machine_type=f"{shape.accelerator} host",
        nodes=slices * shape.hosts,
        provisioning=str(i.get("capacity", "on-demand")),
        tpu_kind=shape.family.prefix,
        chips_per_node=shape.chips_per_host,
        note=f"{slices} slice(s) of {shape.accelerator}",
    )


def _slurm_nodeset(r: Registration, templates: dict[str, dict[str, Any]]) -> Capacity | None:
    """A Slurm-GCP nodeset file: `node_count_static` + `node_count_dynamic_max` TPU VMs, or
    Compute Engine VMs of the instance template it names (`instance_template`, a CPU nodeset;
    `templates` holds the graph's templates by their GCE name)."""
    try:
        content = yaml.safe_load(str(unwrap(r.inputs.get("content", ""))))
    except yaml.YAMLError:
        return None
    if not isinstance(content, dict) or "nodeset_name" not in content:
        return None
    nodes = _int(content.get("node_count_static")) + _int(content.get("node_count_dynamic_max"))
    if content.get("instance_template"):
        template = templates.get(str(content["instance_template"]).rsplit("/", 1)[-1])
        if template is None:
            return None
        found = _template_vms(
            "Slurm nodesets", str(content["nodeset_name"]), template, nodes, maximum=True
        )
        # Slurm-GCP consumes a nodeset's reservation at resume (resume.py), not through the
        # template.
        if content.get("reservation_name"):
            found = replace(found, provisioning=f"reservation {content['reservation_name']}")
        return found
    node_type = str(content.get("node_type") or "")
    accelerator = content.get("accelerator_config") or {}
    shape = _shape(node_type) if node_type else None
    if shape is None and accelerator.get("version") and accelerator.get("topology"):
        prefix = str(accelerator["version"]).lower()
        family = next((f for f in tpu_catalog.FAMILIES if f.prefix == prefix), None)
        topology = str(accelerator["topology"])
        if family is not None:
            try:
                shape = _shape(family.accelerator_of(topology), topology)
            except ValueError:
                shape = None
    if shape is None:
        return None
    flags = [f for f in ("preemptible", "reserved") if content.get(f)]
    return Capacity(
        system="Slurm nodesets",
        name=str(content["nodeset_name"]),
        machine_type=f"{shape.accelerator} host",
        nodes=nodes,
        maximum=True,
        provisioning=", ".join(flags) or "on-demand",
        tpu_kind=shape.family.prefix,
        chips_per_node=shape.chips_per_host,
    )


def _provisioner(config: dict[str, str]) -> list[Capacity]:
    """The TPU provisioner's node pools are created per pending JobSet, up to its quota:
    `ai-infra:tpuProvisioner.quota` slices of each accelerator type."""
    try:
        provisioner = json.loads(config.get("ai-infra:tpuProvisioner", "{}"))
    except json.JSONDecodeError:
        return []
    if not isinstance(provisioner, dict) or provisioner.get("enabled") is not True:
        return []
    found = []
    for accelerator, slices in sorted((provisioner.get("quota") or {}).items()):
        shape = _shape(accelerator)
        if shape is None or not isinstance(slices, int):
            continue
        found.append(
            Capacity(
                system="TPU provisioner",
                name=accelerator,
                machine_type=shape.machine_type,
                nodes=slices * shape.hosts,
                maximum=True,
                provisioning="on demand, per pending JobSet",
                tpu_kind=shape.family.prefix,
                chips_per_node=shape.chips_per_host,
                note=f"quota of {slices} slice(s)",
            )
        )
    return found


def _gpu_clusters(graph: Graph) -> list[Capacity]:
    templates = {r.urn: r for r in graph.of_type("gcp:compute/instanceTemplate:InstanceTemplate")}
    found = []
    for group in graph.of_type("gcp:compute/instanceGroupManager:InstanceGroupManager"):
        deps = set(group.property_dependencies.get("versions", ()))
        linked = [t for u, t in templates.items() if u in deps] or [
            t for t in templates.values() if t.parent == group.parent
        ]
        if len(linked) != 1:
            continue
        inputs = unwrap(group.inputs)
        found.append(
            _template_vms(
                "GPU clusters",
                str(inputs.get("name", group.name)),
                unwrap(linked[0].inputs),
                _int(inputs.get("targetSize")),
            )
        )
    return found


def _template_vms(
    system: str, name: str, template: dict[str, Any], nodes: int, maximum: bool = False
) -> Capacity:
    """`nodes` VMs of an instance template: its machine type, capacity and GPUs (attached,
    or the machine type's own)."""
    machine_type = str(template.get("machineType", "?"))
    gpus = [g for g in template.get("guestAccelerators") or [] if _int(g.get("count"))]
    fixed = fixed_gpus(machine_type)
    model = (template.get("scheduling") or {}).get("provisioningModel")
    return Capacity(
        system=system,
        name=name,
        machine_type=machine_type,
        nodes=nodes,
        maximum=maximum,
        provisioning={"SPOT": "spot", "FLEX_START": "flex-start"}.get(str(model), "on-demand"),
        gpu_type=str(gpus[0]["type"]) if gpus else (fixed.gpu_type if fixed else ""),
        gpus_per_node=_int(gpus[0]["count"]) if gpus else (fixed.gpu_count if fixed else 0),
    )


def _quotas(graph: Graph) -> dict[str, dict[str, Any]]:
    quotas: dict[str, dict[str, Any]] = {}
    for r in graph:
        if r.type.rsplit(":", 1)[-1] not in ("ClusterQueue", "Cohort"):
            continue
        i = unwrap(r.inputs)
        name = str((i.get("metadata") or {}).get("name", r.name))
        queue = name if r.type.endswith(":ClusterQueue") else f"cohort {name}"
        for group in (i.get("spec") or {}).get("resourceGroups") or []:
            for flavor in group.get("flavors") or []:
                for resource in flavor.get("resources") or []:
                    amount = unwrap(resource.get("nominalQuota"))
                    if isinstance(amount, float) and amount.is_integer():
                        amount = int(amount)
                    key = f"{flavor.get('name')} {resource.get('name')}"
                    quotas.setdefault(queue, {})[key] = amount
    return quotas


def known(value: Any) -> Any:
    """An output value with what the plan must hide (secrets) or cannot know (addresses and
    certificates GCP assigns) replaced by a marker."""
    if isinstance(value, dict):
        if SECRET_SIG in value:
            return SECRET_OUTPUT
        return {k: known(v) for k, v in value.items()}
    if isinstance(value, list):
        return [known(v) for v in value]
    if isinstance(value, str) and (
        any(invented in value for invented in INVENTED) or value.startswith(INVENTED_PREFIXES)
    ):
        return UNKNOWN_OUTPUT
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def summarize(graph: Graph) -> Summary:
    clusters = graph.of_type("gcp:container/cluster:Cluster")
    zonal = bool(clusters) and str(unwrap(clusters[0].inputs).get("location", "")).count("-") == 2
    capacity: list[Capacity] = []
    templates = {
        str(unwrap(t.inputs).get("name")): unwrap(t.inputs)
        for t in graph.of_type("gcp:compute/instanceTemplate:InstanceTemplate")
    }
    for r in graph:
        if r.type == "gcp:container/nodePool:NodePool":
            capacity.append(_node_pool(r, zonal))
        elif r.type == "pulumi-python:dynamic/tpu:QueuedResource":
            capacity += [c for c in [_queued_resource(r)] if c is not None]
        elif r.type == "gcp:storage/bucketObject:BucketObject":
            capacity += [c for c in [_slurm_nodeset(r, templates)] if c is not None]
        elif r.type == "gcp:compute/instance:Instance":
            i = unwrap(r.inputs)
            capacity.append(
                Capacity("VMs", str(i.get("name", r.name)), str(i.get("machineType")), 1)
            )
    capacity += _gpu_clusters(graph)
    capacity += _provisioner(graph.config)
    outputs = known(graph.outputs) if graph.outputs is not None else None
    return Summary(tuple(capacity), _quotas(graph), outputs)


def render(summary: Summary) -> list[str]:
    """The plan's capacity, quota and output sections."""
    lines = ["", "Capacity (each at its maximum node count):"]
    chips = summary.chips_by_kind()
    by_kind = ", ".join(f"{kind} {n}" for kind, n in chips.items())
    lines.append(f"  TPU chips: {summary.chips}" + (f" ({by_kind})" if by_kind else ""))
    lines += [f"    {c.line()}" for c in summary.capacity if c.chips]
    gpus = summary.gpus_by_type()
    by_type = ", ".join(f"{kind} {n}" for kind, n in gpus.items())
    lines.append(f"  GPUs: {summary.gpus}" + (f" ({by_type})" if by_type else ""))
    lines += [f"    {c.line()}" for c in summary.capacity if c.gpus]
    systems = ", ".join(f"{system} {n}" for system, n in summary.nodes_by_system().items())
    lines.append(f"  Nodes and VMs: {summary.nodes}" + (f" ({systems})" if systems else ""))
    lines += [f"    {c.line()}" for c in summary.capacity if not c.chips and not c.gpus]
    if summary.quotas:
        lines += ["", "Kueue nominal quota (queue: flavor resource = quota):"]
        for queue, entries in summary.quotas.items():
            shown = ", ".join(f"{key} = {value}" for key, value in entries.items())
            lines.append(f"  {queue}: {shown}")
    if summary.outputs is not None:
        lines += ["", "Outputs (`pulumi stack output`):"]
        for name, value in sorted(summary.outputs.items()):
            lines.append(f"  {name}: {_shown(value)}")
    return lines


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _counts(before: dict[str, int], after: dict[str, int], what: str) -> list[str]:
    lines = []
    for key in sorted(before.keys() | after.keys()):
        old, new = before.get(key, 0), after.get(key, 0)
        if old != new:
            lines.append(f"  {what} {key}: {old} → {new}")
    return lines


def compare(before: Summary, after: Summary) -> list[str]:
    """What the numbers do between two summaries: chips, GPUs, nodes, quotas and outputs that
    change, before → after, never cut off."""
    lines: list[str] = []
    if before.chips != after.chips:
        lines.append(f"  TPU chips: {before.chips} → {after.chips}")
    lines += _counts(before.chips_by_kind(), after.chips_by_kind(), "TPU chips")
    if before.gpus != after.gpus:
        lines.append(f"  GPUs: {before.gpus} → {after.gpus}")
    lines += _counts(before.gpus_by_type(), after.gpus_by_type(), "GPUs")
    if before.nodes != after.nodes:
        lines.append(f"  Nodes and VMs: {before.nodes} → {after.nodes}")
    for queue in sorted(before.quotas.keys() | after.quotas.keys()):
        old, new = before.quotas.get(queue, {}), after.quotas.get(queue, {})
        for key in sorted(old.keys() | new.keys()):
            if old.get(key) != new.get(key):
                was, now = old.get(key, "(none)"), new.get(key, "(none)")
                lines.append(f"  quota {queue}: {key} {was} → {now}")
    if before.outputs is not None and after.outputs is not None:
        for path, was, now in _leaf_changes(before.outputs, after.outputs, ()):
            lines.append(f"  output {render_path(path)}: {was} → {now}")
    return lines


def _leaf_changes(old: Any, new: Any, path: tuple[str | int, ...]) -> list[tuple[Any, str, str]]:
    """Each output value that differs, at its own path, so a long map is never cut off."""
    if old == new:
        return []
    if isinstance(old, dict) and isinstance(new, dict):
        return [
            change
            for key in sorted(old.keys() | new.keys())
            for change in _leaf_changes(old.get(key, _NONE), new.get(key, _NONE), (*path, key))
        ]
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [
            change
            for i, (a, b) in enumerate(zip(old, new, strict=True))
            for change in _leaf_changes(a, b, (*path, i))
        ]
    return [(path, _NONE if old is _NONE else _shown(old), _NONE if new is _NONE else _shown(new))]


_NONE = "(none)"
