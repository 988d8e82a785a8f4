"""The APIs the stack enables (its `gcp:projects/service:Service` resources) are enabled, or
`pulumi up` can enable them: the identity holds `serviceusage.services.enable` and no
`serviceuser.services` org policy denies them. Billing is its own check."""

from __future__ import annotations

from google.api_core import exceptions
from google.cloud import service_usage_v1

from preflight import org_policy
from preflight.live import CannotCheck, Live
from preflight.needs import Needs
from preflight.report import Finding, fail, ok, warn

NAME = "apis"
MEANING = (
    "each API the stack enables is on, or can be turned on (exists, the identity may enable "
    "it, no org policy denies it)"
)
ENABLE = "serviceusage.services.enable"
RESTRICT = "serviceuser.services"
"""The list constraint that limits which services may be enabled (Organization Policy
"Restricting resource usage": constraints/serviceuser.services)."""


def _denied(live: Live, services: list[str]) -> tuple[dict[str, str], Finding | None]:
    """Services the org policy denies, with why; or a finding when it cannot be read."""
    try:
        policy = org_policy.ListPolicy.of(live.effective_policy(RESTRICT))
    except (CannotCheck, exceptions.NotFound) as error:
        return {}, warn(NAME, f"org policy {RESTRICT}", str(error))
    return {s: why for s in services if (why := policy.refuses(s, org_policy.exact))}, None


def check(needs: Needs, live: Live) -> list[Finding]:
    subject = "APIs the stack enables"
    try:
        states = live.service_states(needs.services)
    except CannotCheck as error:
        return [warn(NAME, subject, str(error))]
    enabled = [s for s in needs.services if states.get(s) == service_usage_v1.State.ENABLED]
    off = [s for s in needs.services if s not in enabled]
    findings = []
    if enabled:
        names = ", ".join(s.removesuffix(".googleapis.com") for s in enabled)
        findings.append(ok(NAME, subject, f"{len(enabled)} enabled: {names}"))
    if not off:
        return findings
    try:
        may_enable = ENABLE in live.granted([ENABLE])
    except CannotCheck as error:
        may_enable = None
        findings.append(warn(NAME, ENABLE, str(error)))
    denied, unreadable = _denied(live, off)
    if unreadable is not None:
        findings.append(unreadable)
    for service in off:
        if service not in states:
            findings.append(
                fail(NAME, service, "Service Usage does not know it", "check the service name")
            )
        elif service in denied:
            findings.append(
                fail(
                    NAME,
                    service,
                    f"disabled, and org policy {RESTRICT} denies enabling it ({denied[service]})",
                    "ask your organization's policy admin to allow it",
                )
            )
        elif may_enable is False:
            findings.append(
                fail(
                    NAME,
                    service,
                    f"disabled, and this identity lacks {ENABLE}",
                    "grant roles/serviceusage.serviceUsageAdmin, or enable it: "
                    f"gcloud services enable {service} --project {needs.project}",
                )
            )
        else:
            findings.append(ok(NAME, service, "disabled; pulumi up enables it"))
    return findings
