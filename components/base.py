"""Shared pieces of every component: the config model base, validation problems as values,
validated scalar types, and `Component`, which hands a component's `depends_on` down to its
children.

Pydantic checks shapes only (types, single values); each component module owns the
cross-checks of its own config and returns them as `Problem`s. Pulumi does not pass a
component's `depends_on` on to the resources it creates, so without `Component` the project
services a component waits for would not gate its node pools or buckets.
"""

from __future__ import annotations

import ipaddress
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import pulumi
from pydantic import AfterValidator, BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

PathPart = str | int
"""A config key (camelCase, as written in YAML) or a list index."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a stack's config: where (`path`, relative to whoever yields it)
    and what to do about it (`message`)."""

    path: tuple[PathPart, ...]
    message: str

    def under(self, *prefix: PathPart) -> Problem:
        return Problem((*prefix, *self.path), self.message)


def under(prefix: PathPart | tuple[PathPart, ...], problems: Iterable[Problem]) -> list[Problem]:
    """Problems of a sub-config, re-rooted at the key (or path) that holds it."""
    parts = prefix if isinstance(prefix, tuple) else (prefix,)
    return [p.under(*parts) for p in problems]


def duplicate_names(names: Sequence[str], what: str) -> list[Problem]:
    """`[i, "name"]` problems for every entry whose name an earlier entry already uses."""
    seen: Counter[str] = Counter(names)
    first: dict[str, int] = {}
    found = []
    for index, name in enumerate(names):
        if name in first:
            found.append(
                Problem(
                    (index, "name"),
                    f"'{name}' is used by {seen[name]} entries of {what} (first at "
                    f"[{first[name]}]); names must be unique",
                )
            )
        else:
            first[name] = index
    return found


class ConfigModel(BaseModel):
    """A config object: camelCase keys, unknown keys rejected, immutable once validated.
    Field docstrings become descriptions, which the README reference and the editor schema
    are generated from."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        # Only the camelCase keys a stack file documents: `force_destroy` is an unknown key,
        # not a silent alias of `forceDestroy`.
        validate_by_name=False,
        validate_by_alias=True,
        # `count: yes` or `count: "3"` is a typo, not a number; YAML and the Pulumi engine
        # hand over real booleans and numbers.
        strict=True,
        extra="forbid",
        frozen=True,
        validate_default=True,
        use_attribute_docstrings=True,
    )


class WiringModel(BaseModel):
    """Component args that carry other components' outputs alongside a config object."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True, extra="forbid")


_DNS_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")


def _dns_label(value: str) -> str:
    if len(value) > 63 or not _DNS_LABEL.fullmatch(value):
        raise ValueError(
            f"'{value}' is not a valid name: use lowercase letters, digits and '-', "
            "starting with a letter and not ending with '-' (at most 63 characters)"
        )
    return value


DnsLabel = Annotated[str, AfterValidator(_dns_label)]
"""A name usable in GCP resource names, Kubernetes namespaces and node pool names."""


def _cidr(value: str) -> str:
    try:
        network = ipaddress.IPv4Network(value, strict=False)
    except ValueError:
        raise ValueError(f"'{value}' is not an IPv4 CIDR range such as 10.0.0.0/20") from None
    if "/" not in value:
        raise ValueError(f"'{value}' has no prefix length; write a range such as {value}/20")
    if str(network) != value:
        raise ValueError(f"'{value}' has host bits set; write the range as {network}")
    return value


Cidr = Annotated[str, AfterValidator(_cidr)]

BASIC_ROLES = frozenset({"roles/owner", "roles/editor", "roles/viewer"})
_ROLE = re.compile(
    # Predefined roles are service.role, each part starting lowercase
    # (roles/storage.objectViewer); IAM compares roles exactly, so roles/Logging.LogWriter
    # is no role at all. Custom role ids are 3-64 letters, digits, '_' and '.'.
    r"roles/[a-z][a-zA-Z0-9]*(\.[a-z][a-zA-Z0-9]*)+"
    r"|(projects/[a-z][-a-z0-9]{4,28}[a-z0-9]|organizations/[0-9]+)/roles/[A-Za-z0-9_.]{3,64}"
)


