"""Billing is enabled on the project: without it, no API the stack needs can be enabled and
nothing billable can be created."""

from __future__ import annotations

from preflight.live import CannotCheck, Live
from preflight.needs import Needs
from preflight.report import Finding, fail, ok, warn

NAME = "billing"
MEANING = "the project is linked to a billing account with billing enabled"


def check(needs: Needs, live: Live) -> list[Finding]:
    subject = f"billing of {needs.project}"
    try:
        info = live.billing()
    except CannotCheck as error:
        return [warn(NAME, subject, str(error))]
    if not info.billing_enabled:
        return [
            fail(
                NAME,
                subject,
                "not enabled",
                f"link a billing account: gcloud billing projects link {needs.project} "
                "--billing-account=ACCOUNT_ID",
            )
        ]
    account = info.billing_account_name or "an account"
    return [ok(NAME, subject, f"enabled ({account})")]
