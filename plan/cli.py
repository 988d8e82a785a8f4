"""`uv run python -m plan <stack>`: print what `pulumi up` would create for a stack, offline.

Accepts a stack name (`dev` reads `Pulumi.dev.yaml`) or a path to a stack file, read as the
Pulumi CLI reads it (stacks/loading.py). With `--base <git-ref>` it prints only what would
change since that ref, as `pulumi preview` would, with the base built by the ref's own code
and stack file (plan/base.py); `--base <stack file>` builds that file with this checkout's code.
`--json` prints the plan, and that diff, as JSON. Exits 2 with the validation errors, and
nothing else, when a config is invalid.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.network import DEFAULT_MTU
from plan import base as bases
from plan import reachability, summary
from plan.diff import GraphDiff, diff
from plan.engine import Graph, list_stacks, run_program, stack_file
from plan.render import diff_json, plan_json, render, render_diff
from prices import CostReport, cost_change, cost_change_json, stack_cost
from stacks import environment
from stacks.config import StackConfig
from stacks.loading import StackFile, parse, read_stack_text
from stacks.messages import NAMESPACE, ConfigError

_NO_BASE_COST = (
    "Cost change: not shown; the stack file at {} does not parse with this checkout's code, "
    "whose prices and rules the cost needs (the plan of each side shows its own)."
)


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


def _read(path: Path) -> StackFile:
    read = read_stack_text(path.read_text())
    for warning in read.warnings:
        print(f"warning: {path.name}: {warning}", file=sys.stderr)
    return read


def _build(raw: dict[str, str], stack: str) -> tuple[StackConfig, Graph]:
    # The program validates the same strings at `pulumi up` (stacks.loading.load).
    config = parse(raw, stack)
    graph = run_program(raw, stack=stack)
    # The mock engine accepts two resources with one URN; `pulumi up` would not.
    seen: set[str] = set()
    twice = sorted({u for u in graph.urns if u in seen or seen.add(u)})
    if twice:
        raise PlanError(
            "the program registers two resources with one URN:\n  " + "\n  ".join(twice)
        )
    return config, graph


def _shown(path: Path) -> str:
    """A path as the heading shows it: relative to here when it can be."""
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return str(path)
    return str(path.resolve()) if relative.startswith("..") else relative


def _start_base(base: str, path: Path, stack: str) -> bases.Pending:
    as_file = Path(base)
    if as_file.suffix in (".yaml", ".yml") and as_file.is_file():
        return bases.Pending(bases.from_file(as_file, stack))
    return bases.start(base, path, stack)


def _heading(stack: str, path: Path, base: bases.Base, ref: str) -> str:
    this = path.name
    as_file = Path(ref)
    if as_file.is_file() and as_file.name == path.name:
        # Two files of one name: say which is which.
        this, origin = f"{_shown(path)} (new)", f"{_shown(as_file)} (base)"
    else:
        origin = base.origin
    return f"Changes to stack '{stack}' ({this}) since {origin}:"


@dataclass(frozen=True)
class Report:
    """One run of the plan: the stack as it is, and with a base what changes since then. The
    text and the JSON are two renderings of it."""

    stack: str
    path: Path
    config: StackConfig
    graph: Graph
    base_ref: str | None = None
    base: bases.Base | None = None

    def text(self) -> str:
        if self.base is None or self.base_ref is None:
            return render(self.graph, self.config, self.stack)
        changes, keys, moved = self._diff()
        heading = _heading(self.stack, self.path, self.base, self.base_ref)
        shown = render_diff(changes, keys, heading, moved)
        shown += "".join(f"\n\n! {n}" for n in self._notices())
        paths = reachability.opened(self.base.graph, self.graph)
        if paths:
            shown += "\n\nReachability:\n" + "\n".join(f"  {p}" for p in paths)
        costs = self._costs()
        if costs is None:
            return "\n".join([shown, "", _NO_BASE_COST.format(self.base.origin)])
        return "\n".join([shown, "", *cost_change(*costs)])

    def json(self) -> dict[str, Any]:
        document = plan_json(self.graph, self.config, self.stack)
        if self.base is None or self.base_ref is None:
            return document
        changes, keys, moved = self._diff()
        before = summary.summarize(self.base.graph)
        costs = self._costs()
        return {
            **document,
            "diff": {
                **diff_json(changes, keys, self.base_ref, before),
                "numbers": moved,
                "notices": self._notices(),
                "reachability": reachability.opened(self.base.graph, self.graph),
                "cost": None if costs is None else cost_change_json(*costs),
            },
        }

    def _notices(self) -> list[str]:
        """What the provider's update does not show, such as VMs that keep a VPC's old MTU;
        the MTUs are read from the two plans, so that one the code's default moves is said
        as an edit to the stack file is."""
        assert self.base is not None
        return environment.diff_notices(self.config, mtu_changes(self.base.graph, self.graph))

    def _costs(self) -> tuple[CostReport, CostReport] | None:
        """The cost before and after; a new stack costs nothing before. None when the base's
        stack file does not parse with this checkout's code, which prices it."""
        assert self.base is not None
        if self.base.new_stack:
            return CostReport(lines=(), teams={}), stack_cost(self.config, self.graph)
        if self.base.config is None:
            return None
        return stack_cost(self.base.config, self.base.graph), stack_cost(self.config, self.graph)

    def _diff(self) -> tuple[GraphDiff, dict[str, str], list[str]]:
        assert self.base is not None
        before = self.base.graph
        changes = diff(before, self.graph, protect_key=f"{NAMESPACE}:protect")
        # A deleted resource's config key is the one it had before.
        keys = {**before.config_keys(), **self.graph.config_keys()}
        moved = summary.compare(summary.summarize(before), summary.summarize(self.graph))
        return changes, keys, moved


