"""The one colour table of the command line: how each status looks on a terminal (the plain
views' ANSI codes and rich's styles, one colour name for both) and in a diagram (fill, stroke).

Standard library only: the quick lane's plain views paint through it. A status outside the
table is shown uncoloured everywhere; one colour per status, whichever view shows it.

Decision: docs/decisions/0804-quick-lane.md
"""

from __future__ import annotations

__all__ = ["STATUS_COLOURS", "Colour", "ansi_code", "diagram_colours", "rich_style"]


class Colour:
    """How one status is drawn; None where a view leaves it uncoloured."""

    # Slots, not a NamedTuple: making one costs the quick lane half a millisecond per process.
    __slots__ = ("fill", "stroke", "terminal")

    def __init__(self, terminal: str | None, fill: str | None, stroke: str | None) -> None:
        self.terminal = terminal  # a name that both _ANSI and rich's styles know
        self.fill = fill  # a diagram node's background
        self.stroke = stroke  # a diagram node's border


STATUS_COLOURS: dict[str, Colour] = {
    "pending": Colour(None, "#f2f4f7", "#98a2b3"),
    "in_progress": Colour("yellow", "#fef0c7", "#dc6803"),
    "reviewing": Colour(None, "#d1e9ff", "#1570ef"),
    "completed": Colour("green", "#d1fadf", "#039855"),
    "failed": Colour("red", "#fee4e2", "#d92d20"),
    "skipped": Colour("dim", "#ffffff", "#d0d5dd"),
    "cancelled": Colour("magenta", "#fbe8ff", "#c11574"),
    "blocked": Colour("magenta", None, None),
    "not run": Colour("dim", None, None),
}
# SGR parameters of the terminal colour names (rich reads the same names as styles).
_ANSI = {"green": "32", "red": "31", "yellow": "33", "magenta": "35", "dim": "2"}


def ansi_code(status: str) -> str | None:
    """The SGR parameter that paints *status* on a terminal, or None."""
    colour = STATUS_COLOURS.get(status)
    return None if colour is None or colour.terminal is None else _ANSI[colour.terminal]


def rich_style(status: str) -> str:
    """Rich's style for *status* ("" for none)."""
    colour = STATUS_COLOURS.get(status)
    return "" if colour is None or colour.terminal is None else colour.terminal


def diagram_colours(status: str) -> tuple[str, str] | None:
    """``(fill, stroke)`` of a diagram node of *status*, or None."""
    colour = STATUS_COLOURS.get(status)
    if colour is None or colour.fill is None or colour.stroke is None:
        return None
    return colour.fill, colour.stroke
