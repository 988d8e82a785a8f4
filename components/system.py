"""What a system is to the stack: one `System` entry, declared in the system's face
(`components/<system>/__init__.py`) and listed once in `stacks/registry.py`. The entry names
the config keys the system owns and points at functions in the system's own modules: its
problems and warnings, what it claims that others may collide with, the project services it
needs, what it mounts, what it builds and when, how the plan describes it, its stack outputs.
Every reader (the checks, the composition, the plan, the cost, `hosts`) loops over the
registry; none lists the systems.

A system's functions receive a `StackView`: the validated stack config and what every system
declares (claims, mounts), and while checking, the problems found so far.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import IntEnum, StrEnum
from typing import TYPE_CHECKING, Any

from components.base import PathPart, Problem, Source

if TYPE_CHECKING:
    from components.storage import StorageMount
    from stacks.config import StackConfig

Section = tuple[str, list[str]]
"""One section of the offline plan: its title and its lines."""


class ClaimKind(StrEnum):
    """What a system claims that another may collide with; `stacks/claims.py` judges them."""

    ACCOUNT = "service account id"
    """A Google service account id the program creates: one owner each."""
    KUBERNETES_ACCOUNT = "Kubernetes service account"
    """`namespace/name` bound to a Google account: one owner each."""
    ACCOUNT_USE = "account use"
    """An account (email) an entry runs as; never one another system creates."""
    FILESTORE = "Filestore instance"
    """A Filestore instance name: one owner each."""
    VM_NAME = "VM name"
    """A VM's name, or (`pattern`) the `<value>-<n>` names a controller creates and deletes."""
    TAG = "network tag"
    """A network tag the stack's firewall rules admit VMs by; `chosen` ones are written by the
    user and must not be another system's."""
    RANGE = "range"
    """An IPv4 range of the stack's VPC or of a network a system creates."""
    BUCKET = "bucket"
    """A GCS bucket name a system creates."""
    FIREWALL = "firewall rule"
    """A VPC firewall rule's name, unique in the project whatever its network (Compute Engine
    `firewalls.insert`: the name is the rule's id in `projects/<p>/global/firewalls`): one
    owner each. `chosen` where a config name gives it; the fixed rules are not."""
    VOLUME = "volume"
    """What a storage volume holds, `<kind>:<bucket or instance>`: one volume each, so that a
    volume's owner and grants cannot be walked around by a second one."""


@dataclass(frozen=True)
class Claim:
    """One thing a system claims, at the config path that claims it."""

    kind: ClaimKind
    value: str
    path: tuple[PathPart, ...]
    what: str = ""
    """How a message names the claimant or the claim (`network.subnetCidr`, `TPU VM`), or
    for an account use, why it is refused, with `{owner}` for the owner's path."""
    chosen: bool = False
    """Written by the user (a tag listed, an account named), not made by the program."""
    own: frozenset[str] = frozenset()
    """Values of the claimant's own it may repeat (a TPU VM entry listing its own tag)."""
    opens: bool = False
    """A tag `network.allow` may open, by `what`."""
    pattern: bool = False
    """A VM name prefix: the claimant creates and deletes `<value>-<n>`."""
    system: str = ""
    """The registry name of the system that claims it (set by the registry)."""


@dataclass(frozen=True)
class Mounted:
    """One mount of a storage volume by a system: who mounts it (for the plan), where, and the
    network tags of the VMs that do."""

    who: str
    mount: StorageMount
    tags: tuple[str, ...]


@dataclass(frozen=True)
class StackView:
    """What the stack hands each system's functions."""

    config: StackConfig
    claims: tuple[Claim, ...] = ()
    mounts: tuple[Mounted, ...] = ()
    services: tuple[str, ...] = ()
    """The project services every system needs, in registry order."""
    found: tuple[Problem, ...] = ()
    """While checking: the problems the systems before this one found."""

    def claimed(self, kind: ClaimKind, *, system: str | None = None) -> list[Claim]:
        """The claims of one kind, in registry order; of one system with `system`."""
        return [c for c in self.claims if c.kind == kind and system in (None, c.system)]

    def valid(self, *keys: str) -> bool:
        """No problem found so far under any of these config keys."""
        return not any(p.path[:1] in [(k,) for k in keys] for p in self.found)

    def system_tags(self) -> dict[str, list[str]]:
        """The network tags of every system's VMs on the stack's network that `network.allow`
        opens, by the name it opens them with; systems the stack lacks are left out."""
        found: dict[str, list[str]] = {}
        for claim in self.claimed(ClaimKind.TAG):
            if claim.opens:
                found.setdefault(claim.what, []).append(claim.value)
        return found

    def mounts_by_volume(self) -> dict[str, list[Mounted]]:
        """Volume name -> every system's mount of it."""
        found: dict[str, list[Mounted]] = {}
        for mounted in self.mounts:
            found.setdefault(mounted.mount.volume, []).append(mounted)
        return found


