"""The bodies of the hot commands (``rho task ready|waves|list|show|add|update``, ``rho mission
show|list``): plain functions that both lanes call, each over the lane's data source
(``Source``, ``MissionSource``) and the command line's values (keyed by the table's ``dest``,
``_hottable``), returning the text to print.

The full CLI's source reads and writes through ``TaskStore`` and always answers; the quick
lane's reads the file's own JSON (``read_task_dicts``, ``fast_add``, ``fast_update``) and says
None where it cannot (a store rho did not write, a task it does not find, a model it does not
load): the body then returns None before anything is written, and the full CLI runs the same
command line. The text comes from the views (``_tasktext``, ``_taskdocs``), which take
data and return text. Standard library only at import: the quick lane imports this.

Decision: docs/decisions/0804-quick-lane.md
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ._errors import CliError

if TYPE_CHECKING:
    from taskstore import Schedule, Task

__all__ = [
    "JsonMission",
    "JsonTask",
    "MissionSource",
    "Source",
    "add",
    "checked_schedule",
    "list_",
    "mission_list",
    "mission_show",
    "ready",
    "show",
    "update",
    "waves",
]

JsonTask = dict[str, Any]
JsonMission = dict[str, Any]  # as mission.json holds it, ``dir`` where the folder is now


class Source(Protocol):
    """Where a lane reads and writes the store; JSON tasks are as the store dumps them."""

    path: Path

    def task_dicts(self) -> list[JsonTask] | None:
        """Every task, sorted by id; None: this lane cannot read this store."""

    def task_dict(self, task_id: str) -> JsonTask | None:
        """The task *task_id*; None: this lane cannot say (the full lane raises)."""

    def models(self) -> list[Task] | None:
        """Every task as the model reads it; None: this lane loads no model."""

    def add(self, subject: str, **options: Any) -> JsonTask | None:
        """``TaskStore.add``; None, with nothing written: this lane cannot write this store."""

    def update(self, task_id: str, **options: Any) -> JsonTask | None:
        """``TaskStore.update``; None, with nothing written, as ``add``."""


class MissionSource(Protocol):
    """Where a lane reads the missions of this repository."""

    def missions(self) -> list[tuple[JsonMission, str]] | None:
        """Every mission with its state, newest first; None: this lane cannot read them."""

    def mission(self, name: str) -> tuple[JsonMission, str] | None:
        """The mission *name* names, with its state; None: this lane cannot say."""

    def mission_json(self, name: str) -> str | None:
        """mission.json as the model writes it; None: this lane loads no model."""

    def diagram(self, name: str, fmt: str) -> str | None:
        """The mission drawn in *fmt*; None: this lane loads no model."""


def checked_schedule(tasks: Sequence[Any]) -> Schedule[Any]:
    """``compute_schedule`` of *tasks*, its refusal worded for the command line.

    Raises:
        CliError: the graph does not schedule.
    """
    from taskstore import ScheduleError, compute_schedule

    try:
        return compute_schedule(tasks)
    except ScheduleError as exc:
        raise CliError(f"validate task schedule: {exc}") from exc


def ready(source: Source, values: Mapping[str, Any]) -> str | None:
    """``rho task ready``: the ready tasks and the waves."""
    from taskstore import read_task_views

    from ._taskdocs import json_text, ready_document
    from ._tasktext import ready_text

    if values["sort"] == "priority":  # priorities live in metadata: the model reads them
        models = source.models()
        if models is None:
            return None
        schedule = checked_schedule(models)
        schedule = schedule._replace(ready=sorted(schedule.ready, key=lambda t: (t.priority, t.id)))
    else:
        schedule = checked_schedule(read_task_views(source.path))
    if values["as_json"]:
        return json_text(ready_document(schedule))
    summaries = [task.summary() for task in schedule.ready]
    if values["sort"] == "priority":
        priorities = [task.priority for task in schedule.ready]
        return ready_text(summaries, schedule.waves, priorities)
    return ready_text(summaries, schedule.waves)


def waves(source: Source, values: Mapping[str, Any]) -> str | None:
    """``rho task waves``: the waves still to run."""
    from taskstore import read_task_views, waves_to_run

    from ._taskdocs import json_text, waves_document
    from ._tasktext import waves_to_run_text

    views = read_task_views(source.path)
    schedule = checked_schedule(views)
    to_run = waves_to_run(views)
    if values["as_json"]:
        return json_text(waves_document(schedule, to_run))
    return waves_to_run_text(to_run, len(views))


def list_(source: Source, values: Mapping[str, Any]) -> str | None:
    """``rho task list``: the tasks that pass every filter given."""
    from taskstore import read_labels, read_priority

    from ._taskdocs import json_text, list_title

    every = source.task_dicts()
    if every is None:
        return None
    statuses, labels, priority = values["statuses"], set(values["labels"]), values["priority"]
    tasks = [
        task
        for task in every
        if (not statuses or task["status"] in statuses)
        and labels <= set(read_labels(task["metadata"]))
        and priority in (None, read_priority(task["metadata"]))
    ]
    if values["as_json"]:
        return json_text({"tasks": tasks})
    from ._tasktext import task_table

    return task_table(tasks, list_title(tasks, every), wide=values["wide"])


def show(source: Source, values: Mapping[str, Any]) -> str | None:
    """``rho task show``: one task."""
    from ._taskdocs import json_text

    found = source.task_dict(values["task_id"])
    if found is None:
        return None
    if values["as_json"]:
        return json_text(found)
    from ._tasktext import task_detail

    return task_detail(found)


# The options that name tasks, repeatable: each may also list ids comma-separated, as
# ``--only`` does (a task id holds no comma).
_ID_LISTS = frozenset({"blocked_by", "related", "add_blockers", "remove_blockers", "add_related"})


def _ids_split(key: str, value: Any) -> Any:
    if key not in _ID_LISTS:
        return value
    return tuple(part for item in value for part in str(item).split(",") if part)


def add(source: Source, values: Mapping[str, Any]) -> str | None:
    """``rho task add``: a new task."""
    options = {
        key: _ids_split(key, value)
        for key, value in values.items()
        if key not in ("subject", "as_json")
    }
    _exclude_rho(source)
    return _written(source.add(values["subject"], **options), "added", values["as_json"])


def update(source: Source, values: Mapping[str, Any]) -> str | None:
    """``rho task update``: one task changed."""
    options = {
        key: _ids_split(key, value)
        for key, value in values.items()
        if key not in ("task_id", "as_json")
    }
    _exclude_rho(source)
    return _written(source.update(values["task_id"], **options), "updated", values["as_json"])


def _exclude_rho(source: Source) -> None:
    from ..git._exclude import exclude_rho_of_store

    exclude_rho_of_store(source.path)  # the repository's .rho/ out of git from the first write


def _written(task: JsonTask | None, verb: str, as_json: bool) -> str | None:
    if task is None:
        return None
    from ._taskdocs import json_text

    if as_json:
        return json_text(task)
    from ._tasktext import changed_line

    return changed_line(verb, task)


def mission_show(source: MissionSource, values: Mapping[str, Any]) -> str | None:
    """``rho mission show``: one mission's tables, its mission.json, or a diagram of it."""
    if values["as_json"]:
        return source.mission_json(values["name"])
    if values["fmt"] != "table":
        return source.diagram(values["name"], values["fmt"])
    found = source.mission(values["name"])
    if found is None:
        return None
    from ._mission_view import mission_text

    return mission_text(*found)


def mission_list(source: MissionSource, values: Mapping[str, Any]) -> str | None:
    """``rho mission list``: the missions of this repository, newest first."""
    found = source.missions()
    if found is None:
        return None
    from ._mission_view import mission_list_text, mission_rows

    if values["as_json"]:
        import json

        return json.dumps(mission_rows(found), indent=2) + "\n"
    return mission_list_text(found)
