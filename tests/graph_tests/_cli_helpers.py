"""Helpers to run the installed ``rho`` console script as a real subprocess, hermetically.

Every run gets a clean environment: a private ``HOME``, no global or system git config, a fixed
git identity, no proxy (uploads go to a local server), and no ``RHO_TASK_STORE`` or
``RHO_CLOUD_TOKEN`` unless a test passes one. ``BROKEN`` lists the ways a mission folder's
``mission-graph.json`` can be unreadable or invalid, each with the error line rho must print.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RHO = Path(sys.executable).parent / "rho"

_IDENTITY = {
    "GIT_AUTHOR_NAME": "rho graph tests",
    "GIT_AUTHOR_EMAIL": "graph-tests@example.invalid",
    "GIT_COMMITTER_NAME": "rho graph tests",
    "GIT_COMMITTER_EMAIL": "graph-tests@example.invalid",
}
# Left out of every child's environment: they would point rho, git or httpx elsewhere.
_DROPPED = {
    "RHO_TASK_STORE",
    "RHO_CLOUD_TOKEN",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_CEILING_DIRECTORIES",
    "EMAIL",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
}


@dataclass(frozen=True)
class Result:
    """What one ``rho`` process did; ``out`` is stdout's exact bytes."""

    code: int
    out: bytes
    stderr: str

    @property
    def stdout(self) -> str:
        """stdout decoded as UTF-8."""
        return self.out.decode("utf-8")

    @property
    def stderr_lines(self) -> list[str]:
        """stderr split into lines, without line ends."""
        return self.stderr.splitlines()

    def json(self) -> Any:
        """stdout parsed as one JSON document."""
        return json.loads(self.out)


def child_env(home: Path, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """A hermetic environment with *home* as ``HOME``; *env* adds (an empty value removes)."""
    full = {k: v for k, v in os.environ.items() if k.upper() not in _DROPPED}
    full.update(_IDENTITY, HOME=str(home), GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    full.update(COLUMNS="200", NO_COLOR="1")
    for key, value in (env or {}).items():
        if value:
            full[key] = value
        else:
            full.pop(key, None)
    return full


def run_rho(
    *args: str,
    cwd: Path,
    home: Path,
    env: Mapping[str, str] | None = None,
    stdin: bytes = b"",
) -> Result:
    """Run ``rho ARGS`` in *cwd* with *stdin* piped in (never the terminal of the test run).

    A run that takes a minute is a hang and fails the test.
    """
    done = subprocess.run(
        [str(RHO), *args],
        cwd=cwd,
        env=child_env(home, env),
        input=stdin,
        capture_output=True,
        timeout=60,
    )
    return Result(done.returncode, done.stdout, done.stderr.decode("utf-8", "replace"))


def git(cwd: Path, home: Path, *args: str) -> str:
    """Run the real git CLI in *cwd* (hermetic environment) and return its output."""
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=child_env(home), check=True, capture_output=True, text=True
    )
    return done.stdout


def init_repo(root: Path, home: Path) -> Path:
    """A git repository at *root* on branch ``main`` with one commit of one file."""
    root.mkdir(parents=True)
    git(root, home, "init", "--quiet", "--initial-branch=main")
    (root / "README.txt").write_text("graph tests\n", encoding="utf-8")
    git(root, home, "add", "--all")
    git(root, home, "commit", "--quiet", "--message=initial")
    return root


def write_store(path: Path, tasks: list[dict[str, Any]]) -> Path:
    """Write a task store file by hand and return its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {"schema_version": "rho.tasks/v1", "tasks": tasks}
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    return path


def tree_digest(root: Path) -> str:
    """SHA-256 over every entry below *root*: relative path, mode, mtime and file bytes.

    Equal digests mean no file was created, removed, rewritten or re-permissioned.
    """
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        status = path.lstat()
        line = f"{path.relative_to(root)}\0{status.st_mode:o}\0{status.st_mtime_ns}\0"
        digest.update(line.encode())
        if path.is_file() and not path.is_symlink():
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


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
