"""The offline plan and its diff as one report (`Report`): built with `report()` for a stack
name or file and an optional base, rendered as text, JSON or a pull-request comment. The
command line, its flags and exit codes are `plan/args.py`; `python -m plan` composes this with
the cost (plan/__main__.py).
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

from components.network import DEFAULT_MTU
from components.text import printable
from graph import reachability, types
from graph.engine import Graph
from graph.stack import StackError, open_stack, read
from plan import base as bases
from plan import markdown, summary
from plan.args import (
    EXIT_CHANGES,
    EXIT_ERROR,
    EXIT_OK,
    EXIT_REFUSED,
    SCHEMA_VERSION,
    UsageError,
    arguments,
    error_comment,
    stack_named,
    usage_failure,
)
from plan.diff import GraphDiff, diff
from plan.render import diff_json, plan_json, render, render_diff
from stacks import environment
from stacks.config import StackConfig
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
        """The plan, or with a base the diff, as text; user text's control characters shown
        escaped (components/text.py)."""
        return printable(self._text())

    def _text(self) -> str:
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
        cost_lines: list[dict[str, Any]] = []
        if self.costing is None:
            cost: list[str] = []
        elif sides is None:
            cost = [_NO_BASE_COST.format(self.base.origin).removeprefix("Cost change: ")]
        else:
            cost = self.costing.change_totals(*sides)
            cost_lines = self.costing.change_document(*sides)["lines"]
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
                cost_lines=cost_lines,
                full_diff=self.text(),
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
        """What the provider's update does not show, such as VMs that keep a VPC's old MTU or
        what a running system does with the edit (its registry entry's `edit_notices`, given
        the base's config where it parses); the MTUs are read from the two plans, so that one
        the code's default moves is said as an edit to the stack file is."""
        assert self.base is not None
        return environment.diff_notices(
            self.config, mtu_changes(self.base.graph, self.graph), self.base.config
        )

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


def report(target: str, base: str | None, costing: Costing | None = None) -> Report:
    """Build `target` (a stack name or file) and, with `base`, the stack as it was."""
    found = read(target)
    if base is None:
        stack = open_stack(found)
        return Report(found.name, found.path, stack.config, stack.graph, costing=costing)
    # A bad ref fails before any program runs; the base builds alongside the current side.
    pending = _start_base(base, found.path, found.name)
    try:
        stack = open_stack(found)
    except BaseException:
        pending.cancel()
        raise
    return Report(
        found.name, found.path, stack.config, stack.graph, base, pending.result(), costing
    )


def main(argv: list[str] | None = None, costing: Costing | None = None) -> int:
    """The command as `python -m plan` runs it (plan/__main__.py reads the flags before it
    imports this module; the behaviour is the same)."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        args = arguments(argv)
    except UsageError as error:
        out, err = usage_failure(argv, error)
        if out:
            print(out)
        print(err, file=sys.stderr)
        return EXIT_ERROR
    return run_args(args, costing)


def run_args(args: argparse.Namespace, costing: Costing | None = None) -> int:
    """The command for flags `plan.args` has read: the plan, or the diff, as asked. What it
    prints as text or markdown shows user text's control characters escaped
    (components/text.py); JSON escapes them itself."""
    try:
        built = report(args.stack, args.base, costing)
    except (StackError, ConfigError, bases.BaseError) as error:
        if args.json:
            print(json.dumps(error_json(error), indent=2))
        elif args.markdown:
            print(error_comment(stack_named([args.stack]), str(error)))
            print(printable(str(error)), file=sys.stderr)
        else:
            print(printable(str(error)), file=sys.stderr)
        return EXIT_ERROR
    if args.json:
        print(json.dumps(built.json(args.fail_on_destructive), indent=2))
    elif args.markdown:
        print(printable(built.markdown(args.fail_on_destructive)))
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
    kinds: dict[type, str] = {ConfigError: "config", bases.BaseError: "base", UsageError: "usage"}
    kind = kinds.get(type(error), "plan")
    return {
        "schemaVersion": SCHEMA_VERSION,
        "exitCode": EXIT_ERROR,
        "error": {"kind": kind, "message": str(error), "problems": problems},
    }
