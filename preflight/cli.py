"""`uv run python -m preflight <stack> [--json] [--list]`: build the stack's plan as
`python -m plan` does, derive what it needs of the live project, and check it with Application
Default Credentials, read-only. Each check prints `ok`, `warn` or `fail` with the figure and the
fix.

Exit codes (docs/preflight.md):
  0  nothing fails
  1  a check fails: `pulumi up` would
  2  no check ran: an invalid config, a stack file that cannot be read, or no usable
     credentials (found out before the plan is built: where none can be on this machine in
     well under a second, else by refreshing them once)
With --json, an error that stops every check is a JSON document too.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from preflight import credentials

if TYPE_CHECKING:
    from preflight.live import Clients

REPO_ROOT = Path(__file__).resolve().parent.parent
CLOUD_PLATFORM = "https://www.googleapis.com/auth/cloud-platform"
NO_CREDENTIALS = """preflight needs Google Application Default Credentials and found none:
{reason}
Run:  gcloud auth application-default login
      gcloud auth application-default set-quota-project {project}
or point GOOGLE_APPLICATION_CREDENTIALS at a service account or workload identity credential file.
Preflight only reads the project; it changes nothing."""
STALE_CREDENTIALS = """Your Application Default Credentials could not be refreshed ({reason}).
Run gcloud auth application-default login again."""
EXIT_OK = 0
EXIT_FAILS = 1
EXIT_ERROR = 2

Connect = Callable[[str], "Clients"]
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

    from preflight.live import Clients

    try:
        credentials_, _ = google.auth.default(scopes=[CLOUD_PLATFORM], quota_project_id=project)
    except google.auth.exceptions.DefaultCredentialsError as error:
        raise CredentialsMissing(NO_CREDENTIALS.format(reason=error, project=project)) from None
    try:
        credentials_.refresh(google.auth.transport.requests.Request())
    except (google.auth.exceptions.RefreshError, google.auth.exceptions.TransportError) as error:
        raise CredentialsMissing(STALE_CREDENTIALS.format(reason=error)) from None
    return Clients.connect(credentials_, project)


def stacks() -> list[str]:
    return sorted(p.name.split(".")[1] for p in REPO_ROOT.glob("Pulumi.*.yaml"))


def _project_of(target: str) -> str:
    """The project a stack file names, for the login hint; read with nothing but YAML, before
    anything is built (`PROJECT` when it cannot be read so)."""
    path = Path(target)
    if path.suffix not in (".yaml", ".yml"):
        path = REPO_ROOT / f"Pulumi.{target}.yaml"
    try:
        config = (yaml.safe_load(path.read_text()) or {}).get("config") or {}
    except (OSError, yaml.YAMLError, AttributeError):
        return "PROJECT"
    return str(config.get("gcp:project", "PROJECT"))


def listing(as_json_: bool) -> str:
    from preflight import CHECKS

    if as_json_:
        return json.dumps([{"check": c.NAME, "meaning": c.MEANING} for c in CHECKS], indent=2)
    width = max(len(c.NAME) for c in CHECKS)
    return "\n".join(f"{c.NAME:<{width}}  {c.MEANING}" for c in CHECKS)


def _error(as_json: bool, kind: str, message: str, problems: list[dict[str, str]]) -> int:
    """An error that stops every check: its message on stderr, or with `--json` a document
    on stdout."""
    if as_json:
        error = {"kind": kind, "message": message, "problems": problems}
        print(json.dumps({"error": error, "exitCode": EXIT_ERROR}, indent=2))
    else:
        print(message, file=sys.stderr)
    return EXIT_ERROR


def main(argv: list[str] | None = None, connect: Connect | None = None) -> int:
    """`connect` stands in for Application Default Credentials (tests pass fakes); without
    it, credentials are looked for before anything is built."""
    parser = argparse.ArgumentParser(
        prog="python -m preflight",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "stack",
        nargs="?",
        default="dev",
        help=f"stack name ({', '.join(stacks())}) or a stack file path",
    )
    parser.add_argument("--json", action="store_true", help="print the findings as JSON")
    parser.add_argument("--list", action="store_true", help="print every check and what it means")
    args = parser.parse_args(argv)
    if args.list:
        print(listing(args.json))
        return EXIT_OK
    if connect is None:
        missing = credentials.missing()
        if missing is not None:
            message = NO_CREDENTIALS.format(reason=missing, project=_project_of(args.stack))
            return _error(args.json, "credentials", message, [])
        connect = connect_with_adc
    return _check(args.stack, args.json, connect)


def _check(target: str, as_json: bool, connect: Connect) -> int:
    from graph.stack import StackError, open_stack
    from preflight import run
    from preflight.live import CredentialsError, Live
    from preflight.needs import derive
    from preflight.report import as_json as findings_json
    from preflight.report import exit_code, render
    from stacks.messages import ConfigError

    try:
        # Credentials first: building the plan takes a minute or more, finding there are none
        # (a self-hosted runner whose metadata server has no account) a second. The project
        # is read from the stack file alone; the plan, built next, checks it.
        project = _project_of(target)
        clients = connect(project) if project != "PROJECT" else None
        opened = open_stack(target)
        stack, config = opened.name, opened.config
        if clients is None or config.project != project:
            clients = connect(config.project)
        findings = run(derive(config, opened.graph), Live(config.project, clients))
    except ConfigError as error:
        problems = [{"path": path, "message": message} for path, message in error.rendered]
        return _error(as_json, "config", str(error), problems)
    except StackError as error:
        return _error(as_json, "plan", str(error), [])
    except CredentialsMissing as error:
        return _error(as_json, "credentials", str(error), [])
    except CredentialsError as error:
        return _error(as_json, "credentials", STALE_CREDENTIALS.format(reason=error), [])
    about: dict[str, Any] = {"stack": stack, "project": config.project, "region": config.region}
    if as_json:
        print(json.dumps(findings_json(findings, **about), indent=2))
    else:
        heading = (
            f"Preflight for stack '{stack}' (project {config.project}, {config.region}), read-only:"
        )
        print(render(findings, heading))
    return exit_code(findings)
