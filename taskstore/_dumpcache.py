"""Store writes of one document after another where only named tasks changed: the other
tasks' JSON as the last write made it.

A mission rewrites its store at every feature's start (an agent that asks must see its task
``in_progress``) and end: a whole dump each time, holding the interpreter's lock, for a change
to one or two tasks (figures: docs/performance.md). ``DumpCache`` keeps, for the
document object it last dumped whole, each task's text as it stands in that dump; the next
dump of the same object that names the tasks changed since (*touched*) dumps only those and
the document's own fields, and joins the rest. The bytes are ``dump_document``'s (2-space
JSON, in which a task's lines are its own dump's, indented by four more spaces: a property
test compares them). Any other dump (no names, another document object, a task added or
removed) is whole, and its text is kept again.

Decision: docs/decisions/0510-mission-records.md
"""

from __future__ import annotations

from collections.abc import Collection

from pydantic_core import PydanticSerializationError

from ._document import document_text, model_text
from ._model import StoreDocument, Task

__all__ = ["DumpCache"]

# The document's list of tasks in its dump: its key at the document's level (two spaces: no
# text of a task's starts a line there, and JSON strings hold no raw newline).
_OPEN = '\n  "tasks": [\n'
_EMPTY = '\n  "tasks": []'
_CLOSE = "\n  ]"
# Between two tasks of the list; a task's own fields sit two spaces deeper than its braces.
_BETWEEN = "\n    },\n"
_INDENT = "    "


class DumpCache:
    """The canonical bytes of a store document, reusing the unchanged tasks' text."""

    def __init__(self) -> None:
        self._document: StoreDocument | None = None
        self._texts: dict[str, str] = {}

    def dump(self, document: StoreDocument, touched: Collection[str] | None = None) -> bytes:
        """``dump_document(document)``; when *document* is the object dumped last and only
        the tasks whose ids are in *touched* changed since, without dumping the others.

        Raises:
            FieldLimitError: as ``dump_document``.
        """
        if touched is not None and document is self._document:
            data = self._dump_touched(document, touched)
            if data is not None:
                return data
        self._document = None  # kept again only once this dump is read back
        text = document_text(document)
        self._keep(document, text)
        return (text + "\n").encode()

    def _dump_touched(self, document: StoreDocument, touched: Collection[str]) -> bytes | None:
        # None: the kept text does not cover this document (then it is dumped whole).
        if len(self._texts) != len(document.tasks):
            return None
        parts = []
        for task in document.tasks:
            text = _task_text(task) if task.id in touched else self._texts.get(task.id)
            if text is None:
                return None
            self._texts[task.id] = text
            parts.append(text)
        fields = document.model_copy(update={"tasks": []})
        head = model_text(fields)
        if parts:
            head = head.replace(_EMPTY, _OPEN + ",\n".join(parts) + _CLOSE, 1)
        return (head + "\n").encode()

    def _keep(self, document: StoreDocument, text: str) -> None:
        texts = _task_texts(text)
        if texts is None or len(texts) != len(document.tasks):
            self._texts = {}
            return
        self._texts = {task.id: text for task, text in zip(document.tasks, texts, strict=True)}
        self._document = document


def _task_text(task: Task) -> str | None:
    # A task's lines as the document's dump has them; None where its dump fails (the whole
    # dump then says why, in its own words).
    try:
        text = model_text(task)
    except PydanticSerializationError:
        return None
    return _INDENT + text.replace("\n", "\n" + _INDENT)


def _task_texts(text: str) -> list[str] | None:
    """Each task's text in a whole dump, in order; None for a text not laid out as expected."""
    start = text.find(_OPEN)
    if start < 0:
        return [] if _EMPTY in text else None
    start += len(_OPEN)
    end = text.find(_CLOSE, start)
    if end < 0:
        return None
    pieces = text[start:end].split(_BETWEEN)
    texts = [piece + "\n    }" for piece in pieces[:-1]] + pieces[-1:]
    return texts if all(piece.startswith(_INDENT + "{\n") for piece in texts) else None