def mtu_changes(before: Graph, after: Graph) -> dict[str, tuple[int, int]]:
    """VPC name -> (old MTU, new MTU) for each network in both graphs whose MTU moves."""
    old = {r.urn: r for r in before.of_type("gcp:compute/network:Network")}
    changes = {}
    for r in after.of_type("gcp:compute/network:Network"):
        if r.urn not in old:
            continue
        was = int(old[r.urn].inputs.get("mtu") or DEFAULT_MTU)
        now = int(r.inputs.get("mtu") or DEFAULT_MTU)
        if was != now:
            changes[str(r.inputs.get("name", r.name))] = (was, now)
    return changes


def build_stack(target: str) -> tuple[str, StackConfig, Graph]:
    """The stack name, validated config and plan of `target` (a stack name or file), built as
    the plan command builds them; raises `PlanError` or `ConfigError`."""
    stack, path = _stack_path(target)
    config, graph = _build(_read(path).config, stack)
    return stack, config, graph


def load_stack(target: str) -> tuple[str, StackConfig]:
    """The stack name and validated config of `target`, without building the plan (for
    commands that act on what the config names, such as `python -m hosts`)."""
    stack, path = _stack_path(target)
    return stack, parse(_read(path).config, stack)


def report(target: str, base: str | None) -> Report:
    """Build `target` (a stack name or file) and, with `base`, the stack as it was."""
    stack, path = _stack_path(target)
    raw = _read(path).config
    if base is None:
        return Report(stack, path, *_build(raw, stack))
    # A bad ref fails before any program runs; the base builds alongside the current side.
    pending = _start_base(base, path, stack)
    try:
        config, graph = _build(raw, stack)
    except BaseException:
        pending.cancel()
        raise
    return Report(stack, path, config, graph, base, pending.result())


def run(target: str, base: str | None, as_json: bool) -> str:
    """The plan of `target`, or with `base` what changes since then, as text or JSON."""
    built = report(target, base)
    return json.dumps(built.json(), indent=2) if as_json else built.text()


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
        help="print only what changes since this git ref (its code and stack file), or since "
        "this stack file",
    )
    parser.add_argument("--json", action="store_true", help="print the plan (and diff) as JSON")
    args = parser.parse_args(argv)
    try:
        print(run(args.stack, args.base, args.json))
    except (PlanError, ConfigError, bases.BaseError) as error:
        print(error, file=sys.stderr)
        return 2
    return 0
