"""The one definition of text that does not read as it is: characters a terminal, a browser or
an editor acts on, or draws as nothing, instead of showing. The stack loader refuses them in
every config value (`stacks/inputs.py`), startup-script fields refuse them when a model is built
from anything else (`components/startup.py`), and every printer shows them escaped (the plan,
config errors), so that a value cannot move the cursor, erase, reorder or hide what a reviewer
reads.

The class is the Unicode general categories that do so, not a list of examples:
- Cc, controls but tab and newline: ESC starts a terminal sequence, CR overwrites the line,
  U+009B is a one-character CSI;
- Cf, format characters: the bidirectional overrides, isolates and marks that reorder text
  (the "Trojan Source" class, CVE-2021-42574), zero-width spaces and joiners, the soft hyphen,
  the byte order mark, and the tag characters U+E0000-E007F that carry invisible ASCII;
- Zl and Zp, the line and paragraph separators: a line break to some viewers, none to others.

Imports nothing but the standard library: the command lines' error paths use it.
"""

from __future__ import annotations

import re
import unicodedata

HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})
"""Unicode general categories of the characters that do not read as they are."""
ALLOWED = "\t\n"
"""The only such characters text may hold."""

_ASCII_HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f]")
"""The class within ASCII (C0 but tab and newline, and DEL): most text is ASCII, and a
regular expression answers it without a look at each character."""


def is_hidden(char: str) -> bool:
    """Whether `char` does not read as it is."""
    return char not in ALLOWED and unicodedata.category(char) in HIDDEN_CATEGORIES


def first_hidden(text: str) -> str | None:
    """The first character of `text` that does not read as it is, or None."""
    if text.isascii():
        match = _ASCII_HIDDEN.search(text)
        return match[0] if match else None
    return next((char for char in text if is_hidden(char)), None)


def _escape(char: str) -> str:
    if char in "\r\n":
        return "\\r" if char == "\r" else "\\n"
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def printable(text: str) -> str:
    """`text` with every hidden character escaped (`\\x1b`, `\\r`, `\\u202e`); its newlines
    and tabs kept."""
    if first_hidden(text) is None:
        return text
    return "".join(_escape(char) if is_hidden(char) else char for char in text)


def one_line(text: str) -> str:
    """`text` escaped for a single line: its newlines escaped too (`\\n`)."""
    return printable(text).replace("\n", "\\n")
