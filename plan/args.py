"""`uv run python -m plan <stack>`: print what `pulumi up` would create for a stack, offline.

Accepts a stack name (`dev` reads `Pulumi.dev.yaml`) or a path to a stack file, read as the
Pulumi CLI reads it (stacks/loading.py). With `--base <git-ref>` it prints only what would
change since that ref, as `pulumi preview` would, with the base built by the ref's own code
and stack file (plan/base.py); `--base <stack file>` builds that file with this checkout's code.
`--json` prints the plan, and that diff, as JSON (schema/plan-output.schema.json);
`--markdown` prints the diff as a pull-request comment.

Exit codes (docs/plan.md):
  0  the plan was made; with --base, nothing changes
  1  no plan: an invalid config (its problems, and nothing else), a stack file or base that
     cannot be read
  2  with --base: pulumi up would change something, and can
  3  with --base: pulumi up would refuse a step (a protected resource) or could not complete
     it (a replaced resource others still use); with --fail-on-destructive, also any replace
     or delete of a stateful (Filestore, disk, bucket, cluster, namespace) or protected
     resource
"""

from __future__ import annotations

import argparse

from graph.files import list_stacks

EXIT_OK = 0
"""The plan was made; with `--base`, nothing changes."""
EXIT_ERROR = 1
"""No plan: an invalid config, a stack file or base that cannot be read."""
EXIT_CHANGES = 2
"""With `--base`: `pulumi up` would change something, and can."""
EXIT_REFUSED = 3
"""With `--base`: `pulumi up` would refuse a step or could not complete it, or (with
`--fail-on-destructive`) a stateful or protected resource is replaced or deleted."""


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command's flags, read before the plan's code and the SDKs are imported: `--help`
    and a wrong flag answer at once."""
    parser = argparse.ArgumentParser(
        prog="python -m plan",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
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
        "replaced or deleted",
    )
    args = parser.parse_args(argv)
    if (args.markdown or args.fail_on_destructive) and args.base is None:
        parser.error("--markdown and --fail-on-destructive need --base")
    return args
