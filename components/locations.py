"""Compute Engine zones of the regions the program knows, to refuse a zone that does not
exist (us-east5-d) before `pulumi up` does. A region not listed here is not checked.

Source: a zone list generated from a real project (GoogleCloudPlatform/ai-on-gke
`applications/hcc/zone_to_region.json` at 8c838f01), matching Compute Engine "Regions and
zones" where that page could be read.
"""

from __future__ import annotations

import re

from components.types import REGION

ZONES: dict[str, str] = {
    "africa-south1": "abc",
    "asia-east1": "abc",
    "asia-east2": "abc",
    "asia-northeast1": "abc",
    "asia-northeast2": "abc",
    "asia-northeast3": "abc",
    "asia-south1": "abc",
    "asia-south2": "abc",
    "asia-southeast1": "abc",
    "asia-southeast2": "abc",
    "australia-southeast1": "abc",
    "australia-southeast2": "abc",
    "europe-central2": "abc",
    "europe-north1": "abc",
    "europe-north2": "abc",
    "europe-southwest1": "abc",
    "europe-west1": "bcd",
    "europe-west10": "abc",
    "europe-west12": "abc",
    "europe-west2": "abc",
    "europe-west3": "abc",
    "europe-west4": "abc",
    "europe-west6": "abc",
    "europe-west8": "abc",
    "europe-west9": "abc",
    "me-central1": "abc",
    "me-central2": "abc",
    "me-west1": "abc",
    "northamerica-northeast1": "abc",
    "northamerica-northeast2": "abc",
    "northamerica-south1": "abc",
    "southamerica-east1": "abc",
    "southamerica-west1": "abc",
    "us-central1": "abcf",
    "us-central2": "abcd",
    "us-east1": "bcd",
    "us-east4": "abc",
    "us-east5": "abc",
    "us-east7": "abc",
    "us-south1": "abc",
    "us-west1": "abc",
    "us-west2": "abc",
    "us-west3": "abc",
    "us-west4": "abc",
    "us-west8": "abc",
}
"""Region -> the letters of its zones."""
AI_ZONES: frozenset[str] = frozenset({"us-central1-ai1a"})
"""AI zones Cloud TPU documents ("TPU regions and zones"); they sit beside a region."""


def zone_problem(zone: str, region: str) -> str | None:
    """Why `zone` is not a zone of `region`, or None."""
    if not zone.startswith(region + "-"):
        return f"{zone} is not in gcp:region {region}"
    letters = ZONES.get(region)
    letter = zone.removeprefix(region + "-")
    if letters is None or zone in AI_ZONES or (len(letter) == 1 and letter in letters):
        return None
    zones = ", ".join(f"{region}-{letter}" for letter in letters)
    return f"{region} has no zone {zone}; its zones are {zones}"


_REGION = re.compile(REGION)


def region_of(location: str) -> str:
    """`us-east5-a` (or the AI zone `us-central1-ai1a`) -> `us-east5`; a region is its own."""
    return location if _REGION.fullmatch(location) else location.rsplit("-", 1)[0]
