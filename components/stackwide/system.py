"""The stack-wide parts as the stack sees them: the project services, the VPC with its subnet,
NAT and firewall, and the buckets of `ai-infra:buckets`, which every system joins; the stack's
zone and labels. Built first, checked first; what other systems open through `network.allow`
and which ranges they take comes from their claims.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pulumi

from components import buckets, locations, network
from components.base import Problem, Source, under
from components.buckets import Bucket, BucketArgs, BucketsHandle
from components.context import label_problems
from components.network import Network, NetworkArgs, NetworkHandle
from components.services import REQUIRED_SERVICES, ProjectServices, ProjectServicesArgs
from components.system import Claim, ClaimKind, Handles, Section, StackView

if TYPE_CHECKING:
    from stacks.config import StackConfig

MAIN_RANGES = {
    "subnetCidr": "subnet_cidr",
    "podsCidr": "pods_cidr",
    "servicesCidr": "services_cidr",
    "masterCidr": "master_cidr",
}
"""The VPC's own ranges: `network.<key>` -> the `NetworkConfig` field."""


@dataclass(frozen=True)
class StackHandle:
    """What every system builds upon."""

    services: ProjectServices
    network: NetworkHandle
    buckets: BucketsHandle
    after_services: pulumi.ResourceOptions
    """Waits for the project services: every system's top-level components take it."""


def problems(view: StackView) -> list[Problem]:
    """The zone, the labels, the network (against the ranges other systems create and the
    tags they open) and the buckets."""
    config = view.config
    found: list[Problem] = []
    if problem := locations.zone_problem(config.zone, config.region):
        found.append(Problem(("zone",), problem))
    found += under("labels", label_problems(config.labels))
    others = {c.what: c.value for c in view.claimed(ClaimKind.RANGE) if c.system != "stack"}
    found += under("network", network.problems(config.network))
    found += under(
        "network",
        network.overlap_problems(config.network, others)
        + network.name_problems(config.network, config.prefix)
        + network.allow_problems(config.network, view.system_tags(), gke=config.cluster.enabled),
    )
    found += under("buckets", buckets.problems(config.buckets, config.context))
    return found + buckets.write_problems(
        config.buckets, bucket_writers(config), [t.name for t in config.teams]
    )


def bucket_writers(config: StackConfig) -> list[buckets.Writer]:
    """Every way a team writes a stack bucket: its own `buckets` and the storage volumes on
    the bucket that grant it write, for the bucket's owner rule."""
    found = [
        buckets.Writer(("teams", i, "buckets", key), team.name, key)
        for i, team in enumerate(config.teams)
        for key, access in team.buckets.items()
        if access != "read"
    ]
    for j, volume in enumerate(config.resolved_storage.config.volumes):
        resolved = config.resolved_storage.volumes.get(volume.name)
        if resolved is None or resolved.bucket_key is None:
            continue
        found += [
            buckets.Writer(
                ("storage", "volumes", j, "teams", team),
                team,
                resolved.bucket_key,
                volume_owner=volume.owner,
                shared=volume.shared_write,
            )
            for team, access in volume.teams.items()
            if access == "write"
        ]
    return found


def claims(config: StackConfig) -> list[Claim]:
    """The VPC's ranges and its additional node networks' subnets."""
    net = config.network
    found = [
        Claim(ClaimKind.RANGE, getattr(net, field), ("network", key), f"network.{key}")
        for key, field in MAIN_RANGES.items()
    ]
    found += [
        Claim(
            ClaimKind.RANGE,
            n.subnet_cidr,
            ("network", "additionalNodeNetworks", i),
            f"network.additionalNodeNetworks[{i}]",
        )
        for i, n in enumerate(net.additional_node_networks)
    ]
    return found + _firewalls(config)


def _firewalls(config: StackConfig) -> list[Claim]:
    """The network's firewall rules: its fixed ones (GKE's only with GKE) and one per
    `network.allow` entry, named by the entry (components/network/stack_network.py)."""
    ctx, net = config.context, config.network
    fixed = ["allow-iap-ssh"]
    if config.cluster.enabled:
        fixed += ["allow-internal", "deny-to-gke", "allow-webhooks"]
    found = [
        Claim(ClaimKind.FIREWALL, ctx.name(rule), ("network",), f"the stack network's {rule}")
        for rule in fixed
    ]
    found += [
        Claim(
            ClaimKind.FIREWALL,
            ctx.name("allow", opening.name),
            ("network", "allow", i, "name"),
            f"network.allow {opening.name}",
            chosen=True,
        )
        for i, opening in enumerate(net.allow)
    ]
    return found


def services(config: StackConfig) -> tuple[str, ...]:
    return REQUIRED_SERVICES


def build(view: StackView, handles: Handles, source: Source) -> StackHandle:
    """The project services every system waits for, the network with the tags other systems'
    VMs are opened by, and the buckets."""
    config = view.config
    ctx = config.context
    apis = view.services
    services = ProjectServices(
        source("services", "project"), ProjectServicesArgs(project=ctx.project, services=apis)
    )
    after_services = pulumi.ResourceOptions(depends_on=services.services)
    net = Network(
        source("network", "network"),
        NetworkArgs(
            context=ctx,
            config=config.network,
            gke=config.cluster.enabled,
            system_tags=view.system_tags(),
        ),
        after_services,
    ).handle
    stack_buckets = BucketsHandle(
        {
            entry.name: Bucket(
                source(f"bucket-{entry.name}", "buckets", i),
                BucketArgs(context=ctx, config=entry),
                after_services,
            )
            for i, entry in enumerate(config.buckets)
        }
    )
    return StackHandle(services, net, stack_buckets, after_services)


def describe(view: StackView) -> list[Section]:
    return network.describe(view.config.network, view.config.prefix)


def outputs(config: StackConfig, handles: Handles) -> dict[str, Any]:
    stack: StackHandle = handles["stack"]
    return {"buckets": {k: b.bucket.url for k, b in stack.buckets.buckets.items()}}
