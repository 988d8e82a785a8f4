"""The graph reader is below the plan, the cost and preflight: it imports none of them, and the
plan and the cost import nothing of each other (the plan command composes them in
plan/__main__.py)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from graph.engine import REPO_ROOT


def _imports(package: str, *, skip: tuple[str, ...] = ()) -> dict[str, set[str]]:
    """Module file -> the top-level packages it imports (at any depth of the file)."""
    found: dict[str, set[str]] = {}
    for path in sorted((REPO_ROOT / package).glob("*.py")):
        if path.name in skip:
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        names: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".")[0])
        found[str(Path(package) / path.name)] = names
    return found


@pytest.mark.parametrize(
    ("package", "forbidden", "skip"),
    [
        # record_graph.py runs another checkout's engine, at plan/engine.py in older commits.
        ("graph", {"plan", "prices", "preflight"}, ("record_graph.py",)),
        ("prices", {"plan", "preflight"}, ()),
        ("plan", {"prices", "preflight"}, ("__main__.py",)),
    ],
)
def test_layers(package: str, forbidden: set[str], skip: tuple[str, ...]) -> None:
    wrong = {m: sorted(i & forbidden) for m, i in _imports(package, skip=skip).items()}
    assert not {m: i for m, i in wrong.items() if i}
