"""Reading and writing graph files: deterministic bytes, atomic private writes, bounded reads.

`dump_graph` is the one serialization of a document on disk: nodes, edges and events sorted by
id, attribute keys sorted, 2-space indented JSON in UTF-8 with a trailing newline, so the same
document always gives the same bytes. OS, Unicode and JSON errors become `GraphDocumentError`
here, at this package's one file boundary.

Decision: docs/decisions/0201-portable-graph.md
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ._errors import GraphDocumentError
from ._model import SCHEMA_VERSION, Edge, Event, GraphDocument, Node, Scope, sort_facts
from ._validate import validate_graph

__all__ = [
    "MAX_GRAPH_FILE_BYTES",
    "MISSION_GRAPH_FILENAME",
    "assemble_graph",
    "dump_graph",
    "fact_text",
    "load_mission_graph",
    "read_graph_file",
    "write_graph",
]

# A graph file read from disk: a mission at the caps (1,000 features) writes a few MiB; the
# 1 MiB bound is Rho Cloud's, on the upload body (``graph.cloud.MAX_BODY_BYTES``), not on files.
MAX_GRAPH_FILE_BYTES = 64 * 1024 * 1024
MISSION_GRAPH_FILENAME = "mission-graph.json"


def dump_graph(doc: GraphDocument | Mapping[str, Any]) -> bytes:
    """Return the canonical file bytes of *doc*: sorted facts, 2-space indent, trailing newline.

    The document is validated first, so that no invalid graph is ever written.

    Raises:
        GraphValidationError: *doc* breaks the contract (see `validate_graph`).
    """
    graph = sort_facts(validate_graph(doc))
    # pydantic's serializer writes the same bytes as json.dumps(indent=2, ensure_ascii=False)
    # of document_data(graph), several times faster: a mission rewrites this file at every join.
    text = graph.model_dump_json(indent=2, by_alias=True, exclude_none=True)
    return f"{text}\n".encode()


def fact_text(fact: Node | Edge | Event) -> bytes:
    """*fact* as `dump_graph` writes it inside its list: its JSON, indented by four spaces.

    For writers that keep the bytes of facts that did not change between two dumps.
    """
    text = fact.model_dump_json(indent=2, by_alias=True, exclude_none=True)
    return (_LIST_INDENT + text.replace("\n", "\n" + _LIST_INDENT)).encode()


_LIST_INDENT = "    "


def assemble_graph(
    generated_at: str,
    scope: Scope,
    nodes: Sequence[bytes],
    edges: Sequence[bytes],
    events: Sequence[bytes],
) -> bytes:
    """The bytes `dump_graph` writes for a document of these facts.

    *nodes*, *edges* and *events* are `fact_text` bytes, each list sorted by fact id; the caller
    answers for the facts' validity (ids unique, references present), which `dump_graph` checks.
    """
    envelope = GraphDocument(
        schema_version=SCHEMA_VERSION, generated_at=generated_at, scope=scope
    ).model_dump_json(indent=2, by_alias=True, exclude_none=True)
    pieces: list[bytes] = [envelope[: envelope.index('\n  "nodes": [],')].encode()]
    for name, texts in (("nodes", nodes), ("edges", edges), ("events", events)):
        if texts:
            # One join of the whole file (it is rewritten at every join of a mission): the
            # facts and their separators interleaved by slice assignment, not one by one.
            listed: list[bytes] = [b",\n"] * (2 * len(texts))
            listed[0::2] = texts
            listed[-1] = b"\n  ]"
            pieces += (f'\n  "{name}": [\n'.encode(), *listed)
        else:
            pieces.append(f'\n  "{name}": []'.encode())
        pieces.append(b"," if name != "events" else b"\n}\n")
    return b"".join(pieces)


def write_graph(path: str | os.PathLike[str], doc: GraphDocument | Mapping[str, Any]) -> None:
    """Write *doc* to *path* atomically with mode 0600 (see `dump_graph` for the bytes).

    A temporary file in the same folder is written, flushed to disk and renamed over *path*,
    and the folder entry is flushed too, so a crash leaves the old file or the new one.

    Raises:
        GraphValidationError: *doc* breaks the contract; nothing is written.
        GraphDocumentError: the folder is missing or not writable; *path* is unchanged.
    """
    data = dump_graph(doc)
    target = Path(path)
    try:
        _write_atomic(target, data)
    except OSError as exc:
        raise GraphDocumentError(
            f"cannot write graph: {_reason(exc)}: {target}", str(target)
        ) from exc


def _write_atomic(path: Path, data: bytes) -> None:
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        write_atomic_at(folder, path.name, data)
    finally:
        os.close(folder)


def write_atomic_at(folder: int, name: str, data: bytes) -> None:
    """Write *data* as *name* in the open *folder*, mode 0600 whatever the umask: a new
    temporary file beside it (no link followed) is written, flushed to disk and renamed over
    *name*, then the folder entry is flushed, so a crash leaves the old file or the new one.
    The graph's one atomic writer (graph files, the cloud settings)."""
    temp = f".{name}.{secrets.token_hex(8)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    fd = os.open(temp, flags, 0o600, dir_fd=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), 0o600)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=folder)
        raise
    # The rename is durable only once the folder entry itself reaches the disk.
    os.fsync(folder)


