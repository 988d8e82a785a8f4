"""The numbers a reviewer decides on, read from a recorded graph: TPU chips by kind and in total,
GPUs by type, nodes and VMs (each at its maximum), each Kueue queue's quota by flavor, and the
stack outputs with their values where they are known before `pulumi up`.

One `Summary` per graph; the text plan, the diff and the JSON all read it. The machines are
`graph.capacity`'s, which the cost and preflight read too. It reads only the registrations and
the config the program ran with, so a base built by another commit's code (plan/base.py) is
summarised the same way.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from graph import capacity, types
from graph.engine import INVENTED, INVENTED_PREFIXES
from graph.model import SECRET_SIG, Graph, unwrap
from plan.diff import render_path

UNKNOWN_OUTPUT = "(known after pulumi up)"
SECRET_OUTPUT = "[secret]"


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

    def to_json(self) -> dict[str, Any]:
        return {
            "system": self.system,
            "name": self.name,
            "machineType": self.machine_type,
            "nodes": self.nodes,
            "maximum": self.maximum,
            "provisioning": self.provisioning,
            "tpuKind": self.tpu_kind,
            "chipsPerNode": self.chips_per_node,
            "chips": self.chips,
            "gpuType": self.gpu_type,
            "gpusPerNode": self.gpus_per_node,
            "gpus": self.gpus,
            "note": self.note,
        }

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
            "capacity": [c.to_json() for c in self.capacity],
            "quotas": self.quotas,
            "outputs": self.outputs,
        }


def _capacity(m: capacity.Machines) -> Capacity:
    """How the plan's numbers show one kind of machines the graph brings up."""
    note = ""
    if m.per_zone is not None:
        note = f"{m.per_zone} per zone in {m.full // m.per_zone} zones"
    elif m.system is capacity.System.PROVISIONER and m.slices is not None:
        note = f"quota of {m.slices.count} slice(s)"
    elif m.system is capacity.System.TPU_VMS and m.slices is not None:
        note = f"{m.slices.count} slice(s) of {m.slices.accelerator}"
    machine_type = m.machine_type
    if m.tpu_api and m.slices is not None:
        machine_type = f"{m.slices.accelerator} host"
    return Capacity(
        system=str(m.system),
        name=m.name,
        machine_type=machine_type or "?",
        nodes=m.full,
        maximum=m.autoscaled,
        provisioning=m.provisioning,
        tpu_kind=m.tpu.family.prefix if m.tpu is not None else "",
        chips_per_node=m.chips_per_node,
        gpu_type=m.gpu_type,
        gpus_per_node=m.gpus_per_node,
        note=note,
    )


def _quotas(graph: Graph) -> dict[str, dict[str, Any]]:
    quotas: dict[str, dict[str, Any]] = {}
    for r in graph:
        if r.type not in (types.CLUSTER_QUEUE, types.COHORT):
            continue
        i = unwrap(r.inputs)
        name = str((i.get("metadata") or {}).get("name", r.name))
        queue = name if r.type == types.CLUSTER_QUEUE else f"cohort {name}"
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
    capacity_lines = tuple(_capacity(m) for m in capacity.read(graph).machines)
    outputs = known(graph.outputs) if graph.outputs is not None else None
    return Summary(capacity_lines, _quotas(graph), outputs)


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
