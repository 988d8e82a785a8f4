"""The one definition of text that does not read as it is: characters a terminal, a browser or
an editor acts on, or draws as nothing, instead of showing. The stack loader refuses them in
every config value (`stacks/inputs.py`), startup-script fields refuse them when a model is built
from anything else (`components/startup.py`), and every printer shows them escaped (the plan,
config errors), so that a value cannot move the cursor, erase, reorder or hide what a reviewer
reads.

Imports nothing but the standard library: the command lines' error paths use it.
"""

from __future__ import annotations

import re
import unicodedata

BIDI = frozenset(
    chr(code) for code in (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C)
)
"""Bidirectional embeddings and overrides (U+202A-202E), isolates (U+2066-2069) and marks:
they reorder the text around them (the "Trojan Source" class, CVE-2021-42574)."""
SEPARATORS = frozenset({"\u2028", "\u2029"})
"""Unicode line and paragraph separators: a line break to some viewers, none to others."""
INVISIBLE = frozenset(
    {"\u00ad", "\u200b", "\u200c", "\u200d", "\ufeff", *map(chr, range(0x2060, 0x2065))}
)
"""Soft hyphen, zero-width space and joiners, word joiner and invisible operators, the byte
order mark: drawn as nothing, so `prod` and `pr\\u200bod` read alike (the invisible-character
variant of Trojan Source)."""
CONTROLS = frozenset(chr(c) for c in range(0x110) if unicodedata.category(chr(c)) == "Cc") - {
    "\t",
    "\n",
}
"""C0 controls but tab and newline (ESC starts a terminal sequence, CR overwrites the line),
DEL and the C1 controls (U+009B is a one-character CSI)."""
HIDDEN = CONTROLS | BIDI | SEPARATORS | INVISIBLE
"""Every character that does not read as it is. Tab and newline are the only controls text
may hold."""

_HIDDEN = re.compile("[" + "".join(sorted(re.escape(c) for c in HIDDEN)) + "]")


def _escape(char: str) -> str:
    if char in "\r\n":
        return "\\r" if char == "\r" else "\\n"
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


_ESCAPES = {ord(c): _escape(c) for c in HIDDEN}
_LINE = {**_ESCAPES, ord("\n"): "\\n"}


def first_hidden(text: str) -> str | None:
    """The first character of `text` that does not read as it is, or None."""
    match = _HIDDEN.search(text)
    return match[0] if match else None


def printable(text: str) -> str:
    """`text` with every hidden character escaped (`\\x1b`, `\\r`, `\\u202e`); its newlines
    and tabs kept."""
    return text.translate(_ESCAPES)


def one_line(text: str) -> str:
    """`text` escaped for a single line: its newlines escaped too (`\\n`)."""
    return text.translate(_LINE)
