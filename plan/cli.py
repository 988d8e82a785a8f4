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
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol

from components import slurm
from components.network import DEFAULT_MTU
from graph import types
from plan import base as bases
from plan import markdown, reachability, summary
from plan.diff import GraphDiff, diff
from plan.engine import Graph, list_stacks, run_program, stack_file
from plan.render import SCHEMA_VERSION, diff_json, plan_json, render, render_diff
from stacks import environment
from stacks.config import StackConfig
from stacks.loading import StackFile, parse, read_stack_text
from stacks.messages import NAMESPACE, ConfigError

_NO_BASE_COST = (
    "Cost change: not shown; the stack file at {} does not parse with this checkout's code, "
    "whose prices and rules the cost needs (the plan of each side shows its own)."
)


Side = tuple[StackConfig, Graph]
"""One side of a diff: the validated config and the graph it registers."""


class Costing(Protocol):
    """What the plan shows of a stack's cost. The cost model reads the graph itself (prices/,
    on graph.capacity); `python -m plan` hands it in (plan/__main__.py), so that the plan and
    the cost import nothing of each other. Without one, the plan shows no cost."""

    def section(self, side: Side) -> list[str]:
        """The plan's cost section."""
        ...

    def document(self, side: Side) -> dict[str, Any]:
        """The plan's cost as JSON."""
        ...

    def change(self, before: Side | None, after: Side) -> list[str]:
        """A diff's cost change; `before` None for a new stack."""
        ...

    def change_document(self, before: Side | None, after: Side) -> dict[str, Any]: ...

    def change_totals(self, before: Side | None, after: Side) -> list[str]:
        """The stack's idle and full-scale cost before and after, one line each."""
        ...


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


EXIT_OK = 0
"""The plan was made; with `--base`, nothing changes."""
EXIT_ERROR = 1
"""No plan: an invalid config, a stack file or base that cannot be read."""
EXIT_CHANGES = 2
"""With `--base`: `pulumi up` would change something, and can."""
EXIT_REFUSED = 3
"""With `--base`: `pulumi up` would refuse a step or could not complete it, or (with
`--fail-on-destructive`) a stateful or protected resource is replaced or deleted."""

ChangeSection = Callable[[Graph, Graph], list[str]]
"""What changes between the base's graph and this one in one respect, as lines; empty when
nothing does."""
CHANGE_SECTIONS: dict[str, tuple[str, ChangeSection]] = {
    "reachability": ("Reachability", reachability.opened),
}
"""JSON key -> (title, section) of the diff beyond its resources, numbers and cost, which the
text (under its title, when it says something), the JSON (`diff.<key>`, always) and the
markdown summary all carry: the paths an edit opens or closes between principals."""


