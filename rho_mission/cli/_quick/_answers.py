"""What the quick lane prints for a parsed command line, or None to leave it to click."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._argv import Call

__all__ = ["answer"]


def answer(call: Call) -> str | None:
    """The text *call* prints, or None (the store is not one rho wrote, a task is missing).

    Raises:
        Exception: any failure; the caller leaves the command to the full CLI, which reports it.
    """
    if call.name.startswith("mission "):
        from ._missions import answer_mission

        return answer_mission(call)
    return _ANSWERS[call.name](call)


def _store(call: Call) -> Path:
    assert call.store is not None, "a rho task command names its store"
    return call.store


def _schedule(call: Call) -> str | None:
    from taskstore import compute_schedule, read_task_views, waves_to_run

    from .._tasktext import ready_text, waves_to_run_text  # a few hundred microseconds
    from ._documents import json_text, ready_document, waves_document

    views = read_task_views(_store(call))
    schedule = compute_schedule(views)
    as_json = "--json" in call.flags
    if call.name == "waves":
        to_run = waves_to_run(views)
        if as_json:
            return json_text(waves_document(schedule, to_run))
        return waves_to_run_text(to_run, len(views))
    document = ready_document(schedule)
    return json_text(document) if as_json else ready_text(document["tasks"], schedule.waves)


def _list(call: Call) -> str | None:
    from taskstore import read_labels, read_task_dicts

    from ._documents import json_text, list_title

    every = read_task_dicts(_store(call))
    if every is None:
        return None
    statuses, labels = call.lists["--status"], set(call.lists["--label"])
    priority = call.values.get("--priority")
    tasks = [
        task
        for task in every
        if (not statuses or task["status"] in statuses)
        and labels <= set(read_labels(task["metadata"]))
        and (priority is None or _priority(task) == priority)
    ]
    if "--json" in call.flags:
        return json_text({"tasks": tasks})
    from .._tasktext import task_table

    return task_table(tasks, list_title(tasks, every), wide="--wide" in call.flags)


def _priority(task: dict[str, Any]) -> int:
    from taskstore import read_priority

    return read_priority(task["metadata"])


def _show(call: Call) -> str | None:
    from taskstore import read_task_dicts

    from ._documents import json_text

    tasks = read_task_dicts(_store(call))
    found = next((t for t in tasks or () if t["id"] == call.argument), None)
    if found is None:  # not a store rho wrote, or no such task: the full CLI's words
        return None
    if "--json" in call.flags:
        return json_text(found)
    from .._tasktext import task_detail

    return task_detail(found)


def _add(call: Call) -> str | None:
    from taskstore import fast_add

    _exclude_rho(call)
    assert call.argument is not None
    added = fast_add(
        _store(call),
        call.argument,
        description=call.values.get("--description", ""),
        blocked_by=call.lists["--blocked-by"],
        related=call.lists["--related"],
        parent=call.values.get("--parent"),
        command=call.values.get("--command"),
        priority=call.values.get("--priority"),
        labels=call.lists["--label"],
    )
    return None if added is None else _written(call, "added", added)


def _update(call: Call) -> str | None:
    from taskstore import fast_update

    _exclude_rho(call)
    assert call.argument is not None
    changed = fast_update(
        _store(call),
        call.argument,
        status=call.values.get("--status"),
        subject=call.values.get("--subject"),
        description=call.values.get("--description"),
        add_blockers=call.lists["--add-blocker"],
        remove_blockers=call.lists["--remove-blocker"],
        add_related=call.lists["--add-related"],
        command=call.values.get("--command"),
        priority=call.values.get("--priority"),
        add_labels=call.lists["--label"],
        remove_labels=call.lists["--remove-label"],
    )
    return None if changed is None else _written(call, "updated", changed)


def _exclude_rho(call: Call) -> None:
    from ...git._exclude import exclude_rho_of_store

    exclude_rho_of_store(_store(call))  # as the full CLI does before its first write there


def _written(call: Call, verb: str, task: dict[str, Any]) -> str:
    from ._documents import json_text

    if "--json" in call.flags:
        return json_text(task)
    from .._tasktext import changed_line

    return changed_line(verb, task)


_ANSWERS: dict[str, Callable[[Call], str | None]] = {
    "ready": _schedule,
    "waves": _schedule,
    "list": _list,
    "show": _show,
    "add": _add,
    "update": _update,
}
