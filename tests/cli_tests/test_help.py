"""Every command's ``--help`` teaches by example.

The command tree is discovered from the help pages themselves (their "Commands:" section), so
that a command added later is checked without touching this file.
"""

from __future__ import annotations

from pathlib import Path

from support.rho import run_rho

TASK_COMMANDS = {
    "add",
    "list",
    "show",
    "update",
    "ready",
    "waves",
    "validate",
    "import",
    "export",
    "compact",
}


def _subcommands(help_text: str) -> list[str]:
    lines = help_text.splitlines()
    if "Commands:" not in lines:
        return []
    listed = lines[lines.index("Commands:") + 1 :]
    names: list[str] = []
    for line in listed:
        if not line.startswith("  "):
            break
        if not line.startswith("   "):  # deeper indents continue a wrapped description
            names.append(line.split()[0])
    return names


def _help_pages(tmp_path: Path) -> dict[str, str]:
    """``{"rho task add": <its --help>, ...}`` for every command, walking down from ``rho``."""
    pages: dict[str, str] = {}
    pending = [["rho"]]
    while pending:
        path = pending.pop()
        result = run_rho(*path[1:], "--help", cwd=tmp_path)
        assert (result.code, result.stderr) == (0, ""), path
        pages[" ".join(path)] = result.stdout
        pending.extend([*path, name] for name in _subcommands(result.stdout))
    return pages


def test_every_command_help_shows_an_example(tmp_path: Path) -> None:
    pages = _help_pages(tmp_path)
    found = {name.removeprefix("rho task ") for name in pages if name.startswith("rho task ")}
    assert found >= TASK_COMMANDS
    missing = sorted(name for name, text in pages.items() if "\n  Example: " not in text)
    assert missing == []


def test_short_help_option_is_the_same_page(tmp_path: Path) -> None:
    long = run_rho("task", "ready", "--help", cwd=tmp_path)
    short = run_rho("task", "ready", "-h", cwd=tmp_path)
    assert short.stdout == long.stdout
    assert "Usage: rho task ready [OPTIONS]" in long.stdout
