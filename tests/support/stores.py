"""Task stores and mission folders for the tests: tasks written, imported and read back.

``import_tasks`` loads tasks through the real ``rho task import``; ``write_store`` writes a
store file by hand (as a user or an older version might), for what the CLI refuses to write.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from support.rho import run_rho

__all__ = [
    "DIAMOND",
    "DIAMOND_TO_RUN",
    "DIAMOND_WAVES",
    "exclude_rho",
    "import_tasks",
    "journal_events",
    "mission_dir",
    "mission_ids",
    "spec",
    "store_bytes",
    "store_path",
    "store_tasks",
    "task",
    "write_store",
]


def spec(task_id: str, command: str | None, *blockers: str, **extra: Any) -> dict[str, Any]:
    """One task for ``rho task import``: pending, subject ``do <id>``, blocked by *blockers*,
    running *command*, with any *extra* keys (a ``subject`` of its own among them)."""
    data: dict[str, Any] = {
        "id": task_id,
        "subject": f"do {task_id}",
        "status": "pending",
        "dependencies": [{"targetId": blocker, "type": "blocks"} for blocker in blockers],
    }
    if command is not None:
        data["metadata"] = {"command": command}
    return data | extra


def task(task_id: str, *blockers: str, status: str = "pending", **extra: Any) -> dict[str, Any]:
    """A minimal task dict, blocked by *blockers*, with any *extra* keys."""
    data: dict[str, Any] = {"id": task_id, "subject": f"do {task_id}", "status": status}
    if blockers:
        data["dependencies"] = [{"targetId": blocker, "type": "blocks"} for blocker in blockers]
    return data | extra


def import_tasks(
    repo: Path, tasks: list[dict[str, Any]], *store_args: str, home: Path | None = None
) -> None:
    """Load *tasks* into the repository's store (or ``--store ...``) with ``rho task import``
    (*home* as ``run_rho`` takes it)."""
    source = repo.parent / f"{repo.name}-import.json"
    source.write_text(json.dumps({"tasks": tasks}), encoding="utf-8")
    result = run_rho("task", "import", str(source), *store_args, cwd=repo, home=home)
    assert result.code == 0, result.stderr


def write_store(path: Path, tasks: list[dict[str, Any]], **document: Any) -> Path:
    """Write a store file by hand (as a user or an older version might) and return its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"schema_version": "rho.tasks/v1", **document, "tasks": tasks}))
    return path


def exclude_rho(repo: Path) -> Path:
    """Add ``.rho/`` to *repo*'s ``.git/info/exclude``, as rho's first mission does: a snapshot
    of the user's checkout taken before a mission then differs only in what the mission did."""
    with (repo / ".git" / "info" / "exclude").open("a", encoding="utf-8") as exclude:
        exclude.write(".rho/\n")
    return repo


def store_path(repo: Path) -> Path:
    """The default store of *repo*."""
    return repo / ".rho" / "tasks.json"


def store_bytes(repo: Path) -> bytes:
    """The store file's bytes."""
    return store_path(repo).read_bytes()


def store_tasks(repo: Path, path: Path | None = None) -> dict[str, dict[str, Any]]:
    """The store's tasks by id, read straight from the file."""
    document = json.loads((path or store_path(repo)).read_text(encoding="utf-8"))
    return {task["id"]: task for task in document["tasks"]}


def mission_dir(repo: Path) -> Path:
    """The one mission folder of *repo*."""
    (folder,) = (repo / ".rho" / "missions").iterdir()
    return folder


def mission_ids(repo: Path) -> list[str]:
    """The ids of the missions of *repo* that have written their mission.json."""
    folder = repo / ".rho" / "missions"
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if (p / "mission.json").is_file())


def journal_events(folder: Path, event: str) -> list[dict[str, Any]]:
    """The journal entries of kind *event* of the mission in *folder*."""
    journal = folder / "journal.jsonl"
    if not journal.is_file():
        return []
    entries = [json.loads(line) for line in journal.read_text(encoding="utf-8").splitlines()]
    return [entry for entry in entries if entry["event"] == event]


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
