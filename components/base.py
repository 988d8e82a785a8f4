"""Shared pieces of every component: the config model base, validation problems as values,
and `Component`, which hands a component's `depends_on` down to its children. Validated GCP
values are in `components.types`.

Pydantic checks shapes only (types, single values); each component module owns the
cross-checks of its own config and returns them as `Problem`s. Pulumi does not pass a
component's `depends_on` on to the resources it creates, so without `Component` the project
services a component waits for would not gate its node pools or buckets.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import pulumi
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    ValidatorFunctionWrapHandler,
    WrapValidator,
)
from pydantic.alias_generators import to_camel

PathPart = str | int
"""A config key (camelCase, as written in YAML) or a list index."""


Source = Callable[..., str]
"""Records which config key a top-level component comes from, for the plan: a system calls
`source("tpu-train", "tpuSlices", 2)` and names the component with what it returns."""


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


MAX_ENTRIES = 256
"""Entries of a top-level list (slices, pools, clusters, teams, buckets, TPU VM entries): a bound
of this program's, far above any stack's, so that every check stays bounded in its input."""
MAX_AUTHORIZED_NETWORKS = 100
"""GKE "Quotas and limits": at most 100 authorized networks per cluster with a private
endpoint (50 with a public one); GKE refuses more."""
MAX_OPENINGS = 64
"""Entries of `network.allow`, and ports of one entry: a bound of this program's."""
MAX_SOURCES = 256
"""Source ranges of one `network.allow` entry: a bound of this program's, under the Compute
Engine API's 5,000 source ranges of a firewall policy rule (FirewallPolicyRuleMatcher)."""
MAX_NETWORK_TAGS = 64
"""Network tags of a VM: Compute Engine allows at most 64 per instance (VPC "Network tags")."""
MAX_POLICY_MEMBERS = 1500
"""Principals of one IAM allow policy: at most 1,500 (IAM "Quotas and limits"), a bucket's
included."""
MAX_LABELS = 64
"""Labels of one resource: GCP allows at most 64 (Resource Manager "Requirements for labels";
Compute Engine, Cloud TPU and GCS follow it)."""
MAX_METADATA_ENTRIES = 128
"""Metadata entries of a VM: a bound of this program's. Compute Engine bounds metadata by size
(keys under 128 bytes, values at most 256 KiB, all of it under 512 KB: `Metadata.items`), not by
count."""
MAX_ROLES = 64
"""Project roles of one service account: a bound of this program's, not an IAM limit; an
account holding more is no longer least privilege. Raise it deliberately."""
MAX_KUEUE_FLAVORS = 64
"""Flavors of one ClusterQueue resource group: Kueue v0.19.2's ClusterQueue CRD sets
`spec.resourceGroups[].flavors` maxItems 64, and every slice, pool or provisioned shape a
quota names is one flavor."""
MAX_PRIORITY_CLASSES = 64
"""Kueue WorkloadPriorityClasses of a stack: a bound of this program's (Kubernetes sets none);
each is an object of the cluster and a name the admission policy compares."""


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


Validator = TypeVar("Validator", bound=Callable[..., Any])


def anchored(pattern: str | re.Pattern[str]) -> str:
    """A `fullmatch` pattern as JSON Schema, which searches. Named groups become plain groups:
    Python writes them `(?P<name>`, ECMAScript (what editors run) `(?<name>`, and the schema
    only needs to match."""
    text = pattern.pattern if isinstance(pattern, re.Pattern) else pattern
    return "^(?:" + re.sub(r"\(\?P<\w+>", "(?:", text) + ")$"


def described(name: str, schema: dict[str, Any]) -> Callable[[Validator], Validator]:
    """Tells the generated config reference (`name`: how a reader calls what the validator
    accepts, empty where the type says it) and the editor schema (`schema`: JSON Schema that
    refines the generated one) what a validator accepts. A validator that runs before pydantic
    checks the type (a `BeforeValidator`) must say it, since its input is not its type."""

    def mark(function: Validator) -> Validator:
        function.described = (name, schema)  # type: ignore[attr-defined]
        return function

    return mark


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


def relative_path(path: tuple[PathPart, ...]) -> str:
    """`("tpuSlices", 2, "name")` -> `tpuSlices[2].name`, for messages that point at another
    entry of the same stack."""
    head, *rest = path
    return str(head) + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in rest)


def slug(text: str) -> str:
    """A resource-name-safe rendering of an email, member or role that keeps it unique."""
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-")


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


def at_most(limit: int, why: str) -> WrapValidator:
    """A map's size, checked before its entries: pydantic checks a dict's `max_length` only
    after validating every entry, so a map of 10^5 bad keys would give 10^5 problems (a list's
    `Field(max_length=...)` is checked first). `why` names the limit's source."""

    @described("", {"maxProperties": limit})
    def bounded(value: object, handler: ValidatorFunctionWrapHandler) -> object:
        if isinstance(value, dict) and len(value) > limit:
            raise ValueError(f"holds {len(value)} entries; at most {limit} ({why}), remove some")
        return handler(value)

    return WrapValidator(bounded)
