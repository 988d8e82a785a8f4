"""User text as the plan prints it: every character that a terminal or a browser would act on
instead of showing (C0 and C1 controls such as ESC and CR, DEL, the Unicode bidirectional
overrides and isolates, line and paragraph separators) is shown escaped (`\\x1b`, `\\r`,
`\\u202e`), so that a value in a stack file cannot move the cursor, erase or reorder what a
reviewer reads. Newlines that the plan itself lays out, and tabs, stay as they are.

Imports nothing but the standard library: the command line's error paths use it.
"""

from __future__ import annotations

import unicodedata

BIDI = frozenset(
    chr(code) for code in (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C)
)
"""Bidirectional embeddings and overrides (U+202A-202E), isolates (U+2066-2069) and marks:
they reorder the text around them (the "Trojan Source" class, CVE-2021-42574)."""
SEPARATORS = frozenset({"\u2028", "\u2029"})
"""Unicode line and paragraph separators: a line break to some viewers, none to others."""


def _escape(char: str) -> str:
    if char in "\r\n":
        return "\\r" if char == "\r" else "\\n"
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _table() -> dict[int, str]:
    hidden = [chr(c) for c in range(0x110) if unicodedata.category(chr(c)) == "Cc"]
    return {ord(c): _escape(c) for c in (*hidden, *BIDI, *SEPARATORS)}


_ESCAPES = _table()
_KEEP = {ord("\n"): "\n", ord("\t"): "\t"}
_LINE = {**_ESCAPES, ord("\t"): "\t"}


def printable(text: str) -> str:
    """`text` with every hidden-acting character escaped; its newlines and tabs kept."""
    return text.translate({**_ESCAPES, **_KEEP})


def one_line(text: str) -> str:
    """`text` escaped for a single line: its newlines escaped too (`\\n`)."""
    return text.translate(_LINE)
