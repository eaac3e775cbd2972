"""The command lines the quick lane answers, parsed as click would parse them, or not at all.

Accepted: ``rho [--store PATH] [--debug] task|mission COMMAND ...`` where COMMAND's options are the
plain spellings of the table below (``--name value``, in any order, a single-valued option at
most once, its one argument anywhere among them). Anything else (``--name=value``, ``--help``,
``--``, a value or an argument that starts with ``-``, a repeated single option, a value click
would convert, such as ``--priority 01``) is left to click: None.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from taskstore import STATUSES

from .._errors import CliError
from .._paths import resolve_store_path

__all__ = ["Call", "parse"]

_PRIORITIES = {str(n): n for n in range(5)}


class _Spec(NamedTuple):
    argument: bool  # the command takes one argument (ID or SUBJECT)
    flags: frozenset[str]
    # Single-valued options and what each value becomes (None: click would do otherwise).
    single: dict[str, Callable[[str], Any]]
    multiple: frozenset[str]  # repeatable options, each value a plain string
    writes: bool = False
    takes_store: bool = True  # --store PATH


def _text(value: str) -> str:
    return value


def _priority(value: str) -> int | None:
    return _PRIORITIES.get(value)


def _status(value: str) -> str | None:
    return value if value in STATUSES else None


def _sort_by_id(value: str) -> str | None:
    return value if value == "id" else None  # by priority: the full model's job


_SPECS = {
    "ready": _Spec(False, frozenset({"--json"}), {"--sort": _sort_by_id}, frozenset()),
    "waves": _Spec(False, frozenset({"--json"}), {}, frozenset()),
    "list": _Spec(
        False,
        frozenset({"--json", "--wide"}),
        {"--priority": _priority},
        frozenset({"--status", "--label"}),
    ),
    "show": _Spec(True, frozenset({"--json"}), {}, frozenset()),
    "add": _Spec(
        True,
        frozenset({"--json"}),
        {"--description": _text, "--parent": _text, "--command": _text, "--priority": _priority},
        frozenset({"--blocked-by", "--related", "--label"}),
        writes=True,
    ),
    "update": _Spec(
        True,
        frozenset({"--json"}),
        {
            "--status": _text,
            "--subject": _text,
            "--description": _text,
            "--command": _text,
            "--priority": _priority,
        },
        frozenset(
            {"--add-blocker", "--remove-blocker", "--add-related", "--label", "--remove-label"}
        ),
        writes=True,
    ),
}
# ``rho mission show MISSION`` (its tables only: --json and --format go to click) and ``list``.
_MISSION_SPECS = {
    "show": _Spec(True, frozenset(), {}, frozenset(), takes_store=False),
    "list": _Spec(False, frozenset({"--json"}), {}, frozenset(), takes_store=False),
}
_NOUNS = {"task": _SPECS, "mission": _MISSION_SPECS}
_ROOT = _Spec(False, frozenset({"--debug"}), {}, frozenset())  # rho's own options, and --store
_CHOICES = {"--status": _status}  # list's --status is a choice; update's is checked by the store


class Call(NamedTuple):
    """A command line the quick lane answers."""

    name: str  # ``ready`` ... ``update`` of ``rho task``; ``mission show`` and ``mission list``
    store: Path | None  # the task store of a ``rho task`` command
    argument: str | None
    flags: frozenset[str]
    values: dict[str, Any]  # single-valued options given
    lists: dict[str, list[str]]  # repeatable options, each given or empty


def parse(args: list[str]) -> Call | None:
    """The quick lane's reading of *args*, or None to leave them to click."""
    split = next((n for n, arg in enumerate(args) if arg in _NOUNS), None)
    if split is None or len(args) < split + 2:
        return None
    root = _command_options(args[:split], _ROOT, "")
    specs = _NOUNS[args[split]]
    if root is None or args[split + 1] not in specs:
        return None
    name = args[split + 1]
    spec = specs[name]
    found = _command_options(args[split + 2 :], spec, name)
    if found is None:
        return None
    argument, flags, values, lists = found
    if specs is _MISSION_SPECS:
        return Call(f"mission {name}", None, argument, frozenset(flags), values, lists)
    store = values.pop("--store", None)
    try:
        path = resolve_store_path(store, root[2].get("--store"), reading=not spec.writes)
    except CliError:  # no store named and no repository, or a named one missing: click says so
        return None
    return Call(name, path, argument, frozenset(flags), values, lists)


def _command_options(
    tokens: list[str], spec: _Spec, name: str
) -> tuple[str | None, set[str], dict[str, Any], dict[str, list[str]]] | None:
    argument: str | None = None
    flags: set[str] = set()
    values: dict[str, Any] = {}
    lists: dict[str, list[str]] = {option: [] for option in spec.multiple}
    tokens = list(tokens)
    while tokens:
        token = tokens.pop(0)
        if not token.startswith("-"):
            if not spec.argument or argument is not None:
                return None
            argument = token
        elif token in spec.flags and token not in flags:
            flags.add(token)
        elif (
            token in spec.multiple
            or token in spec.single
            or (token == "--store" and spec.takes_store)
        ):
            if not tokens or tokens[0].startswith("-") or token in values:
                return None
            value = _converted(token, tokens.pop(0), spec, name)
            if value is None:
                return None
            if token in spec.multiple:
                lists[token].append(value)
            else:
                values[token] = value
        else:
            return None
    if spec.argument and argument is None:
        return None
    return argument, flags, values, lists


def _converted(option: str, value: str, spec: _Spec, name: str) -> Any:
    if option == "--store":
        return Path(value) if _plain_path(value) else None
    if option in spec.multiple:
        return (_CHOICES[option] if name == "list" and option in _CHOICES else _text)(value)
    return spec.single[option](value)


def _plain_path(value: str) -> bool:
    # What click.Path(dir_okay=False) accepts without a word: anything else goes to click.
    if not value or os.path.isdir(value):
        return False
    return not os.path.exists(value) or os.access(value, os.R_OK)
