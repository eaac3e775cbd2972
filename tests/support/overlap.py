"""What the tests of overlapping work share: a package whose ``__init__.py`` three tasks of one
wave append to, and readers of what the mission recorded."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from support.repos import run_git
from support.stores import import_tasks, mission_dir, spec

ROOT = Path(__file__).resolve().parents[2]
STAND_IN = ROOT / "examples" / "agents" / "stand-in-resolver.sh"
NAMES = ("a", "b", "c")
REGISTRY = "".join(f"from .{n} import {n}\n" for n in NAMES)


def package(project: Path) -> None:
    """A package whose ``__init__.py`` is the registry the tasks append to."""
    (project / "pkg").mkdir()
    (project / "pkg" / "__init__.py").write_text("")
    run_git(project, "add", "--all")
    run_git(project, "commit", "--quiet", "--message=package")


def registering_tasks(
    project: Path, marks: Path | None, extra: Callable[[str], str] = lambda name: ""
) -> None:
    """Three tasks of one wave; each run leaves a line in ``marks/<task>.runs`` (when
    *marks*), then runs ``extra(name)`` (a shell snippet ending with ``&&``, or nothing)
    before its edits."""
    tasks = []
    for name in NAMES:
        runs = f"echo run >> {shlex.quote(str(marks / f'add_{name}.runs'))} &&" if marks else ""
        command = (
            f"{runs} {extra(name)} echo 'from .{name} import {name}' >> "
            f"pkg/__init__.py && echo '{name} = 1' > pkg/{name}.py"
        )
        task = spec(f"add_{name}", command)
        task["subject"] = f"add {name}"
        tasks.append(task)
    import_tasks(project, tasks)


def runs_of(marks: Path, task_id: str) -> int:
    path = marks / f"{task_id}.runs"
    return len(path.read_text().splitlines()) if path.exists() else 0


def mission_json(project: Path) -> dict[str, Any]:
    record: dict[str, Any] = json.loads((mission_dir(project) / "mission.json").read_text())
    return record


def features(project: Path) -> dict[str, dict[str, Any]]:
    return {f["id"]: f for f in mission_json(project)["features"]}