def _role(value: str) -> str:
    # Compared without case or surrounding space, so `roles/Owner` or `roles/owner\n` cannot
    # slip a basic role past the check.
    if value.strip().lower() in BASIC_ROLES:
        raise ValueError(
            f"'{value}' is a basic role and grants far more than a workload needs; grant "
            "predefined roles instead (e.g. roles/storage.objectUser, roles/logging.logWriter)"
        )
    if not _ROLE.fullmatch(value):
        raise ValueError(
            f"'{value}' is not an IAM role; use a predefined role, written as IAM writes it "
            "(roles/storage.objectUser), or a custom role projects/PROJECT/roles/NAME"
        )
    return value


IamRole = Annotated[str, AfterValidator(_role)]
"""An IAM role other than the basic roles owner, editor and viewer."""


def matching(pattern: str | re.Pattern[str], explain: str) -> AfterValidator:
    """A validator that accepts a string only when `pattern` matches all of it (so a trailing
    newline never slips through); `explain` completes "'<value>' ...", e.g. "is not a GKE
    name: ...". The README reference reads the pattern from here."""
    compiled = re.compile(pattern)

    def check(value: str) -> str:
        if not compiled.fullmatch(value):
            raise ValueError(f"'{value}' {explain}")
        return value

    return AfterValidator(check)


_GCE_NAME = re.compile(r"[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?")


def _gce_name(value: str) -> str:
    if not _GCE_NAME.fullmatch(value):
        raise ValueError(
            f"'{value}' is not a Compute Engine resource name: 1 to 63 lowercase letters, "
            "digits and '-', starting with a letter"
        )
    return value


GceName = Annotated[str, AfterValidator(_gce_name)]
"""The name of a Compute Engine resource (a VPC, a reservation)."""

_RESERVATION = re.compile(
    r"[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?"
    r"|projects/[a-z][-a-z0-9]{4,28}[a-z0-9]/reservations/[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?"
)


def _reservation(value: str) -> str:
    if not _RESERVATION.fullmatch(value):
        raise ValueError(
            f"'{value}' is not a reservation: write its name, or projects/PROJECT/reservations/"
            "NAME for one shared from another project"
        )
    return value


Reservation = Annotated[str, AfterValidator(_reservation)]

Provisioning = Literal["on-demand", "spot", "reservation", "flex-start"]
"""How a node pool obtains capacity: on-demand, Spot VMs, a specific reservation, or
flex-start (Dynamic Workload Scheduler queued provisioning)."""


def reservation_problems(provisioning: Provisioning, reservation: str | None) -> list[Problem]:
    """Problems of a pool's `provisioning` and `reservation` fields, taken together."""
    if provisioning == "reservation" and not reservation:
        return [
            Problem(
                ("reservation",),
                "provisioning 'reservation' needs the reservation's name here",
            )
        ]
    if provisioning != "reservation" and reservation:
        return [
            Problem(
                ("reservation",),
                f"only used with provisioning 'reservation', not '{provisioning}'; remove it "
                "or set provisioning: reservation",
            )
        ]
    return []


def slug(text: str) -> str:
    """A resource-name-safe rendering of an email, member or role that keeps it unique."""
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-")


def service_account_email(account_id: str, project: str) -> str:
    """A user-managed service account's email is fixed by its id; knowing it up front keeps
    IAM members plain strings instead of outputs to wait on."""
    return f"{account_id}@{project}.iam.gserviceaccount.com"


class Component(pulumi.ComponentResource):
    """A ComponentResource whose children inherit its `depends_on`."""

    def __init__(self, type_: str, name: str, opts: pulumi.ResourceOptions | None) -> None:
        super().__init__(type_, name, None, opts)
        depends_on: Any = opts.depends_on if opts else None
        if depends_on is None:
            depends_on = []
        elif not isinstance(depends_on, Sequence):
            depends_on = [depends_on]
        self._inherited_depends_on: list[pulumi.Resource] = list(depends_on)

    def child_opts(
        self,
        depends_on: Sequence[pulumi.Resource] = (),
        **kwargs: Any,
    ) -> pulumi.ResourceOptions:
        """Options for a child: parented here and waiting on what this component waits on."""
        deps = [*self._inherited_depends_on, *depends_on]
        return pulumi.ResourceOptions(parent=self, depends_on=deps or None, **kwargs)
