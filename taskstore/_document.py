"""Store bytes to and from the ``rho.tasks/v1`` model: parse, validate, dump.

Decision: docs/decisions/0101-task-store-file.md
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError

from ._decode import decode_json
from ._errors import StoreReadError
from ._limits import check_nesting
from ._model import StoreDocument

__all__ = ["dump_document", "parse_document", "validate_document"]


def parse_document(raw: bytes, source: str) -> StoreDocument:
    """Parse store bytes; *source* names the file in error messages.

    Raises:
        StoreReadError: not JSON (or nested too deeply to parse), or not a ``rho.tasks/v1``
            document.
    """
    return validate_document(decode_json(raw, source), source)


def validate_document(data: Any, source: str) -> StoreDocument:
    """Check JSON data (e.g. from ``json.loads``) as a store; *source* names it in messages.

    Raises:
        StoreReadError: *data* is not a ``rho.tasks/v1`` document.
    """
    try:
        return StoreDocument.model_validate(data)
    except ValidationError as exc:
        raise StoreReadError(source, _first_problem(exc)) from exc


def dump_document(document: StoreDocument) -> bytes:
    """The canonical bytes of a store: 2-space JSON, tasks sorted by id, trailing newline.

    Raises:
        FieldLimitError: a task's metadata nests too deep for the serializer (a hand-written
            store can hold that; no mutation lets it in).
    """
    return (document_text(document) + "\n").encode()


def document_text(document: StoreDocument) -> str:
    """``dump_document``'s text, without its trailing newline.

    Raises:
        FieldLimitError: as ``dump_document``.
    """
    try:
        return model_text(document)
    except PydanticSerializationError:
        for task in document.tasks:  # the serializer stops near 250 levels: name the task
            check_nesting(task)
        raise


def model_text(model: BaseModel) -> str:
    """A store model (the document, or one task) as the store writes it, unindented.

    Raises:
        PydanticSerializationError: its metadata nests too deep for the serializer.
    """
    # The same text as json.dumps(indent=2, ensure_ascii=False) of the dumped dict, written by
    # pydantic's serializer several times faster: every store write pays for this.
    return model.model_dump_json(indent=2, by_alias=True, exclude_none=True)


def _first_problem(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"]) or "document"
    if error["type"] in ("model_type", "model_attributes_type", "dict_type"):
        return f"{where}: expected a JSON object"
    return f"{where}: {error['msg'].lower()}"
