"""Bucket names are global: each bucket the plan creates is either free or already this
project's (a stack that is up). A name another project holds makes `pulumi up` fail with 409.
"""

from __future__ import annotations

from google.api_core import exceptions

from preflight.live import CannotCheck, Live
from preflight.needs import Needs
from preflight.report import Finding, fail, ok, warn

NAME = "buckets"
MEANING = "every bucket name the plan creates is free, or already this project's"


def check(needs: Needs, live: Live) -> list[Finding]:
    findings = []
    for source, name in needs.buckets:
        subject = f"bucket {name}"
        fix = "choose another ai-infra:prefix or bucket name"
        try:
            bucket = live.bucket(name)
        except exceptions.Forbidden:
            findings.append(
                fail(
                    NAME,
                    subject,
                    f"exists and this identity may not read it ({source}); most likely another "
                    "project's",
                    f"{fix}; if it is this project's, grant storage.buckets.get",
                )
            )
            continue
        except CannotCheck as error:
            findings.append(warn(NAME, subject, str(error)))
            continue
        if bucket is None:
            findings.append(ok(NAME, subject, "free"))
        elif str(bucket.project_number) == live.number:
            findings.append(ok(NAME, subject, "already this project's"))
        else:
            findings.append(
                fail(NAME, subject, f"taken by project number {bucket.project_number}", fix)
            )
        if "." in name:
            findings.append(
                warn(
                    NAME,
                    subject,
                    "a name with dots needs its domain verified for this identity",
                    "verify the domain, or drop the dots",
                )
            )
    return findings