@dataclass(frozen=True)
class Report:
    """One run of the plan: the stack as it is, and with a base what changes since then. The
    text, the JSON and the markdown summary are renderings of it."""

    stack: str
    path: Path
    config: StackConfig
    graph: Graph
    base_ref: str | None = None
    base: bases.Base | None = None
    costing: Costing | None = None

    @property
    def side(self) -> Side:
        return self.config, self.graph

    def text(self) -> str:
        if self.base is None or self.base_ref is None:
            cost = self.costing.section(self.side) if self.costing is not None else []
            return render(self.graph, self.config, self.stack, cost)
        changes, keys, moved = self.changes
        heading = _heading(self.stack, self.path, self.base, self.base_ref)
        shown = render_diff(changes, keys, heading, moved)
        shown += "".join(f"\n\n! {n}" for n in self.notices)
        for key, lines in self.sections.items():
            if lines:
                title = CHANGE_SECTIONS[key][0]
                shown += "\n\n" + "\n".join([f"{title}:", *(f"  {line}" for line in lines)])
        if self.costing is None:
            return shown
        sides = self._cost_sides()
        if sides is None:
            return "\n".join([shown, "", _NO_BASE_COST.format(self.base.origin)])
        return "\n".join([shown, "", *self.costing.change(*sides)])

    def json(self, fail_on_destructive: bool = False) -> dict[str, Any]:
        cost = self.costing.document(self.side) if self.costing is not None else None
        document = plan_json(self.graph, self.config, self.stack, cost)
        if self.base is None or self.base_ref is None:
            return {**document, "exitCode": EXIT_OK}
        changes, keys, moved = self.changes
        before = summary.summarize(self.base.graph)
        sides = self._cost_sides()
        return {
            **document,
            "exitCode": self.exit_code(fail_on_destructive),
            "diff": {
                **diff_json(changes, keys, self.base_ref, before),
                "numbers": moved,
                "notices": self.notices,
                **self.sections,
                "cost": None
                if sides is None or self.costing is None
                else self.costing.change_document(*sides),
            },
        }

    def markdown(self, fail_on_destructive: bool = False) -> str:
        """The diff as a pull-request comment (needs a base)."""
        assert self.base is not None and self.base_ref is not None
        changes, keys, moved = self.changes
        sides = self._cost_sides()
        if self.costing is None:
            cost: list[str] = []
        elif sides is None:
            cost = [_NO_BASE_COST.format(self.base.origin).removeprefix("Cost change: ")]
        else:
            cost = self.costing.change_totals(*sides)
        return markdown.summary(
            markdown.Change(
                stack=self.stack,
                base=self.base_ref,
                changes=changes,
                keys=keys,
                numbers=moved,
                cost=cost,
                sections={
                    **{CHANGE_SECTIONS[k][0]: lines for k, lines in self.sections.items() if lines},
                    **({"Notices": self.notices} if self.notices else {}),
                },
                exit_code=self.exit_code(fail_on_destructive),
            )
        )

    def exit_code(self, fail_on_destructive: bool = False) -> int:
        """`EXIT_OK` for a plan or a diff with no changes, `EXIT_CHANGES` for one `pulumi up`
        can apply, `EXIT_REFUSED` for one it would refuse or not complete (or, with
        `fail_on_destructive`, that replaces or deletes a stateful or protected resource)."""
        if self.base is None:
            return EXIT_OK
        changes = self.changes[0]
        shown = [c for c in changes if not c.is_component]
        if any(c.refusal or c.blocked for c in shown):
            return EXIT_REFUSED
        if fail_on_destructive and changes.destructive:
            return EXIT_REFUSED
        return EXIT_CHANGES if shown else EXIT_OK

    @cached_property
    def notices(self) -> list[str]:
        """What the provider's update does not show, such as VMs that keep a VPC's old MTU;
        the MTUs are read from the two plans, so that one the code's default moves is said
        as an edit to the stack file is."""
        assert self.base is not None
        before = self.base.config.slurm if self.base.config is not None else None
        return environment.diff_notices(
            self.config, mtu_changes(self.base.graph, self.graph)
        ) + slurm.edit_notices(before, self.config.slurm)

    @cached_property
    def sections(self) -> dict[str, list[str]]:
        """JSON key -> the lines of each of `CHANGE_SECTIONS` (empty: nothing to say)."""
        assert self.base is not None
        return {
            key: make(self.base.graph, self.graph) for key, (_, make) in CHANGE_SECTIONS.items()
        }

    def _cost_sides(self) -> tuple[Side | None, Side] | None:
        """(before, after) of the cost change, `before` None for a new stack, which costs
        nothing; None when the base's stack file does not parse with this checkout's code,
        which prices it."""
        assert self.base is not None
        if self.base.new_stack:
            return None, self.side
        if self.base.config is None:
            return None
        return (self.base.config, self.base.graph), self.side

    @cached_property
    def changes(self) -> tuple[GraphDiff, dict[str, str], list[str]]:
        """The diff, each resource's config key (a deleted one's as it was), and how the
        numbers move."""
        assert self.base is not None
        before = self.base.graph
        changes = diff(before, self.graph, protect_key=f"{NAMESPACE}:protect")
        keys = {**before.config_keys(), **self.graph.config_keys()}
        moved = summary.compare(summary.summarize(before), summary.summarize(self.graph))
        return changes, keys, moved


def mtu_changes(before: Graph, after: Graph) -> dict[str, tuple[int, int]]:
    """VPC name -> (old MTU, new MTU) for each network in both graphs whose MTU moves."""
    old = {r.urn: r for r in before.of_type(types.NETWORK)}
    changes = {}
    for r in after.of_type(types.NETWORK):
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


def report(target: str, base: str | None, costing: Costing | None = None) -> Report:
    """Build `target` (a stack name or file) and, with `base`, the stack as it was."""
    stack, path = _stack_path(target)
    raw = _read(path).config
    if base is None:
        return Report(stack, path, *_build(raw, stack), costing=costing)
    # A bad ref fails before any program runs; the base builds alongside the current side.
    pending = _start_base(base, path, stack)
    try:
        config, graph = _build(raw, stack)
    except BaseException:
        pending.cancel()
        raise
    return Report(stack, path, config, graph, base, pending.result(), costing)


def main(argv: list[str] | None = None, costing: Costing | None = None) -> int:
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
    try:
        built = report(args.stack, args.base, costing)
    except (PlanError, ConfigError, bases.BaseError) as error:
        if args.json:
            print(json.dumps(error_json(error), indent=2))
        else:
            print(error, file=sys.stderr)
        return EXIT_ERROR
    if args.json:
        print(json.dumps(built.json(args.fail_on_destructive), indent=2))
    elif args.markdown:
        print(built.markdown(args.fail_on_destructive))
    else:
        print(built.text())
    return built.exit_code(args.fail_on_destructive)


def run(target: str, base: str | None, as_json: bool, costing: Costing | None = None) -> str:
    """The plan of `target`, or with `base` what changes since then, as text or JSON."""
    built = report(target, base, costing)
    return json.dumps(built.json(), indent=2) if as_json else built.text()


def error_json(error: Exception) -> dict[str, Any]:
    """Why there is no plan, as `--json` prints it: the config's problems one by one."""
    problems = (
        [{"path": path, "message": message} for path, message in error.rendered]
        if isinstance(error, ConfigError)
        else []
    )
    kind = {ConfigError: "config", bases.BaseError: "base"}.get(type(error), "plan")
    return {
        "schemaVersion": SCHEMA_VERSION,
        "exitCode": EXIT_ERROR,
        "error": {"kind": kind, "message": str(error), "problems": problems},
    }
