"""TPU VM slices through Cloud TPU queued resources (`ai-infra:tpuVms`). `stacks/` builds them
with `build()`, checks them with `problems()` and `subnet_problems()`, and the offline plan
shows them with `describe()`.
"""

from __future__ import annotations

import pulumi

from components.base import PathPart, Source
from components.buckets import BucketsHandle
from components.context import StackContext
from components.network import NetworkHandle
from components.tpu_vms.checks import problems, subnet_problems
from components.tpu_vms.config import TpuVmConfig
from components.tpu_vms.vms import TpuVms, TpuVmsArgs

__all__ = [
    "TpuVmConfig",
    "TpuVms",
    "account_claims",
    "build",
    "describe",
    "problems",
    "subnet_problems",
]


def build(
    entries: list[TpuVmConfig],
    *,
    context: StackContext,
    network: NetworkHandle,
    buckets: BucketsHandle,
    services: pulumi.ResourceOptions,
    source: Source,
) -> dict[str, TpuVms]:
    """One queued resource per entry. TPU VMs boot into the stack's subnet and egress through
    its NAT, so each waits for the network; nothing here needs the GKE cluster."""
    return {
        entry.name: TpuVms(
            source(f"tpuvm-{entry.name}", "tpuVms", i),
            TpuVmsArgs(context=context, network=network, buckets=buckets, config=entry),
            services,
        )
        for i, entry in enumerate(entries)
    }


def account_claims(
    entries: list[TpuVmConfig], context: StackContext
) -> list[tuple[tuple[PathPart, ...], str]]:
    """The service account ids the entries would create (those without their own account)."""
    return [
        (("tpuVms", i), context.name(entry.name))
        for i, entry in enumerate(entries)
        if entry.service_account is None
    ]


def describe(entries: list[TpuVmConfig], context: StackContext) -> list[tuple[str, list[str]]]:
    """The plan's section: each queued resource with its slices and chips."""
    lines = [
        f"  {e.name}: {e.node_count} x {e.shape.accelerator} = {e.chips} chips in "
        f"{context.zone_of(e.zone)}, {e.provisioning}, TPU VMs {', '.join(e.node_names)}"
        for e in entries
    ]
    return [("TPU VMs (queued resources)", lines)] if lines else []