class Stage(IntEnum):
    """When a system's part is built: the stack composes stage by stage, and within a stage in
    registry order, so that what a part builds upon exists before it."""

    FOUNDATION = 0
    """The project services, the network and the buckets every system joins."""
    STORAGE = 1
    """Volumes systems mount."""
    CLUSTER = 2
    """The GKE cluster and what runs on it."""
    ON_CLUSTER = 3
    """What other systems put on the cluster."""
    MACHINES = 4
    """VMs outside GKE."""


Handles = Mapping[str, Any]
"""What the stack built so far, by the `handle` name of each step."""


@dataclass(frozen=True)
class Step:
    """One part of what a system builds: `build(view, handles, source)` returns the handle
    stored under `handle` (`Environment.<handle>`)."""

    stage: Stage
    handle: str
    build: Callable[[StackView, Handles, Source], Any]


def _no_problems(view: StackView) -> list[Problem]:
    return []


def _no_claims(config: StackConfig) -> list[Claim]:
    return []


def _no_mounts(config: StackConfig) -> list[Mounted]:
    return []


def _no_services(config: StackConfig) -> tuple[str, ...]:
    return ()


def _no_sections(view: StackView) -> list[Section]:
    return []


def _no_outputs(config: StackConfig, handles: Handles) -> dict[str, Any]:
    return {}


def _no_chips(config: StackConfig) -> int:
    return 0


def _no_notices(before: StackConfig | None, after: StackConfig) -> list[str]:
    return []


def _no_vms(config: StackConfig) -> list[str]:
    return []


@dataclass(frozen=True)
class System:
    """One system of the stack, as its face declares it. Every field but `name`, `title` and
    `keys` defaults to nothing: a system declares what it has."""

    name: str
    """How the cost, the reachability model and `hosts` name it: `tpu-vms`."""
    title: str
    """How people read it: `TPU VMs`."""
    keys: tuple[str, ...]
    """The config keys it owns, as the stack file writes them after the namespace."""
    problems: Callable[[StackView], list[Problem]] = _no_problems
    """Its problems, at stack paths."""
    warnings: Callable[[StackView], list[Problem]] = _no_problems
    """What a valid config may say but probably does not mean, at stack paths."""
    claims: Callable[[StackConfig], list[Claim]] = _no_claims
    mounts: Callable[[StackConfig], list[Mounted]] = _no_mounts
    """Its mounts of `ai-infra:storage` volumes."""
    services: Callable[[StackConfig], tuple[str, ...]] = _no_services
    """Project services (APIs) it needs."""
    builds: tuple[Step, ...] = ()
    describe: Callable[[StackView], list[Section]] = _no_sections
    """Its sections of the offline plan."""
    outputs: Callable[[StackConfig, Handles], dict[str, Any]] = _no_outputs
    """Its stack outputs (`pulumi stack output`), from what the stack built."""
    tpu_chips: Callable[[StackConfig], int] = _no_chips
    """Every TPU chip it can hold at once."""
    vms_in_vpc: Callable[[StackConfig], list[str]] = _no_vms
    """The VMs it boots into the stack's VPC, by who creates them (a VPC's MTU change)."""
    edit_notices: Callable[[StackConfig | None, StackConfig], list[str]] = _no_notices
    """What its running machines do with an edit the provider's update does not show, given
    the base's config where it parses (`plan --base`)."""
    reachable: bool = False
    """Its VMs are principals of the reachability model (`graph.reachability.VMS`)."""
    hosts: bool = False
    """`python -m hosts` runs commands on its entries' hosts (`hosts.targets.LISTERS`)."""


__all__ = [
    "Claim",
    "ClaimKind",
    "Handles",
    "Mounted",
    "Section",
    "StackView",
    "Stage",
    "Step",
    "System",
]
