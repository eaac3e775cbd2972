"""Bounds on what enters the store: ids that git, the file system and execve accept, and sizes.

A task id becomes a git branch component (``rho-mission/<mission>/<id>``) and a file name
(``<id>.log``); subjects and commands ride in environment variables and argv, where a NUL
character cannot go. Only mutations (add, update, import) are held to these bounds: loading stays
lenient, so a hand-written store beyond them still loads, lists and schedules.

Decision: docs/decisions/0102-field-limits.md
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ._errors import FieldLimitError, InvalidTaskError, quote

if TYPE_CHECKING:
    from ._model import Task

__all__ = [
    "MAX_ACTIVE_FORM_CHARS",
    "MAX_COMMAND_CHARS",
    "MAX_DESCRIPTION_CHARS",
    "MAX_METADATA_DEPTH",
    "MAX_OWNER_CHARS",
    "MAX_SUBJECT_CHARS",
    "MAX_TASK_ID_CHARS",
    "check_fields",
    "check_imported",
    "check_nesting",
    "check_task_id",
    "json_depth",
]

MAX_TASK_ID_CHARS = 100
MAX_SUBJECT_CHARS = 500
MAX_ACTIVE_FORM_CHARS = 500
MAX_OWNER_CHARS = 200
MAX_DESCRIPTION_CHARS = 65_536
MAX_COMMAND_CHARS = 32_768
# Levels of lists and objects in metadata (or an unknown task key), the object itself being one.
# pydantic's serializer gives up near 250 levels and the stdlib parser near 1,000.
MAX_METADATA_DEPTH = 64

# Fields checked for length (and NUL); any other text field is checked for NUL only.
_CHAR_LIMITS = {
    "subject": MAX_SUBJECT_CHARS,
    "activeForm": MAX_ACTIVE_FORM_CHARS,
    "owner": MAX_OWNER_CHARS,
    "description": MAX_DESCRIPTION_CHARS,
    "command": MAX_COMMAND_CHARS,
    "parentId": MAX_TASK_ID_CHARS,
    "dependency target": MAX_TASK_ID_CHARS,
}
_ID_START = re.compile(r"[A-Za-z0-9_]")
_ID_CHARS = re.compile(r"[A-Za-z0-9._-]*")


def check_task_id(task_id: str) -> None:
    """Refuse an id that is too long or not a safe git ref component and file name.

    Raises:
        FieldLimitError: longer than ``MAX_TASK_ID_CHARS``.
        InvalidTaskError: a character outside ``[A-Za-z0-9._-]``, a leading ``.`` or ``-``, a
            trailing ``.`` or ``.lock``, or ``..``.
    """
    if len(task_id) > MAX_TASK_ID_CHARS:
        raise FieldLimitError("id", len(task_id), MAX_TASK_ID_CHARS)
    problem = _id_problem(task_id)
    if problem is not None:
        raise InvalidTaskError(f"task id {quote(task_id)} {problem}")


def _id_problem(task_id: str) -> str | None:
    if _ID_CHARS.fullmatch(task_id) is None:
        return 'may hold only ASCII letters, digits, ".", "_" and "-"'
    if _ID_START.match(task_id) is None:
        return 'must start with an ASCII letter, a digit or "_"'
    if task_id.endswith((".", ".lock")):
        return 'must not end in "." or ".lock"'
    if ".." in task_id:
        return 'must not hold ".."'
    return None


def check_fields(fields: Mapping[str, str | None], task_id: str | None = None) -> None:
    """Refuse a text field over its length limit or holding a NUL; None values are skipped.

    *fields* maps JSON field names to values; *task_id* names the task in messages.

    Raises:
        FieldLimitError: a field longer than its limit.
        InvalidTaskError: a field holding a NUL character, or a lone surrogate (not UTF-8).
    """
    for field, value in fields.items():
        if value is None:
            continue
        limit = _CHAR_LIMITS.get(field)
        if limit is not None and len(value) > limit:
            raise FieldLimitError(field, len(value), limit, task_id=task_id)
        who = "task" if task_id is None else f"task {quote(task_id)}"
        if "\0" in value:
            raise InvalidTaskError(f"{who} {field} contains a NUL character")
        if not value.isascii() and not _utf8(value):
            # A command-line argument of bytes that are not UTF-8 arrives as lone surrogates,
            # which no JSON writer can write.
            raise InvalidTaskError(f"{who} {field} is not UTF-8 text")


def _utf8(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_imported(task: Task) -> None:
    """Refuse an imported task whose id, text fields or nesting exceed the bounds.

    Raises:
        FieldLimitError, InvalidTaskError: see ``check_task_id``, ``check_fields`` and
            ``check_nesting``.
    """
    check_task_id(task.id)
    for fields in _text_fields(task):
        check_fields(fields, task.id)
    check_nesting(task)


def _text_fields(task: Task) -> Iterator[dict[str, str | None]]:
    command = task.metadata.get("command")
    yield {
        "subject": task.subject,
        "description": task.description,
        "activeForm": task.active_form,
        "owner": task.owner,
        "command": command if isinstance(command, str) else None,
        "parentId": task.parent_id,
        "status": task.status,
        "lastError": task.last_error,
        "createdAt": task.created_at,
        "updatedAt": task.updated_at,
    }
    for dependency in task.dependencies:
        yield {"dependency target": dependency.target_id}


def check_nesting(task: Task) -> None:
    """Refuse a task whose metadata, or an unknown key's value, nests too deep to be written.

    Raises:
        FieldLimitError: nested deeper than ``MAX_METADATA_DEPTH`` (unit ``levels deep``).
    """
    values: dict[str, Any] = {"metadata": task.metadata}
    values.update((f"field {quote(key)}", value) for key, value in (task.model_extra or {}).items())
    for field, value in values.items():
        depth = json_depth(value)
        if depth > MAX_METADATA_DEPTH:
            raise FieldLimitError(
                field, depth, MAX_METADATA_DEPTH, task_id=task.id, unit="levels deep"
            )


def json_depth(value: Any) -> int:
    """Levels of lists and objects in JSON data: 0 for a scalar, 1 for ``[]`` or ``{"a": 1}``.

    Counted level by level, not by recursion, so any depth the parser produced can be measured.
    """
    depth, level = 0, [value]
    while True:
        containers = [item for item in level if isinstance(item, dict | list)]
        if not containers:
            return depth
        depth += 1
        level = [
            child
            for item in containers
            for child in (item.values() if isinstance(item, dict) else item)
        ]
