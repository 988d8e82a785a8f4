"""The stack's project exists and is active. Every other check reads it; when it cannot be
read, they are skipped."""

from __future__ import annotations

from google.cloud import resourcemanager_v3

from preflight.live import CannotCheck, Live
from preflight.needs import Needs
from preflight.report import Finding, fail, ok

NAME = "project"
MEANING = "the stack's gcp:project exists, is ACTIVE, and this identity can read it"


def check(needs: Needs, live: Live) -> list[Finding]:
    subject = f"project {needs.project}"
    try:
        project = live.project_info()
    except CannotCheck as error:
        # Resource Manager answers 403, not 404, for a project that does not exist as for one
        # the caller may not read.
        return [
            fail(
                NAME,
                subject,
                f"does not exist, or this identity may not read it ({error})",
                "check gcp:project, and grant resourcemanager.projects.get (roles/viewer)",
            )
        ]
    state = resourcemanager_v3.Project.State(project.state)
    if state != resourcemanager_v3.Project.State.ACTIVE:
        return [
            fail(
                NAME,
                subject,
                f"is {state.name}",
                f"restore it (gcloud projects undelete {needs.project}) or use another project",
            )
        ]
    return [ok(NAME, subject, f"ACTIVE, number {live.number}")]
