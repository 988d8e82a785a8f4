"""Every preflight check, in the order it runs and prints, and how one run goes: the project
first, and when it cannot be read the rest skipped.
"""

from __future__ import annotations

from types import ModuleType

from preflight import (
    apis,
    billing,
    buckets,
    gke,
    org_policy,
    permissions,
    project,
    quota,
    reservations,
    zones,
)
from preflight.live import CannotCheck, Live
from preflight.needs import Needs
from preflight.report import Finding, warn

CHECKS: tuple[ModuleType, ...] = (
    project,
    billing,
    apis,
    permissions,
    org_policy,
    quota,
    reservations,
    zones,
    gke,
    buckets,
)
"""Every check, in the order it runs and prints; each has NAME, MEANING and check()."""

__all__ = ["CHECKS", "run"]


def run(needs: Needs, live: Live) -> list[Finding]:
    """Every check's findings. When the project cannot be read, the others are skipped."""
    first, *rest = CHECKS
    findings = first.check(needs, live)
    if any(f.status == "fail" for f in findings):
        return findings + [warn(c.NAME, "skipped", "the project could not be read") for c in rest]
    for check in rest:
        try:
            findings += check.check(needs, live)
        except CannotCheck as error:
            findings.append(warn(check.NAME, "the check", str(error)))
    return findings
