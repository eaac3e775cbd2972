"""Plain text for people and agents alike: aligned columns, escaped control characters, the
natural order of ids, colour only on a terminal. Standard library only.

The task views (``rho task list``, ``show``, ``ready``) print through here rather than through
rich: an agent polls them, and rich's import alone costs more than the whole command may
(see docs/decisions/0804-quick-lane.md; colours: ``_colours``). Text from the store is the
user's (or a tracker's): a control character in it is shown as an escape (``\\x1b``), never
sent to the terminal.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

# One natural order for views and the engine's start order alike (``records._order``).
from ..records._order import natural_key as natural_key
from ..records._order import naturally as naturally
from ._colours import ansi_code

__all__ = [
    "Cell",
    "clip",
    "columns",
    "natural_key",
    "naturally",
    "painted",
    "shown",
    "terminal_text",
]

# C0 and C1 controls, DEL, the line and paragraph separators, and the bidirectional overrides
# and isolates (text that reorders what follows it on screen).
_ESCAPED = [*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029, *range(0x202A, 0x202F)]
_ESCAPED += [*range(0x2066, 0x206A)]
_SHORT = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
_ESCAPES = {
    code: _SHORT.get(chr(code), f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
    for code in _ESCAPED
}

# (text, status to colour it by, or None).
Cell = tuple[str, str | None]


def shown(text: str) -> str:
    """*text* with every control character written as an escape: one line, nothing hidden."""
    return text.translate(_ESCAPES)


# A log's lines as a terminal shows them: its line breaks and tabs kept, every other control
# character (an escape sequence's ESC: a window title, a clear-screen) written as an escape.
_LOG_ESCAPES = {code: text for code, text in _ESCAPES.items() if chr(code) not in "\n\t"}


def terminal_text(text: str) -> str:
    """*text* (a task's output) safe for a terminal: lines and tabs kept, controls escaped."""
    return text.translate(_LOG_ESCAPES)


def clip(text: str, limit: int) -> str:
    """At most *limit* characters, the last one an ellipsis if cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def painted(text: str, status: str | None) -> str:
    """*text* in the colour of *status* when standard output is a terminal that takes colour."""
    code = ansi_code(status or "")
    if code is None or not _colour():
        return text
    return f"\x1b[{code}m{text}\x1b[0m"


def _colour() -> bool:
    # https://no-color.org; a dumb terminal prints escapes as text.
    if "NO_COLOR" in os.environ or os.environ.get("TERM") == "dumb":
        return False
    return sys.stdout.isatty()


def _width(text: str) -> int:
    """Terminal columns of *text*: wide East Asian characters take two, combining marks none."""
    if text.isascii():
        return len(text)
    import unicodedata  # here: most tables are ASCII, and this import costs a few milliseconds

    return sum(
        0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
        for c in text
    )


def columns(headers: Sequence[str], rows: Sequence[Sequence[Cell]]) -> list[str]:
    """*rows* under *headers*, each column as wide as its widest cell, two spaces apart; no
    trailing spaces. Cells are shown as they are: escape them first (``shown``)."""
    widths = [_width(header) for header in headers]
    for row in rows:
        widths = [max(width, _width(text)) for width, (text, _) in zip(widths, row, strict=True)]
    lines = []
    for row in [[(header, None) for header in headers], *rows]:
        cells = [
            painted(text, status) + " " * (width - _width(text))
            for width, (text, status) in zip(widths, row, strict=True)
        ]
        lines.append("  ".join(cells).rstrip())
    return lines
