"""The store's rules for new values: statuses, blank texts, dependency types, new ids and time
stamps. ``TaskStore`` and ``_edits`` (the one ``add`` and ``update`` of both write paths) apply
them. No pydantic here: the light path imports this.

Decision: docs/decisions/0101-task-store-file.md
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping

from ._errors import InvalidTaskError, quote
from ._limits import MAX_TASK_ID_CHARS, check_fields, check_task_id
from ._vocabulary import DEPENDENCY_TYPES, STATUSES

__all__ = [
    "READS_AS",
    "check_changes",
    "check_dependency_type",
    "check_status",
    "child_id",
    "counter_after",
    "next_number",
    "now_rfc3339_seconds",
    "require_text",
]

# How a link reads from the side of the task that holds it, for messages.
READS_AS = {"blocks": "blocked by", "related": "related to", "parent-child": "a subtask of"}


def now_rfc3339_seconds() -> str:
    """The current UTC time as RFC 3339 with second precision (``2026-11-29T21:30:00Z``)."""
    # time, not datetime: an agent's ``rho task update`` would pay a millisecond to import it.
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def check_status(status: str) -> None:
    """Refuse a status outside ``STATUSES``.

    Raises:
        InvalidTaskError: an unknown status.
    """
    if status not in STATUSES:
        raise InvalidTaskError(
            f"invalid status {quote(status)}; expected one of {', '.join(sorted(STATUSES))}"
        )


def check_changes(texts: Mapping[str, str | None], status: str | None = None) -> None:
    """The checks of an ``add`` or ``update`` before the store is read: *status* known, the
    subject (in *texts*, when given) not blank, every text within its limits.

    Raises:
        InvalidTaskError: an unknown status, a blank subject, a NUL or a text that is not UTF-8.
        FieldLimitError: a text longer than its limit.
    """
    if status is not None:
        check_status(status)
    subject = texts.get("subject")
    if subject is not None:
        require_text("subject", subject)
    check_fields(texts)


def require_text(field: str, value: str) -> None:
    """Refuse a blank *value* for *field*.

    Raises:
        InvalidTaskError: *value* is empty or only white space.
    """
    if not value.strip():
        raise InvalidTaskError(f"task {field} must not be blank")


def check_dependency_type(kind: str) -> None:
    """Refuse a dependency type outside ``blocks``, ``related``, ``parent-child``.

    Raises:
        InvalidTaskError: an unknown type.
    """
    if kind not in DEPENDENCY_TYPES:
        expected = ", ".join(sorted(DEPENDENCY_TYPES))
        raise InvalidTaskError(f"unknown dependency type {quote(kind)}; expected one of {expected}")


def counter_after(task_id: str) -> int:
    """The store counter a ``task_<n>`` id needs (n + 1); 1 for any other id."""
    head, _, number = task_id.partition("_")
    # isdigit() alone admits digits such as "²" that int() refuses.
    if head == "task" and number.isascii() and number.isdigit():
        return int(number) + 1
    return 1


def next_number(next_id: int, task_ids: Iterable[str]) -> int:
    """The n of the next ``task_<n>``: the counter, moved past every ``task_<n>`` id present.

    An old or hand-written file may lack ``next_id`` (default 1) while holding such ids.
    """
    return max([next_id, *(counter_after(task_id) for task_id in task_ids)])


def child_id(parent_id: str, family: Iterable[tuple[str, str | None]]) -> str:
    """``<parent>.<k>`` with k = child count + 1, moved past ids already taken (by an import).

    *family* holds every task's ``(id, parentId)``.

    Raises:
        InvalidTaskError: that id would be longer than ``MAX_TASK_ID_CHARS`` or not a safe name
            (the parent's own id, from a hand-written store, may be neither).
    """
    pairs = list(family)
    taken = {task_id for task_id, _ in pairs}
    k = sum(1 for _, parent in pairs if parent == parent_id) + 1
    while f"{parent_id}.{k}" in taken:
        k += 1
    found = f"{parent_id}.{k}"
    if len(found) > MAX_TASK_ID_CHARS:
        raise InvalidTaskError(
            f"task {quote(parent_id)} cannot take a subtask: its id would be {len(found)}"
            f" characters; the limit is {MAX_TASK_ID_CHARS}"
        )
    check_task_id(found)
    return found
