"""Helpers to run the installed ``rho`` console script as a real subprocess, on real files.

Each run gets a clean environment: no ``RHO_TASK_STORE`` unless a test sets one, a wide
``COLUMNS`` so that rich tables never fold a cell, and a working directory chosen by the test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

RHO = Path(sys.executable).parent / "rho"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "rho tests",
    "GIT_AUTHOR_EMAIL": "tests@example.invalid",
    "GIT_COMMITTER_NAME": "rho tests",
    "GIT_COMMITTER_EMAIL": "tests@example.invalid",
}


@dataclass(frozen=True)
class Result:
    """What one ``rho`` process did."""

    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        """stdout parsed as one JSON document."""
        return json.loads(self.stdout)

    @property
    def stderr_lines(self) -> list[str]:
        """stderr split into lines, without the trailing newline."""
        return self.stderr.splitlines()


class RunRho(Protocol):
    """The ``rho`` fixture: run ``rho ARGS`` (by default in the test's temporary folder)."""

    def __call__(
        self, *args: str, cwd: Path | None = None, env: Mapping[str, str] | None = None
    ) -> Result: ...


def run_rho(*args: str, cwd: Path, env: Mapping[str, str] | None = None) -> Result:
    """Run ``rho ARGS`` in *cwd*; *env* adds to (or, with an empty value, removes from) a clean env.

    A run that takes a minute is a hang, not slowness: the timeout turns it into a failure.
    """
    full_env = {k: v for k, v in os.environ.items() if k != "RHO_TASK_STORE"}
    full_env.update(GIT_ENV, COLUMNS="200", NO_COLOR="1")
    for key, value in (env or {}).items():
        if value:
            full_env[key] = value
        else:
            full_env.pop(key, None)
    done = subprocess.run(
        [str(RHO), *args], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=60
    )
    return Result(done.returncode, done.stdout, done.stderr)


def assert_bad_input(result: Result, message: str, hint: str | None = None) -> None:
    """Exit 2, nothing on stdout, and on stderr exactly ``error: <message>`` (and the hint)."""
    expected = [f"error: {message}"] + ([f"hint: {hint}"] if hint is not None else [])
    assert (result.code, result.stderr_lines, result.stdout) == (2, expected, "")


def write_store(path: Path, tasks: list[dict[str, Any]], **document: Any) -> Path:
    """Write a store file by hand (as a user or an older version might) and return its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"schema_version": "rho.tasks/v1", **document, "tasks": tasks}))
    return path


def task(task_id: str, *blockers: str, status: str = "pending", **extra: Any) -> dict[str, Any]:
    """A minimal task dict, blocked by *blockers*, with any *extra* keys."""
    data: dict[str, Any] = {"id": task_id, "subject": f"do {task_id}", "status": status}
    if blockers:
        data["dependencies"] = [{"targetId": blocker, "type": "blocks"} for blocker in blockers]
    return data | extra


# A hand-written diamond: task_1 (completed) blocks task_2 and task_3 (the latter twice), which
# both block task_4; task_1.1 is a subtask of task_1; task_2 has a related link to a task that
# does not exist (related links never matter to scheduling).
DIAMOND: list[dict[str, Any]] = [
    task("task_1", status="completed", owner="ada", metadata={"command": "make one"}),
    task(
        "task_1.1", parentId="task_1", dependencies=[{"targetId": "task_1", "type": "parent-child"}]
    ),
    task(
        "task_2",
        dependencies=[
            {"targetId": "task_1", "type": "blocks"},
            {"targetId": "task_9", "type": "related"},
        ],
    ),
    task("task_3", "task_1", "task_1"),
    task("task_4", "task_3", "task_2"),
]
DIAMOND_WAVES = [["task_1", "task_1.1"], ["task_2", "task_3"], ["task_4"]]
# What is left to run: task_1 is completed, so what it blocked moves up.
DIAMOND_TO_RUN = [["task_1.1", "task_2", "task_3"], ["task_4"]]
