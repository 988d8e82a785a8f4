"""The stack-wide values every system reads, resolved once: project, region, default zone, name
prefix, labels and protection. Systems receive one `StackContext` instead of these as loose
arguments, and resolve an entry's inherited zone through it, so that a default is decided in
one place.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from components.base import Problem

MANAGED_LABELS = ("managed-by", "ai-infra-stack")
"""GCP labels the program puts on every resource beside `ai-infra:labels`."""
PROVIDER_LABELS = ("goog-pulumi-provisioned",)
"""Labels pulumi-gcp adds to every labelled resource (`addPulumiAttributionLabel`)."""
MAX_LABELS = 64
"""GCP's limit of labels per resource ("Create and manage cluster and node pool labels")."""


@dataclass(frozen=True)
class StackContext:
    """What every system of one stack shares."""

    project: str
    region: str
    zone: str
    """`gcp:zone`: the zone of any entry that names none."""
    prefix: str
    """`ai-infra:prefix`: the start of every cloud resource name."""
    protect: bool
    stack_labels: Mapping[str, str] = field(default_factory=dict)
    """`ai-infra:labels`, as the user wrote them."""

    @property
    def labels(self) -> dict[str, str]:
        """GCP labels of every resource that takes them."""
        return {"managed-by": "pulumi", "ai-infra-stack": self.prefix, **self.stack_labels}

    def zone_of(self, zone: str | None) -> str:
        """An entry's zone: its own, or `gcp:zone`."""
        return zone if zone is not None else self.zone

    def location_of(self, location: str | None) -> str:
        """A regional resource's location: its own, or `gcp:region`."""
        return location if location is not None else self.region

    def name(self, *parts: str) -> str:
        """A cloud resource name under the stack's prefix: `<prefix>-<part>-<part>`."""
        return "-".join((self.prefix, *parts))


def label_problems(
    labels: Mapping[str, str],
    *,
    reserved: tuple[str, ...] = (),
    beside: int = 0,
    by_pulumi_gcp: bool = True,
) -> list[Problem]:
    """Problems of labels a user adds to a resource: at `[key]` for a key the program sets
    itself (`MANAGED_LABELS`, the provider's, and `reserved`), and at the map when, with the
    `beside` labels already on the resource, they pass GCP's limit. Resources a dynamic
    provider creates (`by_pulumi_gcp=False`) do not get pulumi-gcp's label."""
    provider = PROVIDER_LABELS if by_pulumi_gcp else ()
    owned = (*MANAGED_LABELS, *provider, *reserved)
    found = [
        Problem((key,), "is set by the program itself; choose another label key")
        for key in labels
        if key in (*MANAGED_LABELS, *PROVIDER_LABELS, *reserved)
    ]
    # Keys the program reserves are on the resource too, and take room like the managed ones.
    room = MAX_LABELS - len(owned) - beside
    if len(labels) > room:
        found.append(
            Problem(
                (),
                f"{len(labels)} labels, but GCP allows {MAX_LABELS} per resource and the "
                f"program, the provider and the stack add {MAX_LABELS - room}; keep at most "
                f"{room}",
            )
        )
    return found
