"""The one registry of systems: each entry is a system's face (`components/<system>/__init__.py`
`SYSTEM`), in the order the plan shows them. Config checks, the composition, the project
services, the plan's sections, the stack outputs, the cost's systems and `hosts` loop over
`SYSTEMS` and list no system themselves; a test adds a fake entry and finds it in every reader.
"""

from __future__ import annotations

from dataclasses import replace

from components import gke, gpu_clusters, monitoring, slurm, stackwide, storage, tpu_vms
from components.system import Claim, Mounted, StackView, System
from stacks.config import StackConfig

SYSTEMS: tuple[System, ...] = (
    stackwide.SYSTEM,
    gke.SYSTEM,
    gke.PROVISIONER,
    tpu_vms.SYSTEM,
    gpu_clusters.SYSTEM,
    slurm.SYSTEM,
    storage.SYSTEM,
    monitoring.SYSTEM,
)
"""Stack-wide parts first; storage after the systems that mount it; monitoring last, which
watches what every other system builds."""


def claims(config: StackConfig) -> tuple[Claim, ...]:
    """What every system claims, in registry order, each marked with its system's name."""
    return tuple(
        replace(claim, system=system.name) for system in SYSTEMS for claim in system.claims(config)
    )


def mounts(config: StackConfig) -> tuple[Mounted, ...]:
    """Every system's mounts of storage volumes, in registry order."""
    return tuple(mounted for system in SYSTEMS for mounted in system.mounts(config))


def services(config: StackConfig) -> tuple[str, ...]:
    """The project services the stack enables: every system's, each once, in registry order."""
    return tuple(dict.fromkeys(s for system in SYSTEMS for s in system.services(config)))


def view(config: StackConfig) -> StackView:
    """What each system's functions receive."""
    return StackView(config, claims(config), mounts(config), services(config))


def tpu_chips(config: StackConfig) -> int:
    """Every TPU chip the stack can hold at once: each system's at its most. The offline plan
    counts the same from the registered graph (graph.capacity), and a test holds the stack
    output `tpuChips` to it."""
    return sum(system.tpu_chips(config) for system in SYSTEMS)


def owner_of(key: str) -> System:
    """The system that owns a config key (`tpuSlices`, `gcp:project`); what no key names is
    stack-wide (the first entry)."""
    name = key.split(":", 1)[-1]
    return next((s for s in SYSTEMS if name in s.keys), SYSTEMS[0])
