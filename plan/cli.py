"""`uv run python -m plan <stack>`: print what `pulumi up` would create for a stack, offline.

Accepts a stack name (`dev` reads `Pulumi.dev.yaml`) or a path to a stack file. With
`--base <git-ref>` (or `--base <stack file>`) it prints only what would change since the stack
file at that ref, as `pulumi preview` would; `--json` prints the plan, and that diff, as JSON.
Exits 2 with the validation errors, and nothing else, when a config is invalid.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from plan.diff import diff
from plan.engine import (
    Graph,
    list_stacks,
    parse_stack_file,
    read_stack_file,
    run_program,
    stack_file,
)
from plan.render import diff_json, plan_json, render, render_diff
from prices import cost_change, cost_change_json, stack_cost
from stacks import environment
from stacks.config import StackConfig
from stacks.loading import parse
from stacks.messages import ConfigError


class PlanError(Exception):
    """A stack or base that cannot be read; the message says which and why."""


def _stack_path(target: str) -> tuple[str, Path]:
    """A stack name or stack file path -> (stack name, stack file)."""
    path = Path(target)
    if path.suffix in (".yaml", ".yml"):
        if not path.exists():
            raise PlanError(f"{target}: no such stack file")
        stack = path.name.split(".")[1] if path.name.startswith("Pulumi.") else path.stem
        return stack, path
    path = stack_file(target)
    if not path.exists():
        raise PlanError(f"{path.name} not found: stacks are {', '.join(list_stacks())}")
    return target, path


def _base_text(base: str, path: Path) -> tuple[str, str]:
    """The stack file as it was: `base` is a stack file path, or a git ref whose version of
    `path` is read with `git show`. Returns (text, where it came from)."""
    as_file = Path(base)
    if as_file.suffix in (".yaml", ".yml") and as_file.is_file():
        return as_file.read_text(), str(as_file)
    if not base or base.startswith("-"):
        # A leading '-' would reach git as an option.
        raise PlanError(f"--base {base!r}: expected a git ref or a stack file path")
    try:
        shown = subprocess.run(
            ["git", "-C", str(path.resolve().parent), "show", f"{base}:./{path.name}"],
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError as error:
        raise PlanError(f"--base {base}: cannot run git: {error}") from error
    if shown.returncode != 0:
        raise PlanError(f"--base {base}: git cannot show {path.name} there: {shown.stderr.strip()}")
    return shown.stdout, f"{base}:{path.name}"


def _build(raw: dict[str, Any], stack: str, which: str) -> tuple[StackConfig, Graph]:
    try:
        config = parse(raw, stack)
    except ConfigError as error:
        raise PlanError(f"{which}:\n{error}" if which else str(error)) from error
    graph = run_program(raw, stack=stack)
    # The mock engine accepts two resources with one URN; `pulumi up` would not.
    seen: set[str] = set()
    twice = sorted({u for u in graph.urns if u in seen or seen.add(u)})
    if twice:
        raise PlanError(
            "the program registers two resources with one URN:\n  " + "\n  ".join(twice)
        )
    return config, graph


def build_stack(target: str) -> tuple[str, StackConfig, Graph]:
    """The stack name, validated config and plan of `target` (a stack name or file), built as
    the plan command builds them; raises `PlanError` or `ConfigError`."""
    stack, path = _stack_path(target)
    config, graph = _build(read_stack_file(path), stack, "")
    return stack, config, graph


def run(target: str, base: str | None, as_json: bool) -> str:
    """The plan of `target` (a stack name or file), or with `base` what changes since then."""
    stack, path = _stack_path(target)
    if base is None:
        config, graph = _build(read_stack_file(path), stack, "")
        if as_json:
            return json.dumps(plan_json(graph, config, stack), indent=2)
        return render(graph, config, stack)
    # Read the base first: a bad ref fails before any program runs.
    text, origin = _base_text(base, path)
    config, graph = _build(read_stack_file(path), stack, "")
    base_config, before = _build(
        parse_stack_file(text), stack, f"the stack file at {origin} is invalid"
    )
    changes = diff(before, graph)
    # What the provider's update does not show, such as VMs that keep a VPC's old MTU.
    notices = environment.diff_notices(base_config, config)
    # A deleted resource's config key is the one it had before.
    keys = {**before.config_keys(), **graph.config_keys()}
    costs = stack_cost(base_config, before), stack_cost(config, graph)
    if as_json:
        document = {**plan_json(graph, config, stack), "diff": diff_json(changes, keys, base)}
        document["diff"]["notices"] = notices
        document["diff"]["cost"] = cost_change_json(*costs)
        return json.dumps(document, indent=2)
    heading = f"Changes to stack '{stack}' ({path.name}) since {origin}:"
    shown = render_diff(changes, keys, heading) + "".join(f"\n\n! {n}" for n in notices)
    return "\n".join([shown, "", *cost_change(*costs)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m plan", description=__doc__)
    parser.add_argument(
        "stack",
        nargs="?",
        default="dev",
        help=f"stack name ({', '.join(list_stacks())}) or a stack file path",
    )
    parser.add_argument(
        "--base",
        metavar="REF",
        help="print only what changes since the stack file at this git ref (or this stack file)",
    )
    parser.add_argument("--json", action="store_true", help="print the plan (and diff) as JSON")
    args = parser.parse_args(argv)
    try:
        print(run(args.stack, args.base, args.json))
    except (PlanError, ConfigError) as error:
        print(error, file=sys.stderr)
        return 2
    return 0
