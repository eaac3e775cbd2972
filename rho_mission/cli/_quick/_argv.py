"""The command lines the quick lane answers, parsed as click would parse them, or not at all.

Accepted: ``rho [--store PATH] [--debug] task|mission COMMAND ...`` where COMMAND's options are
the plain spellings of the options of the table of hot commands (``_hottable``, which click's
commands are made from too): ``--name value``, in any order, a single-valued option at most
once, its one argument anywhere among them. Anything else (``--name=value``, ``--help``,
``--``, a value or an argument that starts with ``-``, a repeated single option, a value click
would convert, such as ``--priority 01``) is left to click: None.

Decision: docs/decisions/0804-quick-lane.md
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from taskstore import PRIORITIES, STATUSES

from .._errors import CliError
from .._hottable import HOT_COMMANDS, STORE, Command
from .._paths import resolve_store_path

__all__ = ["Call", "body_values", "parse"]

_PRIORITIES = {str(n): n for n in PRIORITIES}


class _Spec(NamedTuple):
    argument: bool  # the command takes one argument (ID or SUBJECT)
    flags: frozenset[str]
    # Single-valued options and what each value becomes (None: click would do otherwise).
    single: dict[str, Callable[[str], Any]]
    # Repeatable options and what each value becomes, as single ones.
    multiple: dict[str, Callable[[str], Any]]
    writes: bool = False
    takes_store: bool = True  # --store PATH
    command: Command | None = None  # its entry in the table of hot commands


def _text(value: str) -> str:
    return value


def _priority(value: str) -> int | None:
    return _PRIORITIES.get(value)


def _status(value: str) -> str | None:
    return value if value in STATUSES else None


def _sort_by_id(value: str) -> str | None:
    return value if value == "id" else None  # by priority: the full model's job


# What a value of each kind of option becomes here; None leaves the command line to click.
# Paths (--store) are read apart (``_converted``).
_READERS: dict[str, Callable[[str], Any]] = {
    "text": _text,
    "priority": _priority,
    "status": _status,
    "sort": _sort_by_id,
}


def _spec(command: Command) -> _Spec:
    """The quick lane's reading of *command* of the table."""
    options = [option for option in command.options if option is not STORE and option.light]
    return _Spec(
        command.argument is not None,
        frozenset(option.name for option in options if option.kind == "flag"),
        {o.name: _READERS[o.kind] for o in options if o.kind != "flag" and not o.multiple},
        {o.name: _READERS[o.kind] for o in options if o.multiple},
        writes=command.writes,
        takes_store=STORE in command.options,
        command=command,
    )


_NOUNS = {
    noun: {command.name: _spec(command) for command in HOT_COMMANDS if command.noun == noun}
    for noun in ("task", "mission")
}
_ROOT = _Spec(False, frozenset({"--debug"}), {}, {})  # rho's own options, and --store


class Call(NamedTuple):
    """A command line the quick lane answers."""

    name: str  # ``ready`` ... ``update`` of ``rho task``; ``mission show`` and ``mission list``
    store: Path | None  # the task store of a ``rho task`` command
    argument: str | None
    flags: frozenset[str]
    values: dict[str, Any]  # single-valued options given
    lists: dict[str, list[str]]  # repeatable options, each given or empty
    command: Command | None = None  # the table's entry of the command


def body_values(call: Call) -> dict[str, Any]:
    """*call*'s values as its body takes them (``_hotbodies``): by the table's ``dest``, every
    option not given at its default, as click passes them."""
    assert call.command is not None, "a command the quick lane answers is in the table"
    values: dict[str, Any] = {}
    for option in call.command.options:
        if option.kind == "flag":
            values[option.dest] = option.name in call.flags
        elif option.multiple:
            values[option.dest] = call.lists[option.name]
        elif option is not STORE:
            values[option.dest] = call.values.get(option.name, option.default)
    if call.command.argument is not None:
        values[call.command.argument.dest] = call.argument
    return values


def parse(args: list[str]) -> Call | None:
    """The quick lane's reading of *args*, or None to leave them to click."""
    split = next((n for n, arg in enumerate(args) if arg in _NOUNS), None)
    if split is None or len(args) < split + 2:
        return None
    root = _command_options(args[:split], _ROOT)
    specs = _NOUNS[args[split]]
    if root is None or args[split + 1] not in specs:
        return None
    name = args[split + 1]
    spec = specs[name]
    found = _command_options(args[split + 2 :], spec)
    if found is None:
        return None
    argument, flags, values, lists = found
    if not spec.takes_store:  # ``rho mission show|list``
        return Call(
            f"mission {name}", None, argument, frozenset(flags), values, lists, spec.command
        )
    store = values.pop("--store", None)
    try:
        path = resolve_store_path(store, root[2].get("--store"), reading=not spec.writes)
    except CliError:  # no store named and no repository, or a named one missing: click says so
        return None
    return Call(name, path, argument, frozenset(flags), values, lists, spec.command)


def _command_options(
    tokens: list[str], spec: _Spec
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
            value = _converted(token, tokens.pop(0), spec)
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


def _converted(option: str, value: str, spec: _Spec) -> Any:
    if option == "--store":
        return Path(value) if _plain_path(value) else None
    if option in spec.multiple:
        return spec.multiple[option](value)
    return spec.single[option](value)


def _plain_path(value: str) -> bool:
    # What click.Path(dir_okay=False) accepts without a word: anything else goes to click.
    if not value or os.path.isdir(value):
        return False
    return not os.path.exists(value) or os.access(value, os.R_OK)
