"""`uv run python -m plan <stack>`: print what `pulumi up` would create for a stack, offline.

Accepts a stack name (`dev` reads `Pulumi.dev.yaml`) or a path to a stack file, read as the
Pulumi CLI reads it (stacks/loading.py). With `--base <git-ref>` it prints only what would
change since that ref, as `pulumi preview` would, with the base built by the ref's own code
and stack file (plan/base.py); `--base <stack file>` builds that file with this checkout's code.
`--json` prints the plan, and that diff, as JSON (schema/plan-output.schema.json);
`--markdown` prints the diff as a pull-request comment.

Exit codes (docs/plan.md), as `terraform plan -detailed-exitcode` reads them:
  0  the plan was made; with --base, nothing changes
  1  no plan: a flag this command does not know or lacks a value, an invalid config (its
     problems, and nothing else), a stack file or base that cannot be read
  2  with --base: pulumi up would change something, and can
  3  with --base: pulumi up would refuse a step (a protected resource) or could not complete
     it (a replaced resource others still use); with --fail-on-destructive, also any replace
     or delete of a stateful (Filestore, disk, bucket, cluster, namespace) or protected
     resource
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import NoReturn

from components.text import printable
from graph.files import list_stacks

EXIT_OK = 0
"""The plan was made; with `--base`, nothing changes."""
EXIT_ERROR = 1
"""No plan: a flag it does not know or lacks a value, an invalid config, a stack file or base
that cannot be read."""
EXIT_CHANGES = 2
"""With `--base`: `pulumi up` would change something, and can."""
EXIT_REFUSED = 3
"""With `--base`: `pulumi up` would refuse a step or could not complete it, or (with
`--fail-on-destructive`) a stateful or protected resource is replaced or deleted."""


MARKER = "<!-- ai-infra-plan:stack={stack} -->"
"""The first line of every `--markdown` comment, one per stack: a workflow finds the comment it
posted for this stack by it and edits it (docs/plan.md)."""


class UsageError(Exception):
    """Flags the command cannot run with; the message says which and why."""

    def __init__(self, message: str, usage: str) -> None:
        super().__init__(message)
        self.usage = usage


class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on a usage error, which a CI reading `-detailed-exitcode`'s codes
    takes for "changes": this one raises `UsageError` instead, for the command to exit 1."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message, self.format_usage())


def _parser() -> argparse.ArgumentParser:
    # No abbreviations: `--fail` must not pass for `--fail-on-destructive` in a gate, and a
    # flag added later must not change what an abbreviation meant.
    parser = _Parser(
        prog="python -m plan",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    parser.add_argument(
        "stack",
        nargs="?",
        default="dev",
        help=f"stack name ({', '.join(list_stacks())}) or a stack file path",
    )
    parser.add_argument(
        "--base",
        metavar="REF",
        help="print only what changes since this git ref (its code and stack file), or since "
        "this stack file",
    )
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument("--json", action="store_true", help="print the plan (and diff) as JSON")
    shown.add_argument(
        "--markdown",
        action="store_true",
        help="with --base: print the diff as a pull-request comment",
    )
    parser.add_argument(
        "--fail-on-destructive",
        action="store_true",
        help=f"with --base: exit {EXIT_REFUSED} when a stateful or protected resource is "
        "replaced or deleted, or a change loses data",
    )
    return parser


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command's flags, read before the plan's code and the SDKs are imported: `--help`
    and a wrong flag answer at once. Raises `UsageError` for flags it cannot run with."""
    parser = _parser()
    args = parser.parse_args(argv)
    if (args.markdown or args.fail_on_destructive) and args.base is None:
        parser.error("--markdown and --fail-on-destructive need --base")
    return args


def stack_named(argv: list[str]) -> str:
    """The stack a command line names, as the plan would call it, read without argparse (for
    a command line argparse refused): the first word that is neither a flag nor a flag's
    value; `dev` when there is none."""
    words = iter(argv)
    for word in words:
        if word == "--base":
            next(words, None)
        elif not word.startswith("-"):
            path = Path(word)
            if path.suffix in (".yaml", ".yml"):
                return path.name.split(".")[1] if path.name.startswith("Pulumi.") else path.stem
            return word
    return "dev"


def usage_failure(argv: list[str], error: UsageError) -> tuple[str, str]:
    """(stdout, stderr) of a refused command line: with `--json` an error document, with
    `--markdown` a pull-request comment saying why there is no plan, and the usage on stderr."""
    message = printable(f"python -m plan: error: {error}")
    stderr = f"{printable(error.usage)}{message}"
    if "--markdown" in argv:
        return error_comment(stack_named(argv), message), stderr
    if "--json" in argv:
        document = {
            "schemaVersion": SCHEMA_VERSION,
            "exitCode": EXIT_ERROR,
            "error": {"kind": "usage", "message": str(error), "problems": []},
        }
        return json.dumps(document, indent=2), stderr
    return "", stderr


SCHEMA_VERSION = 4
"""Of `--json` (schema/plan-output.schema.json); plan/render.py says what each version added."""


def error_comment(stack: str, why: str) -> str:
    """The pull-request comment of a run that made no plan: the check fails (exit 1), and the
    comment says why, under the stack's marker so that it replaces the stack's last one."""
    why = printable(why)
    fence = fence_for(why)
    return "\n".join(
        [
            MARKER.format(stack=marker_safe(stack)),
            f"### ai-infra `{marker_safe(stack)}`: no plan (exit {EXIT_ERROR})",
            "",
            "The plan could not be made, so this check fails; nothing was compared:",
            "",
            fence,
            why,
            fence,
        ]
    )


def fence_for(text: str) -> str:
    """A code fence longer than any run of backticks in `text`, so that the text cannot close
    it (CommonMark: a fence closes only on a run at least as long)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def marker_safe(stack: str) -> str:
    """A stack name as the marker and heading hold it: no character that could end the HTML
    comment or the code span."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in stack)
