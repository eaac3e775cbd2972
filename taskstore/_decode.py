"""Store bytes to JSON data: the one place where the parser's errors become ``StoreReadError``.

Both read paths (the pydantic model and the light ``read_task_views``) decode through here, so
they report a bad file in the same words. No pydantic import: the light path must stay light.

Decision: docs/decisions/0101-task-store-file.md
"""

from __future__ import annotations

import json
from typing import Any

from ._errors import StoreReadError

__all__ = ["decode_json", "loads_strict"]


def loads_strict(data: str | bytes) -> Any:
    """``json.loads`` that refuses ``NaN``, ``Infinity`` and ``-Infinity``: they are not JSON.

    Python's parser takes them, and a rewrite would then print them bare (no other reader
    parses that) or turn them into ``null``.

    Raises:
        ValueError: not JSON (``json.JSONDecodeError``), bytes that are not UTF-8
            (``UnicodeDecodeError``), or one of those three words.
        RecursionError: nested too deeply for the parser.
    """
    return json.loads(data, parse_constant=_refuse_constant)


def _refuse_constant(word: str) -> Any:
    raise ValueError(f"{word} is not JSON (JSON has no NaN or Infinity)")


def decode_json(raw: bytes, source: str) -> Any:
    """Parse *raw* as JSON; *source* names the file in error messages.

    Raises:
        StoreReadError: not UTF-8, not JSON (``NaN`` and ``Infinity`` included), or nested too
            deeply for the parser.
    """
    try:
        return loads_strict(raw)
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError and the refused words
        raise StoreReadError(source, f"invalid JSON: {exc}") from exc
    except RecursionError as exc:
        # The stdlib parser recurses once per level: ~1,000 nested brackets exhaust the stack.
        raise StoreReadError(source, "invalid JSON: nested too deeply") from exc
