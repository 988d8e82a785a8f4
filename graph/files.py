"""Where stacks are, without importing anything heavier than `pathlib`: the repository, each
stack's file, and the error of a stack that cannot be read. The commands read their flags and
name the stacks with these before they import the SDKs (benchmarks/README.md)."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


class StackError(Exception):
    """A stack that cannot be read or built; the message says which and why."""


def stack_file(stack: str) -> Path:
    return REPO_ROOT / f"Pulumi.{stack}.yaml"


def list_stacks() -> list[str]:
    return sorted(p.name.split(".")[1] for p in REPO_ROOT.glob("Pulumi.*.yaml"))


def stack_path(target: str) -> tuple[str, Path]:
    """A stack name (`prod`) or a stack file path -> (stack name, stack file)."""
    path = Path(target)
    if path.suffix not in (".yaml", ".yml"):
        path = stack_file(target)
        if not path.exists():
            raise StackError(f"{path.name} not found: stacks are {', '.join(list_stacks())}")
        return target, path
    if not path.exists():
        raise StackError(f"{target}: no such stack file")
    name = path.name.split(".")[1] if path.name.startswith("Pulumi.") else path.stem
    return name, path
