"""Rich rendering of missions for people (the live progress table, ``rho mission show`` and
``list``); task views are plain text (``_tasktext``), and JSON output never comes through here.

Decision: docs/decisions/0805-logs-and-output.md
"""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from ._colours import rich_style
from ._plain import natural_key, naturally

__all__ = ["console", "natural_key", "naturally", "status_text"]


def console() -> Console:
    """A console on stdout; plain text when stdout is not a terminal."""
    return Console(highlight=False, soft_wrap=False)


def status_text(status: str) -> Text:
    """A task or feature status, coloured by what it means."""
    return Text(status, style=rich_style(status))
