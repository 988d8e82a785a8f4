"""`uv run python -m preflight <stack> [--json] [--list]`: build the stack's plan as
`python -m plan` does, derive what it needs of the live project, and check it with Application
Default Credentials, read-only. Each check prints `ok`, `warn` or `fail` with the figure and the
fix. Exits 0 when nothing fails, 1 when something does, 2 when the config is invalid or there
are no usable credentials.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

from plan.cli import PlanError, build_stack
from plan.engine import list_stacks
from preflight import CHECKS, run
from preflight.live import Clients, CredentialsError, Live
from preflight.needs import derive
from preflight.report import as_json, exit_code, render
from stacks.messages import ConfigError

CLOUD_PLATFORM = "https://www.googleapis.com/auth/cloud-platform"
NO_CREDENTIALS = """preflight needs Google Application Default Credentials and found none:
{reason}
Run:  gcloud auth application-default login
      gcloud auth application-default set-quota-project {project}
or point GOOGLE_APPLICATION_CREDENTIALS at a service account or workload identity credential file.
Preflight only reads the project; it changes nothing."""
STALE_CREDENTIALS = """Your Application Default Credentials could not be refreshed ({reason}).
Run gcloud auth application-default login again."""

Connect = Callable[[str], Clients]
"""Project id -> the clients to read it with."""


class CredentialsMissing(Exception):
    """No usable Application Default Credentials; the message says how to get them."""


def connect_with_adc(project: str) -> Clients:
    """The official clients on Application Default Credentials, refreshed once up front: under
    gRPC a refused refresh surfaces as UNAVAILABLE and would be retried for a minute
    (grpc/grpc#13322), so it is caught here instead."""
    import google.auth
    import google.auth.exceptions
    import google.auth.transport.requests

    try:
        credentials, _ = google.auth.default(scopes=[CLOUD_PLATFORM], quota_project_id=project)
    except google.auth.exceptions.DefaultCredentialsError as error:
        raise CredentialsMissing(NO_CREDENTIALS.format(reason=error, project=project)) from None
    try:
        credentials.refresh(google.auth.transport.requests.Request())
    except (google.auth.exceptions.RefreshError, google.auth.exceptions.TransportError) as error:
        raise CredentialsMissing(STALE_CREDENTIALS.format(reason=error)) from None
    return Clients.connect(credentials, project)


def listing(as_json_: bool) -> str:
    if as_json_:
        return json.dumps([{"check": c.NAME, "meaning": c.MEANING} for c in CHECKS], indent=2)
    width = max(len(c.NAME) for c in CHECKS)
    return "\n".join(f"{c.NAME:<{width}}  {c.MEANING}" for c in CHECKS)


def main(argv: list[str] | None = None, connect: Connect = connect_with_adc) -> int:
    parser = argparse.ArgumentParser(prog="python -m preflight", description=__doc__)
    parser.add_argument(
        "stack",
        nargs="?",
        default="dev",
        help=f"stack name ({', '.join(list_stacks())}) or a stack file path",
    )
    parser.add_argument("--json", action="store_true", help="print the findings as JSON")
    parser.add_argument("--list", action="store_true", help="print every check and what it means")
    args = parser.parse_args(argv)
    if args.list:
        print(listing(args.json))
        return 0
    try:
        stack, config, graph = build_stack(args.stack)
        needs = derive(config, graph)
        findings = run(needs, Live(config.project, connect(config.project)))
    except (PlanError, ConfigError, CredentialsMissing) as error:
        print(error, file=sys.stderr)
        return 2
    except CredentialsError as error:
        print(STALE_CREDENTIALS.format(reason=error), file=sys.stderr)
        return 2
    if args.json:
        document = as_json(findings, stack=stack, project=config.project, region=config.region)
        print(json.dumps(document, indent=2))
    else:
        heading = (
            f"Preflight for stack '{stack}' (project {config.project}, {config.region}), read-only:"
        )
        print(render(findings, heading))
    return exit_code(findings)
