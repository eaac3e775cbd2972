"""The full CLI's side of the hot commands: click commands made from the table
(``_hottable``), whose bodies (``_hotbodies``) read and write through the models
(``ModelSource``: ``TaskStore``; ``MissionModelSource``: ``Mission``).

``CLICK_TYPES`` turns each option kind of the table into click's type; nothing else here names
an option. ``_main`` adds the commands to their groups (no command joins a group by the side
effect of an import).

Decision: docs/decisions/0804-quick-lane.md
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from taskstore import PRIORITIES, STATUSES

from ._hotbodies import JsonMission, JsonTask
from ._hottable import HOT_COMMANDS, STORE, Command, Option
from ._paths import command_store_path

if TYPE_CHECKING:
    from taskstore import Task, TaskStore

    from ..mission._mission import Mission

__all__ = [
    "CLICK_TYPES",
    "MissionModelSource",
    "ModelSource",
    "click_command",
    "hot_click_commands",
    "option_decorator",
]

F = TypeVar("F", bound=Callable[..., Any])

CLICK_TYPES: dict[str, click.ParamType[Any]] = {
    "flag": click.BOOL,
    "text": click.STRING,
    "priority": click.IntRange(min(PRIORITIES), max(PRIORITIES)),
    "status": click.Choice(sorted(STATUSES)),
    "sort": click.Choice(["id", "priority"]),
    "path": click.Path(dir_okay=False, path_type=Path),
    "diagram": click.Choice(["table", "mermaid", "dot"]),
}


class ModelSource:
    """The store read and written through ``TaskStore``: every answer, or the store's error."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _store(self) -> TaskStore:
        from taskstore import TaskStore

        return TaskStore(self.path)

    def task_dicts(self) -> list[JsonTask]:
        return [_dump(task) for task in self._store().tasks()]

    def task_dict(self, task_id: str) -> JsonTask:
        return _dump(self._store().get(task_id))

    def models(self) -> list[Task]:
        return self._store().tasks()

    def add(self, subject: str, **options: Any) -> JsonTask:
        return _dump(self._store().add(subject, **options))

    def update(self, task_id: str, **options: Any) -> JsonTask:
        return _dump(self._store().update(task_id, **options))


def _dump(task: Task) -> JsonTask:
    return task.model_dump(by_alias=True, exclude_none=True)


class MissionModelSource:
    """The missions loaded through their model: every answer, or the model's error."""

    def missions(self) -> list[tuple[JsonMission, str]]:
        from rho_mission import list_missions

        from ._mission import _repo_root

        return [_dumped(found) for found in list_missions(_repo_root())]

    def mission(self, name: str) -> tuple[JsonMission, str]:
        from ._mission_names import load_mission

        return _dumped(load_mission(name))

    def mission_json(self, name: str) -> str:
        import json

        from ..records._stats import mission_stats
        from ._mission_names import load_mission

        # mission.json's document, and the integration counts derived from it (never stored).
        document = load_mission(name).model_dump(mode="json")
        document["integration"] = mission_stats(document)
        return json.dumps(document, indent=2, ensure_ascii=False) + "\n"

    def diagram(self, name: str, fmt: str) -> str:
        from ._diagram import mission_diagram
        from ._mission_names import load_mission

        return mission_diagram(load_mission(name), fmt)


def _dumped(found: Mission) -> tuple[JsonMission, str]:
    from ..mission._mission import mission_state

    return found.model_dump(mode="json"), mission_state(found)


def hot_click_commands(noun: str) -> list[click.Command]:
    """The click commands of the table's commands of *noun*."""
    return [click_command(command) for command in HOT_COMMANDS if command.noun == noun]


def click_command(command: Command) -> click.Command:
    """*command* as a click command: its argument, its options in the table's order, its body
    over the models (``ModelSource``, ``MissionModelSource``)."""

    def callback(**values: Any) -> None:
        text = command.body(_source(command, values), values)
        assert text is not None, "the model's source answers every command"
        sys.stdout.write(text)

    params: list[click.Parameter] = [_click_option(option) for option in command.options]
    if command.argument is not None:
        argument = click.Argument([command.argument.dest], metavar=command.argument.metavar)
        params.insert(0, argument)
    return click.Command(command.name, callback=callback, params=params, help=command.help)


def option_decorator(option: Option) -> Callable[[F], F]:
    """A decorator that adds *option* of the table to a click command of another module."""
    return click.option(option.name, option.dest, **_option_attributes(option))


def _click_option(option: Option) -> click.Option:
    return click.Option([option.name, option.dest], **_option_attributes(option))


def _source(command: Command, values: dict[str, Any]) -> ModelSource | MissionModelSource:
    """The source of *command*'s body; takes ``--store`` out of *values*."""
    if command.noun == "mission":
        return MissionModelSource()
    store_path = values.pop(STORE.dest)
    return ModelSource(command_store_path(store_path, reading=not command.writes))


def _option_attributes(option: Option) -> dict[str, Any]:
    if option.kind == "flag":
        return {"is_flag": True, "default": option.default, "help": option.help}
    return {
        "type": CLICK_TYPES[option.kind],
        "multiple": option.multiple,
        "default": option.default,
        "help": option.help,
        "metavar": option.metavar,
        "show_default": option.show_default,
    }
