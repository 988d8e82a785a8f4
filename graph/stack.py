"""The stack a workload runs on: its validated config and the graph its program registers under
the mock engine, read once per command. Everything the command writes into a JobSet comes from
these two, so it cannot drift from what `pulumi up` builds.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from graph import types
from graph.capacity import Inventory, Machines, read
from graph.engine import list_stacks, run_program, stack_file
from graph.model import Graph
from stacks.config import StackConfig
from stacks.loading import parse, read_stack_text
from stacks.messages import ConfigError


class StackError(Exception):
    """A stack that cannot be read or built; the message says which and why."""


@dataclass(frozen=True)
class Stack:
    name: str
    config: StackConfig
    graph: Graph

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
        return read(self.graph)

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


def stack_path(target: str) -> tuple[str, Path]:
    """A stack name (`prod`) or a stack file path -> (stack name, stack file)."""
    path = Path(target)
    if path.suffix not in (".yaml", ".yml"):
        path = stack_file(target)
        if not path.exists():
            raise StackError(f"{path.name} not found: stacks are {', '.join(list_stacks())}")
        return target, path
    if not path.exists():
        raise StackError(f"{target}: no such stack file")
    name = path.name.split(".")[1] if path.name.startswith("Pulumi.") else path.stem
    return name, path


def load(target: str, *, build: bool = True) -> Stack:
    """Read and build a stack as `pulumi up` would, under the mock engine; without `build`,
    only its config (for commands that need no more than a team's namespace)."""
    name, path = stack_path(target)
    raw = read_stack_text(path.read_text()).config
    try:
        config = parse(raw, name)
    except ConfigError as error:
        lines = "\n  ".join(f"{path}: {message}" for path, message in error.rendered)
        raise StackError(f"{path.name} is not a valid stack config:\n  {lines}") from None
    if not config.cluster.enabled:
        raise StackError(f"stack '{name}' builds no GKE cluster (cluster.enabled: false)")
    return Stack(name, config, run_program(raw, stack=name) if build else Graph())
