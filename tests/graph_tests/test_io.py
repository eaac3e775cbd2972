"""Graph files: deterministic bytes, atomic private writes, and every reading error pinned."""

from __future__ import annotations

import copy
import json
import os
import random
import re
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from graph import (
    MAX_GRAPH_FILE_BYTES,
    GraphDocumentError,
    GraphReferenceError,
    GraphSchemaVersionError,
    GraphValidationError,
    dump_graph,
    load_mission_graph,
    read_graph_file,
    validate_graph,
    write_graph,
)

from ._docs import sample


def _shuffled(doc: dict[str, Any], seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    result = copy.deepcopy(doc)
    for key in ("nodes", "edges", "events"):
        rng.shuffle(result[key])
    for fact in result["nodes"] + result["edges"]:
        items = list(fact["attributes"].items())
        rng.shuffle(items)
        fact["attributes"] = dict(items)
    return result


def test_dump_sorts_facts_by_id_with_two_space_indent_and_a_trailing_newline() -> None:
    data = dump_graph(sample())
    text = data.decode()
    assert text.endswith("}\n")
    assert not text.endswith("\n\n")
    assert text.splitlines()[1] == '  "schema_version": "rho.graph/v1",'
    parsed = json.loads(text)
    for key in ("nodes", "edges", "events"):
        ids = [fact["id"] for fact in parsed[key]]
        assert ids == sorted(ids)


@pytest.mark.parametrize("seed", range(5))
def test_the_same_graph_in_any_order_gives_the_same_bytes(seed: int) -> None:
    assert dump_graph(_shuffled(sample(), seed)) == dump_graph(sample())


def test_dump_accepts_a_document_and_reads_back_to_the_same_bytes(tmp_path: Path) -> None:
    path = tmp_path / "graph.json"
    write_graph(path, validate_graph(_shuffled(sample(), 7)))
    assert path.read_bytes() == dump_graph(sample())
    assert dump_graph(read_graph_file(path)) == path.read_bytes()


def test_dump_refuses_an_invalid_graph() -> None:
    doc = sample()
    doc["edges"][0]["to"]["id"] = "nowhere"
    with pytest.raises(GraphReferenceError):
        dump_graph(doc)


def test_write_creates_a_private_file(tmp_path: Path) -> None:
    path = tmp_path / "graph.json"
    write_graph(path, sample())
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_write_replaces_a_world_readable_file_with_a_private_one(tmp_path: Path) -> None:
    path = tmp_path / "graph.json"
    path.write_text("old")
    path.chmod(0o644)
    write_graph(path, sample())
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_bytes() == dump_graph(sample())


def test_write_leaves_no_temporary_file(tmp_path: Path) -> None:
    write_graph(tmp_path / "graph.json", sample())
    write_graph(tmp_path / "graph.json", sample())
    assert sorted(os.listdir(tmp_path)) == ["graph.json"]


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "graph.json"
    path.write_text("old")
    doc = sample()
    doc["nodes"][0]["kind"] = "robot"
    with pytest.raises(GraphValidationError):
        write_graph(path, doc)
    assert path.read_text() == "old"
    assert sorted(os.listdir(tmp_path)) == ["graph.json"]


def test_write_into_a_missing_folder_is_a_document_error(tmp_path: Path) -> None:
    path = tmp_path / "absent" / "graph.json"
    message = f"cannot write graph: no such file or directory: {path}"
    with pytest.raises(GraphDocumentError, match=rf"^{re.escape(message)}$") as caught:
        write_graph(path, sample())
    assert caught.value.path == str(path)


def _mission_dir(tmp_path: Path, content: bytes | None = None) -> Path:
    folder = tmp_path / "mission"
    folder.mkdir()
    if content is not None:
        (folder / "mission-graph.json").write_bytes(content)
    return folder


def test_load_mission_graph_reads_mission_graph_json(tmp_path: Path) -> None:
    folder = _mission_dir(tmp_path, dump_graph(sample()))
    (folder / "mission.json").write_text("not json at all")  # never read
    assert len(load_mission_graph(folder).nodes) == 4


def test_missing_mission_folder(tmp_path: Path) -> None:
    folder = tmp_path / "nope"
    with pytest.raises(
        GraphDocumentError, match=rf"^mission directory not found: {re.escape(str(folder))}$"
    ):
        load_mission_graph(folder)


def test_mission_folder_that_is_a_file(tmp_path: Path) -> None:
    folder = tmp_path / "file"
    folder.write_text("x")
    message = f"mission directory is not a folder: {folder}"
    with pytest.raises(GraphDocumentError, match=rf"^{re.escape(message)}$"):
        load_mission_graph(folder)


def test_missing_mission_graph_file(tmp_path: Path) -> None:
    folder = _mission_dir(tmp_path)
    message = f"mission graph not found: {folder / 'mission-graph.json'}"
    with pytest.raises(GraphDocumentError, match=rf"^{re.escape(message)}$"):
        load_mission_graph(folder)


def test_a_folder_in_place_of_the_mission_graph(tmp_path: Path) -> None:
    folder = _mission_dir(tmp_path)
    (folder / "mission-graph.json").mkdir()
    message = f"mission graph is a folder, not a file: {folder / 'mission-graph.json'}"
    with pytest.raises(GraphDocumentError, match=rf"^{re.escape(message)}$"):
        load_mission_graph(folder)


def test_a_mission_graph_over_64_mib(tmp_path: Path) -> None:
    size = MAX_GRAPH_FILE_BYTES + 10
    folder = _mission_dir(tmp_path, b" " * size)
    message = f"mission graph is {size} bytes; maximum is 64 MiB"
    with pytest.raises(GraphDocumentError, match=rf"^{re.escape(message)}$"):
        load_mission_graph(folder)


def test_a_mission_graph_of_exactly_64_mib_is_read(tmp_path: Path) -> None:
    data = dump_graph(sample())
    padded = data + b" " * (MAX_GRAPH_FILE_BYTES - len(data))
    assert len(load_mission_graph(_mission_dir(tmp_path, padded)).nodes) == 4


def test_an_undecodable_mission_graph(tmp_path: Path) -> None:
    folder = _mission_dir(tmp_path, b'{"nodes": [')
    path = folder / "mission-graph.json"
    message = f"mission graph is not valid JSON (expecting value at line 1 column 12): {path}"
    with pytest.raises(GraphDocumentError, match=rf"^{re.escape(message)}$"):
        load_mission_graph(folder)


def test_a_mission_graph_nested_too_deeply(tmp_path: Path) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    folder = _mission_dir(tmp_path, b'{"nodes": ' + deep + b"}")
    path = folder / "mission-graph.json"
    message = f"mission graph is not valid JSON (nested too deeply): {path}"
    with pytest.raises(GraphDocumentError, match=rf"^{re.escape(message)}$"):
        load_mission_graph(folder)


def test_a_mission_graph_that_is_not_utf8(tmp_path: Path) -> None:
    folder = _mission_dir(tmp_path, b'{"a": "\xff"}')
    message = f"mission graph is not valid UTF-8 (byte 7): {folder / 'mission-graph.json'}"
    with pytest.raises(GraphDocumentError, match=rf"^{re.escape(message)}$"):
        load_mission_graph(folder)


def test_a_mission_graph_of_an_unsupported_schema_version(tmp_path: Path) -> None:
    doc = {**sample(), "schema_version": "rho.graph/v9"}
    folder = _mission_dir(tmp_path, json.dumps(doc).encode())
    message = 'unsupported graph schema version "rho.graph/v9"; expected "rho.graph/v1"'
    with pytest.raises(GraphSchemaVersionError, match=rf"^{re.escape(message)}$"):
        load_mission_graph(folder)


def test_a_mission_graph_without_generated_at(tmp_path: Path) -> None:
    doc = sample()
    del doc["generated_at"]
    folder = _mission_dir(tmp_path, json.dumps(doc).encode())
    message = 'graph is missing required field "generated_at"'
    with pytest.raises(GraphValidationError, match=rf"^{re.escape(message)}$"):
        load_mission_graph(folder)


def test_a_mission_graph_that_fails_validation(tmp_path: Path) -> None:
    doc = sample()
    doc["edges"][0]["to"]["id"] = "rho/task/zz"
    folder = _mission_dir(tmp_path, json.dumps(doc).encode())
    message = 'edge "rho/edge/b/a" references missing target execution/rho/task/zz'
    with pytest.raises(GraphReferenceError, match=rf"^{re.escape(message)}$"):
        load_mission_graph(folder)


def test_an_unreadable_graph_file(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    path = tmp_path / "graph.json"
    path.write_bytes(dump_graph(sample()))
    path.chmod(0)
    message = f"cannot read graph: permission denied: {path}"
    if os.geteuid() != 0:
        with pytest.raises(GraphDocumentError, match=rf"^{re.escape(message)}$"):
            read_graph_file(path)
        return
    # Root reads any file: read it from a child without the capabilities that let it.
    bwrap: str = request.getfixturevalue("bwrap")
    reader = (
        "import sys\nfrom graph import GraphDocumentError, read_graph_file\n"
        "try:\n    read_graph_file(sys.argv[1])\nexcept GraphDocumentError as exc:\n"
        "    print(exc)\n"
    )
    argv = [bwrap, "--dev-bind", "/", "/", "--cap-drop", "ALL", sys.executable, "-c", reader]
    done = subprocess.run([*argv, str(path)], capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, message + "\n", "")
