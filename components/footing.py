"""What the systems of VMs (GPU clusters, TPU VMs, Slurm) build upon, handed over as one value:
the stack's context, its network, buckets and storage volumes, and the options that make each
resource wait for the project's services. Their build steps and mounts read it from here, so
the three cannot drift in what they are given.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import pulumi

from components.buckets import BucketsHandle
from components.context import StackContext
from components.network import NetworkHandle
from components.storage import StorageHandle, StorageMount
from components.system import Handles, Mounted, StackView

Entry = TypeVar("Entry")


@dataclass(frozen=True)
class Footing:
    context: StackContext
    network: NetworkHandle
    buckets: BucketsHandle
    storage: StorageHandle
    services: pulumi.ResourceOptions


def footing(view: StackView, handles: Handles) -> Footing:
    """The footing of the stack being built: the stack-wide step's handle and storage's."""
    stack = handles["stack"]
    return Footing(
        context=view.config.context,
        network=stack.network,
        buckets=stack.buckets,
        storage=handles["storage"],
        services=stack.after_services,
    )


def entry_mounts(
    entries: Sequence[Entry],
    who: Callable[[Entry], str],
    mounts: Callable[[Entry], Iterable[StorageMount]],
    tags: Callable[[Entry], Iterable[str]],
) -> list[Mounted]:
    """Every mount of every entry, with who mounts it and the tags of the VMs that do."""
    return [
        Mounted(who(entry), mount, tuple(tags(entry)))
        for entry in entries
        for mount in mounts(entry)
    ]
