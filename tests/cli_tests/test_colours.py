"""One colour table: the plain views' ANSI codes, rich's styles and the diagrams all read
``_colours.STATUS_COLOURS``, so a status looks the same in each."""

from __future__ import annotations

import pytest
from rich.style import Style

from rho_mission.cli import _colours
from rho_mission.cli._colours import STATUS_COLOURS, ansi_code, diagram_colours
from rho_mission.cli._diagram import task_diagram
from rho_mission.cli._plain import painted
from rho_mission.cli._render import status_text
from taskstore import Task


@pytest.mark.parametrize("status", sorted(STATUS_COLOURS))
def test_the_terminal_and_rich_show_one_colour(status: str) -> None:
    style = Style.parse(str(status_text(status).style))
    code = ansi_code(status)
    if code is None:
        assert style == Style()
    elif code == "2":
        assert style.dim
    else:
        assert style.color is not None
        assert style.color.number == int(code) - 30


def test_a_table_change_reaches_every_view(monkeypatch: pytest.MonkeyPatch) -> None:
    """The views hold no colours of their own: changing the table changes all three."""
    changed = {**STATUS_COLOURS, "pending": _colours.Colour("red", "#000001", "#000002")}
    monkeypatch.setattr(_colours, "STATUS_COLOURS", changed)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    assert painted("x", "pending") == "\x1b[31mx\x1b[0m"
    assert str(status_text("pending").style) == "red"
    drawn = task_diagram([Task(id="task_1", subject="s", status="pending")], "dot")
    assert 'fillcolor="#000001", color="#000002"' in drawn
    assert diagram_colours("blocked") is None
