"""One way to open a stack: its file read as the Pulumi CLI reads it (its warnings said), its
config validated (a `ConfigError` lists every problem), and the graph its program registers
under the mock engine, refused when two resources share a URN, as `pulumi up` would. The plan,
preflight, the workload command and `hosts` all open stacks here, so they accept and refuse
the same files. `Stack` reads the opened stack: its Kubernetes objects, what it brings up.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from graph import capacity, types
from graph.capacity import Inventory, Machines
from graph.engine import run_program
from graph.files import StackError as StackError  # what opening a stack raises
from graph.files import stack_path
from graph.model import Graph
from stacks.config import StackConfig
from stacks.loading import parse, read_stack_text


@dataclass(frozen=True)
class Stack:
    """A stack as `pulumi up` would see it."""

    name: str
    config: StackConfig
    graph: Graph
    """Empty when opened without `build`."""
    path: Path | None = None
    """The stack file it was read from."""

    def objects(self, kind: str, api: str = "") -> Iterator[dict[str, Any]]:
        """The Kubernetes objects of `kind` the program registers, as manifests (`apiVersion`,
        `kind`, `metadata`, and the rest of its inputs); `api` narrows to one group/version."""
        for r in self.graph:
            if not r.type.startswith("kubernetes:") or r.type.rsplit(":", 1)[1] != kind:
                continue
            group_version = r.type.split(":")[1].removeprefix("core/")
            if api and group_version != api:
                continue
            yield {"apiVersion": group_version, "kind": kind, **r.inputs}
        for r in self.graph.of_type(types.CONFIG_GROUP):
            yield from (o for o in r.inputs.get("objs", []) if o.get("kind") == kind)

    @cached_property
    def inventory(self) -> Inventory:
        """What the graph brings up, as the plan, cost and preflight read it (graph.capacity)."""
        return capacity.read(self.graph)

    def machines(self, config_key: str) -> list[Machines]:
        """The machines of one config entry (`tpuSlices[0]`, `gpuPools[1]`,
        `tpuProvisioner.quota.v5p-32`), as the plan counts them."""
        return [m for m in self.inventory.machines if m.config_key == config_key]

    def object(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        for obj in self.objects(kind):
            meta = obj.get("metadata", {})
            if meta.get("name") == name and meta.get("namespace") == namespace:
                return obj
        return None


@dataclass(frozen=True)
class StackFile:
    """A stack file as read, before its config is validated."""

    name: str
    """The stack's name: `dev` for `Pulumi.dev.yaml`, a file's stem otherwise."""
    path: Path
    config: dict[str, str]
    """What `pulumi up` hands the program (PULUMI_CONFIG)."""


def _say(line: str) -> None:
    print(line, file=sys.stderr)


def read(target: str, warn: Callable[[str], None] = _say) -> StackFile:
    """Read a stack (a name or a stack file path) as the Pulumi CLI does, saying what the CLI
    would warn about; raises `StackError`, or `ConfigError` for a file the CLI refuses."""
    name, path = stack_path(target)
    found = read_stack_text(path.read_text())
    for warning in found.warnings:
        warn(f"warning: {path.name}: {warning}")
    return StackFile(name, path, found.config)


def record(config: dict[str, str], name: str) -> Graph:
    """The graph the program registers for `config`; raises what the program raises, and
    `StackError` for two resources with one URN (`graph.engine.DuplicateUrnError`), which
    Pulumi's mock engine accepts and `pulumi up` would not."""
    return run_program(config, stack=name)


def open_stack(target: str | StackFile, *, build: bool = True) -> Stack:
    """Read, validate and (with `build`) build a stack as `pulumi up` would, under the mock
    engine; without `build`, only its config (for commands that act on what it names). Raises
    `StackError` or `ConfigError`."""
    found = target if isinstance(target, StackFile) else read(target)
    # The program validates the same strings at `pulumi up` (stacks.loading.load).
    config = parse(found.config, found.name)
    graph = record(found.config, found.name) if build else Graph()
    return Stack(found.name, config, graph, found.path)
