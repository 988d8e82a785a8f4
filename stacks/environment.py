"""Composes one stack from a validated `StackConfig`: each system of the registry builds its
parts stage by stage (`components.system.Stage`: the project services, network and buckets
first, then storage, the cluster, what goes on it, the VMs), each receiving the handles of what
was built before it. This is the only place systems meet; `Environment.sources` records which
config key each top-level component comes from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi

from components import network
from stacks import registry
from stacks.config import StackConfig
from stacks.messages import render_path


@dataclass(frozen=True)
class Environment:
    """Handles on what was built, for exports and for whoever reads the program's graph: each
    build step's by its `handle` name (`env.gke`, `env.tpu_vms`, `env.storage`)."""

    config: StackConfig
    handles: dict[str, Any]
    sources: dict[str, str]
    """Top-level component name -> the config key it comes from (`ai-infra:tpuSlices[2]`)."""

    def __getattr__(self, name: str) -> Any:
        handles = self.__dict__.get("handles", {})
        if name in handles:
            return handles[name]
        raise AttributeError(f"the stack built no {name!r}; it built {', '.join(handles)}")


def build(config: StackConfig) -> Environment:
    for line in warnings(config):
        pulumi.log.warn(line)
    sources: dict[str, str] = {}

    def source(name: str, *path: str | int) -> str:
        sources[name] = render_path(path)
        return name

    view = registry.view(config)
    steps = [step for system in registry.SYSTEMS for step in system.builds]
    handles: dict[str, Any] = {}
    # Stage by stage; within a stage, in registry order (sorted() keeps it).
    for step in sorted(steps, key=lambda s: s.stage):
        handles[step.handle] = step.build(view, handles, source)
    return Environment(config=config, handles=handles, sources=sources)


def warnings(config: StackConfig) -> list[str]:
    """What a valid config may say but probably does not mean, as `path: message`; `pulumi
    up` logs them and the plan lists them."""
    view = registry.view(config)
    found = [w for system in registry.SYSTEMS for w in system.warnings(view)]
    return [f"{render_path(w.path)}: {w.message}" for w in found]


def describe(config: StackConfig) -> list[tuple[str, list[str]]]:
    """The offline plan's sections, one or more per system, from the resolved config, and
    the warnings last."""
    view = registry.view(config)
    sections = [section for system in registry.SYSTEMS for section in system.describe(view)]
    if found := warnings(config):
        sections.append(("Warnings", [f"  {line}" for line in found]))
    return sections


def diff_notices(
    after: StackConfig, mtus: Mapping[str, tuple[int, int]], before: StackConfig | None = None
) -> list[str]:
    """What the offline diff must add to the resources it lists, because the provider's update
    does not show it: VMs that keep a VPC's old MTU, and what each system's running machines
    do with the edit (`System.edit_notices`; `before` is the base's config where it parses).
    `mtus` holds VPC name -> (old, new) MTU for each network of both plans whose MTU moves."""
    notices = []
    vpc = after.network.vpc_name(after.prefix)
    if vpc in mtus:
        notice = network.mtu_change_notice(*mtus[vpc], [vpc], vms_in_vpc(after))
        notices += [notice] if notice else []
    # The node networks share one MTU, so they move together and are told in one notice.
    node_vpcs = [n for n in after.network.node_networks(after.prefix).values() if n.vpc in mtus]
    if node_vpcs:
        notice = network.mtu_change_notice(
            *mtus[node_vpcs[0].vpc],
            [n.vpc for n in node_vpcs],
            [f"the slice pools attached to {', '.join(n.name for n in node_vpcs)}"],
        )
        notices += [notice] if notice else []
    return notices + [n for system in registry.SYSTEMS for n in system.edit_notices(before, after)]


def vms_in_vpc(config: StackConfig) -> list[str]:
    """The VMs of one stack that boot into its VPC, by who creates them."""
    return [vms for system in registry.SYSTEMS for vms in system.vms_in_vpc(config)]


def export(env: Environment) -> None:
    """Every system's stack outputs, and the TPU chips of the whole stack."""
    for system in registry.SYSTEMS:
        for name, value in system.outputs(env.config, env.handles).items():
            pulumi.export(name, value)
    pulumi.export("tpuChips", registry.tpu_chips(env.config))
