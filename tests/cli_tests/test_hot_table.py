"""The two lanes of the hot commands read one table (``_hottable``): click's commands are the
table's options (names, types, defaults, help), and the quick lane reads every option of it to
the value click gives, so that neither lane can gain or change an option alone."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click
import pytest

from rho_mission.cli._hotclick import CLICK_TYPES
from rho_mission.cli._hottable import HOT_COMMANDS, STORE, Command, Option
from rho_mission.cli._main import cli
from rho_mission.cli._quick._argv import body_values, parse

NAMES = [f"{command.noun} {command.name}" for command in HOT_COMMANDS]
# A value of each kind of option that both lanes accept.
SAMPLES = {"text": "x y", "priority": "3", "status": "completed", "sort": "id", "diagram": "dot"}


def _click_command(command: Command) -> click.Command:
    root = click.Context(cli)
    group = cli.get_command(root, command.noun)
    assert isinstance(group, click.Group)
    found = group.get_command(click.Context(group, parent=root), command.name)
    assert found is not None
    return found


def _described(param: click.Parameter) -> dict[str, Any]:
    kind = param.type
    return {
        "opts": param.opts,
        "dest": param.name,
        "type": (type(kind).__name__, getattr(kind, "choices", None), getattr(kind, "min", None)),
        "max": getattr(kind, "max", None),
        "multiple": param.multiple,
        "flag": getattr(param, "is_flag", False),
        "default": param.default,
        "help": getattr(param, "help", None),
        "metavar": param.metavar,
        "show_default": bool(getattr(param, "show_default", False)),
    }


def _expected(option: Option) -> dict[str, Any]:
    kind = click.BOOL if option.kind == "flag" else CLICK_TYPES[option.kind]
    return {
        "opts": [option.name],
        "dest": option.dest,
        "type": (type(kind).__name__, getattr(kind, "choices", None), getattr(kind, "min", None)),
        "max": getattr(kind, "max", None),
        "multiple": option.multiple,
        "flag": option.kind == "flag",
        "default": option.default,
        "help": option.help,
        "metavar": option.metavar,
        "show_default": option.show_default,
    }


@pytest.mark.parametrize("command", HOT_COMMANDS, ids=NAMES)
def test_the_click_command_is_the_table(command: Command) -> None:
    made = _click_command(command)
    params = list(made.params)
    if command.argument is not None:
        argument = params.pop(0)
        assert isinstance(argument, click.Argument)
        assert (argument.name, argument.metavar) == (
            command.argument.dest,
            command.argument.metavar,
        )
    assert [_described(param) for param in params] == [_expected(o) for o in command.options]
    assert made.help == command.help


def _command_line(command: Command, store: Path, options: Sequence[Option]) -> list[str]:
    args = ["task_1"] if command.argument is not None else []
    for option in options:
        if option is STORE:
            args += [STORE.name, str(store)]
        elif option.kind == "flag":
            args.append(option.name)
        else:
            for _ in range(2 if option.multiple else 1):
                args += [option.name, SAMPLES[option.kind]]
    return args


@pytest.mark.parametrize("every", [True, False], ids=["every option", "no option"])
@pytest.mark.parametrize("command", HOT_COMMANDS, ids=NAMES)
def test_the_quick_lane_reads_each_option_as_click_does(
    tmp_path: Path, command: Command, every: bool
) -> None:
    store = tmp_path / "tasks.json"
    store.write_text('{"tasks": []}\n')
    given = [o for o in command.options if o.light and (every or o is STORE)]
    args = _command_line(command, store, given)
    made = _click_command(command)
    by_click = made.make_context(command.name, list(args)).params
    call = parse([command.noun, command.name, *args])
    assert call is not None, "the quick lane answers the table's plain spellings"
    assert call.store == by_click.pop(STORE.dest, None) == (store if STORE in given else None)
    lists = {
        key: list(value) if isinstance(value, tuple) else value for key, value in by_click.items()
    }
    assert body_values(call) == lists


HEAVY_OPTIONS = [(c, o) for c in HOT_COMMANDS for o in c.options if not o.light]


@pytest.mark.parametrize(
    ("command", "option"),
    HEAVY_OPTIONS,
    ids=[f"{c.noun} {c.name} {o.name}" for c, o in HEAVY_OPTIONS],
)
def test_an_option_the_quick_lane_does_not_answer_goes_to_click(
    tmp_path: Path, command: Command, option: Option
) -> None:
    args = _command_line(command, tmp_path / "tasks.json", [option])
    assert _click_command(command).make_context(command.name, list(args)).params
    assert parse([command.noun, command.name, *args]) is None
