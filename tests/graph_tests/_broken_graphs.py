"""The ways a mission folder's ``mission-graph.json`` can be unreadable or invalid (``BROKEN``),
each with the error line rho must print."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _graph_file(folder: Path, data: Any) -> Path:
    folder.mkdir()
    (folder / "mission-graph.json").write_text(json.dumps(data), encoding="utf-8")
    return folder


def _missing_folder(tmp: Path, graph: dict[str, Any]) -> tuple[Path, str]:
    return tmp / "gone", f"mission directory not found: {tmp / 'gone'}"


def _missing_file(tmp: Path, graph: dict[str, Any]) -> tuple[Path, str]:
    (tmp / "empty").mkdir()
    return tmp / "empty", f"mission graph not found: {tmp / 'empty' / 'mission-graph.json'}"


def _folder_in_place(tmp: Path, graph: dict[str, Any]) -> tuple[Path, str]:
    (tmp / "m" / "mission-graph.json").mkdir(parents=True)
    path = tmp / "m" / "mission-graph.json"
    return tmp / "m", f"mission graph is a folder, not a file: {path}"


def _too_large(tmp: Path, graph: dict[str, Any]) -> tuple[Path, str]:
    # Valid JSON padded with spaces past the limit: the size alone is the problem.
    text = json.dumps(graph).ljust(64 * 1024 * 1024 + 17)
    (tmp / "m").mkdir()
    (tmp / "m" / "mission-graph.json").write_text(text, encoding="utf-8")
    return tmp / "m", f"mission graph is {len(text)} bytes; maximum is 64 MiB"


def _not_json(tmp: Path, graph: dict[str, Any]) -> tuple[Path, str]:
    (tmp / "m").mkdir()
    (tmp / "m" / "mission-graph.json").write_text('{"nodes":', encoding="utf-8")
    path = tmp / "m" / "mission-graph.json"
    return (
        tmp / "m",
        f"mission graph is not valid JSON (expecting value at line 1 column 10): {path}",
    )


def _nested_too_deeply(tmp: Path, graph: dict[str, Any]) -> tuple[Path, str]:
    # Well-formed JSON, but 100,000 levels deep: more than the stdlib parser's recursion takes.
    (tmp / "m").mkdir()
    deep = "[" * 100_000 + "]" * 100_000
    (tmp / "m" / "mission-graph.json").write_text(f'{{"nodes": {deep}}}', encoding="utf-8")
    path = tmp / "m" / "mission-graph.json"
    return tmp / "m", f"mission graph is not valid JSON (nested too deeply): {path}"


def _not_utf8(tmp: Path, graph: dict[str, Any]) -> tuple[Path, str]:
    (tmp / "m").mkdir()
    (tmp / "m" / "mission-graph.json").write_bytes(b'{"a": "\xff"}')
    path = tmp / "m" / "mission-graph.json"
    return tmp / "m", f"mission graph is not valid UTF-8 (byte 7): {path}"


def _unsupported_version(tmp: Path, graph: dict[str, Any]) -> tuple[Path, str]:
    folder = _graph_file(tmp / "m", graph | {"schema_version": "rho.graph/v2"})
    return folder, 'unsupported graph schema version "rho.graph/v2"; expected "rho.graph/v1"'


def _no_generated_at(tmp: Path, graph: dict[str, Any]) -> tuple[Path, str]:
    data = {key: value for key, value in graph.items() if key != "generated_at"}
    return _graph_file(tmp / "m", data), 'graph is missing required field "generated_at"'


def _dangling_edge(tmp: Path, graph: dict[str, Any]) -> tuple[Path, str]:
    edge = next(e for e in graph["edges"] if e["kind"] == "depends_on")
    gone = edge["to"]["id"].rsplit("/", 1)[0] + "/gone"
    edge["to"]["id"] = gone
    message = f'edge "{edge["id"]}" references missing target execution/{gone}'
    return _graph_file(tmp / "m", graph), message


# Each case breaks a mission folder under a temporary folder, from a real graph's data, and
# returns the folder to export and the error message expected.
BROKEN: dict[str, Callable[[Path, dict[str, Any]], tuple[Path, str]]] = {
    "missing folder": _missing_folder,
    "missing file": _missing_file,
    "folder in place of the file": _folder_in_place,
    "over 64 MiB": _too_large,
    "undecodable JSON": _not_json,
    "nested too deeply": _nested_too_deeply,
    "not UTF-8": _not_utf8,
    "unsupported schema version": _unsupported_version,
    "no generated_at": _no_generated_at,
    "edge to a missing node": _dangling_edge,
}
