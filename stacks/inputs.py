"""What every input must be before any model reads it: text without the characters that do not
read as they are (`components.text.is_hidden`), and a config no larger than the Pulumi engine can
hand the program. Per-list bounds live on the models, at their paths; this module holds what is
true of all text.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from components.base import PathPart, Problem
from components.text import first_hidden, one_line

CONFIG_LIMIT = 131072
"""Bytes of `PULUMI_CONFIG=<json>`: the Python language host hands the program its config in
that one environment string (pulumi-language-python, `PULUMI_CONFIG`), and Linux refuses an
execve whose single argument or environment string exceeds MAX_ARG_STRLEN, 32 pages of 4 KiB
(include/uapi/linux/binfmts.h)."""
FILE_LIMIT = 4 * CONFIG_LIMIT
"""Characters of a stack file read at all: comments and indentation leave room beyond
`CONFIG_LIMIT`, four times over."""
MAX_REPORTED = 20
"""Control-character problems listed one by one; the rest are counted."""


def control_problems(value: Any, path: tuple[PathPart, ...]) -> list[Problem]:
    """Every key and text value under `value` holding a control character, at its path; past
    `MAX_REPORTED`, one problem counts the rest."""
    found = list(_controls(value, path))
    if len(found) <= MAX_REPORTED:
        return found
    rest = len(found) - MAX_REPORTED
    return [*found[:MAX_REPORTED], Problem(path, f"and {rest} more text value(s) like these")]


def _controls(value: Any, path: tuple[PathPart, ...]) -> Iterator[Problem]:
    todo: list[tuple[Any, tuple[PathPart, ...]]] = [(value, path)]
    while todo:
        item, where = todo.pop()
        if isinstance(item, str):
            if char := first_hidden(item):
                yield Problem(where, _message(char, "holds"))
        elif isinstance(item, Mapping):
            for key, part in item.items():
                if isinstance(key, str) and (char := first_hidden(key)):
                    yield Problem(where, f"has the key '{one_line(key)}', which " + _message(char))
                else:
                    todo.append((part, (*where, key)))
        elif isinstance(item, list | tuple):
            todo += [(part, (*where, i)) for i, part in reversed(list(enumerate(item)))]


def _message(char: str, verb: str = "holds") -> str:
    return (
        f"{verb} the character {one_line(char)}, which a terminal acts on or draws as nothing "
        "where the plan prints this text (it can hide, reorder or rewrite what a reviewer reads); "
        "remove it (text may hold newlines and tabs, no other control, bidi or invisible "
        "character: components/text.py)"
    )


def oversize_file(text: str) -> Problem | None:
    """A stack file too large to read."""
    if len(text) <= FILE_LIMIT:
        return None
    return Problem(
        ("(stack file)",),
        f"is {len(text):,} characters; a stack file is at most {FILE_LIMIT:,} (the config "
        f"`pulumi up` hands the program is at most {CONFIG_LIMIT:,} bytes); shorten it",
    )


def oversize_config(config_json: str) -> Problem | None:
    """A config the Pulumi engine cannot hand the program, given its JSON encoding."""
    size = len("PULUMI_CONFIG=") + len(config_json.encode()) + 1  # the NUL that ends it
    if size <= CONFIG_LIMIT:
        return None
    return Problem(
        ("(stack file)",),
        f"holds {size:,} bytes of config; `pulumi up` hands the program its config in one "
        f"environment variable, which Linux limits to {CONFIG_LIMIT:,} bytes (MAX_ARG_STRLEN); "
        "shorten the lists",
    )