def read_graph_file(path: str | os.PathLike[str], *, label: str = "graph") -> GraphDocument:
    """Read, decode and validate the graph file at *path*; *label* names it in messages.

    Raises:
        GraphDocumentError: the file is missing, is a folder, is larger than 64 MiB, cannot be
            read, is not UTF-8, or is not JSON (or nests too deeply to parse); the message
            names the problem and the path.
        GraphValidationError: the JSON is not a valid ``rho.graph/v1`` document (unsupported
            schema version, missing ``generated_at``, a dangling reference, ...).
    """
    target = Path(path)
    data = _read_bounded(target, label)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise GraphDocumentError(
            f"{label} is not valid UTF-8 (byte {exc.start}): {target}", str(target)
        ) from None
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}"
        raise GraphDocumentError(
            f"{label} is not valid JSON ({exc.msg.lower()} at {where}): {target}", str(target)
        ) from None
    except RecursionError:  # the stdlib parser recurses once per level of nesting
        raise GraphDocumentError(
            f"{label} is not valid JSON (nested too deeply): {target}", str(target)
        ) from None
    return validate_graph(parsed)


def _read_bounded(path: Path, label: str) -> bytes:
    try:
        with path.open("rb") as handle:
            # One byte past the limit tells "too large" without reading a huge file whole.
            data = handle.read(MAX_GRAPH_FILE_BYTES + 1)
            size = os.fstat(handle.fileno()).st_size
    except FileNotFoundError:
        raise GraphDocumentError(f"{label} not found: {path}", str(path)) from None
    except IsADirectoryError:
        raise GraphDocumentError(f"{label} is a folder, not a file: {path}", str(path)) from None
    except OSError as exc:
        raise GraphDocumentError(f"cannot read {label}: {_reason(exc)}: {path}", str(path)) from exc
    if len(data) > MAX_GRAPH_FILE_BYTES:
        size = max(size, len(data))
        raise GraphDocumentError(f"{label} is {size} bytes; maximum is 64 MiB", str(path))
    return data


def load_mission_graph(mission_dir: str | os.PathLike[str]) -> GraphDocument:
    """Read ``DIR/mission-graph.json`` of a mission folder, and nothing else of it.

    Raises:
        GraphDocumentError: the folder is missing or not a folder, or the file cannot be read
            (see `read_graph_file`; messages say ``mission graph``).
        GraphValidationError: the file is not a valid ``rho.graph/v1`` document.
    """
    folder = Path(mission_dir)
    if not folder.exists():
        raise GraphDocumentError(f"mission directory not found: {folder}", str(folder))
    if not folder.is_dir():
        raise GraphDocumentError(f"mission directory is not a folder: {folder}", str(folder))
    return read_graph_file(folder / MISSION_GRAPH_FILENAME, label="mission graph")


def _reason(exc: OSError) -> str:
    return (exc.strerror or str(exc)).lower()
