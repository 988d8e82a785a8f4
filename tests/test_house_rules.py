"""Rooms a reader can hold (CONTRIBUTING.md): no source file beyond 700 lines and no function
beyond 120. The ones over today are listed with the issue that splits them; one that no longer
is over must leave the list."""

from __future__ import annotations

import ast
import subprocess

from graph.files import REPO_ROOT

MAX_FILE_LINES = 700
MAX_FUNCTION_LINES = 120

KNOWN_FILES: dict[str, int] = {}
"""File -> the issue whose owner splits it."""
KNOWN_FUNCTIONS: dict[str, int] = {}
"""`file::function` -> the issue whose owner cuts it at its seams."""


def _sources() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.py"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [f for f in listed if not f.startswith("tests/") and (REPO_ROOT / f).exists()]


def _functions(path: str) -> dict[str, int]:
    """`Class.method` or `function` -> its length in lines."""
    found: dict[str, int] = {}

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                walk(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                assert child.end_lineno is not None
                found[f"{prefix}{child.name}"] = child.end_lineno - child.lineno + 1
                walk(child, f"{prefix}{child.name}.")

    walk(ast.parse((REPO_ROOT / path).read_text()), "")
    return found


def test_no_source_file_is_longer_than_a_reader_holds():
    long = {
        f: n for f in _sources() if (n := (REPO_ROOT / f).read_text().count("\n")) > MAX_FILE_LINES
    }
    assert set(long) - set(KNOWN_FILES) == set(), long
    assert set(KNOWN_FILES) - set(long) == set(), "split now: remove from KNOWN_FILES"


def test_no_function_is_longer_than_a_reader_holds():
    long = {
        f"{f}::{name}": n
        for f in _sources()
        for name, n in _functions(f).items()
        if n > MAX_FUNCTION_LINES
    }
    assert set(long) - set(KNOWN_FUNCTIONS) == set(), long
    assert set(KNOWN_FUNCTIONS) - set(long) == set(), "cut now: remove from KNOWN_FUNCTIONS"
