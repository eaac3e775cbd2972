"""Store bytes to JSON data: the one place where the parser's errors become ``StoreReadError``.

Both read paths (the pydantic model and the light ``read_task_views``) decode through here, so
they report a bad file in the same words. No pydantic import: the light path must stay light.
"""

from __future__ import annotations

import json
from typing import Any

from ._errors import StoreReadError

__all__ = ["decode_json"]


def decode_json(raw: bytes, source: str) -> Any:
    """Parse *raw* as JSON; *source* names the file in error messages.

    Raises:
        StoreReadError: not UTF-8, not JSON, or nested too deeply for the parser.
    """
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise StoreReadError(source, f"invalid JSON: {exc}") from exc
    except RecursionError as exc:
        # The stdlib parser recurses once per level: ~1,000 nested brackets exhaust the stack.
        raise StoreReadError(source, "invalid JSON: nested too deeply") from exc
