"""``--setup CMD``, ``--setup-key PATH`` and ``--copy PATH`` of ``rho mission``: a worktree
ready to work in (``rho_mission.setup``). ``resume`` keeps the mission's own.

Decision: docs/decisions/0604-setup-and-copy.md
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

import click

__all__ = ["setup_config", "setup_options"]

F = TypeVar("F", bound=Callable[..., Any])


def setup_options(command: F) -> F:
    """Add ``--setup``, ``--setup-key`` and ``--copy`` to *command*."""
    options = [
        click.option(
            "--setup",
            "setup_command",
            metavar="CMD",
            help="Get each worktree ready once (npm ci, uv sync): run before the first task "
            "that uses it, again only when the setup key changes; what it leaves that git "
            "ignores is kept for the next tasks.",
        ),
        click.option(
            "--setup-key",
            "setup_key",
            multiple=True,
            metavar="PATH",
            help="A file whose content at the task's start commit is part of the setup key "
            "(a lockfile: package-lock.json, uv.lock); repeatable.",
        ),
        click.option(
            "--copy",
            "copy_paths",
            multiple=True,
            metavar="PATH",
            help="An untracked file of your checkout (.env) copied into every worktree before "
            "the setup, never committed; repeatable.",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def setup_config(options: dict[str, Any]) -> dict[str, object]:
    """The config fields of the setup options (paths made absolute from the working folder;
    the mission makes them repository-relative once it has checked them).

    Raises:
        click.UsageError: --setup-key without --setup, or a blank setup command.
    """
    command = options.pop("setup_command")
    keys, copies = options.pop("setup_key"), options.pop("copy_paths")
    if command is not None and not command.strip():
        raise click.UsageError("--setup needs a command")
    if keys and command is None:
        raise click.UsageError("--setup-key needs --setup CMD: the key says when it runs again")
    return {
        "setup_command": command,
        "setup_key": [os.path.abspath(path) for path in keys],
        "copy_paths": [os.path.abspath(path) for path in copies],
    }
