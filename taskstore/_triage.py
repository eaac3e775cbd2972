"""Priority and labels, as beads has them, kept in a task's ``metadata``.

``metadata["priority"]`` is an int from 0 (highest) to 4; a task without one has priority 2.
``metadata["labels"]`` is a sorted list of unique names. Keeping both in ``metadata`` leaves the
document ``rho.tasks/v1``. Reading is lenient, like the rest of the store: a hand-written value
out of shape reads as the default (priority) or as the valid names it holds (labels), and the next
``update`` writes it back in shape. No pydantic here: the model reads through these functions.

Decision: docs/decisions/0103-task-commands.md
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, MutableMapping
from typing import Any

from ._errors import FieldLimitError, InvalidTaskError, quote

__all__ = [
    "DEFAULT_PRIORITY",
    "MAX_LABELS",
    "MAX_LABEL_CHARS",
    "PRIORITIES",
    "change_labels",
    "check_label",
    "check_priority",
    "check_triage",
    "read_labels",
    "read_priority",
    "set_priority",
]

PRIORITIES = range(5)
DEFAULT_PRIORITY = 2
MAX_LABEL_CHARS = 50
MAX_LABELS = 50
_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/-]*")
_PRIORITY_KEY = "priority"
_LABELS_KEY = "labels"


def read_priority(metadata: Mapping[str, Any]) -> int:
    """The priority stored in *metadata*, or ``DEFAULT_PRIORITY`` when absent or out of shape."""
    value = metadata.get(_PRIORITY_KEY)
    # bool is an int: a hand-written `true` is no priority.
    if type(value) is int and value in PRIORITIES:
        return value
    return DEFAULT_PRIORITY


def read_labels(metadata: Mapping[str, Any]) -> list[str]:
    """The labels stored in *metadata*: its strings, sorted and unique (none if not a list)."""
    value = metadata.get(_LABELS_KEY)
    if not isinstance(value, list):
        return []
    return sorted({item for item in value if isinstance(item, str)})


def check_priority(priority: int) -> None:
    """Refuse a priority outside 0..4.

    Raises:
        InvalidTaskError: not an int from 0 to 4.
    """
    if type(priority) is not int or priority not in PRIORITIES:
        raise InvalidTaskError(f"task priority must be 0 (highest) to 4, not {priority!r}")


def check_label(name: str) -> None:
    """Refuse a label name that is too long or holds other characters than the rule allows.

    Raises:
        FieldLimitError: longer than ``MAX_LABEL_CHARS``.
        InvalidTaskError: empty, or not ASCII letters, digits and ``. _ : / -`` starting with a
            letter or a digit.
    """
    if len(name) > MAX_LABEL_CHARS:
        raise FieldLimitError("label", len(name), MAX_LABEL_CHARS)
    if _LABEL.fullmatch(name) is None:
        raise InvalidTaskError(
            f"label {quote(name)} must start with an ASCII letter or digit and hold only"
            ' letters, digits, ".", "_", ":", "/" and "-"'
        )


def change_labels(
    metadata: MutableMapping[str, Any], add: Iterable[str], remove: Iterable[str], task_id: str
) -> None:
    """Remove then add labels in *metadata*; no label left removes the key.

    Raises:
        InvalidTaskError: a label to remove that the task does not carry, or a bad new label.
        FieldLimitError: a new label too long, or more than ``MAX_LABELS`` labels in all.
    """
    labels = set(read_labels(metadata))
    for name in remove:
        if name not in labels:
            raise InvalidTaskError(f"task {quote(task_id)} has no label {quote(name)}")
        labels.discard(name)
    for name in add:
        check_label(name)
        labels.add(name)
    if len(labels) > MAX_LABELS:
        raise FieldLimitError("labels", len(labels), MAX_LABELS, task_id=task_id, unit="labels")
    if labels:
        metadata[_LABELS_KEY] = sorted(labels)
    else:
        metadata.pop(_LABELS_KEY, None)


def set_priority(metadata: MutableMapping[str, Any], priority: int) -> None:
    """Store *priority* in *metadata*.

    Raises:
        InvalidTaskError: not an int from 0 to 4.
    """
    check_priority(priority)
    metadata[_PRIORITY_KEY] = priority


def check_triage(metadata: Mapping[str, Any], task_id: str) -> None:
    """Refuse imported metadata whose priority or labels are out of shape.

    Raises:
        InvalidTaskError: a priority outside 0..4, labels not a list of valid unique names.
        FieldLimitError: a label too long, or more than ``MAX_LABELS``.
    """
    if _PRIORITY_KEY in metadata:
        check_priority(metadata[_PRIORITY_KEY])
    if _LABELS_KEY not in metadata:
        return
    labels = metadata[_LABELS_KEY]
    if not isinstance(labels, list) or not all(isinstance(name, str) for name in labels):
        raise InvalidTaskError(f"task {quote(task_id)} labels must be a list of names")
    for name in labels:
        check_label(name)
    count = len(set(labels))
    if count > MAX_LABELS:
        raise FieldLimitError("labels", count, MAX_LABELS, task_id=task_id, unit="labels")
