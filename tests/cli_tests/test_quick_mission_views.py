"""``rho mission show`` and ``rho mission list`` answer from the mission folders' JSON without
click, pydantic or rich, and print what the full CLI prints from its validated missions.

The full CLI is reached as ``rho_mission.cli._main.main``, which the ``rho`` script reaches
only after the quick lane declined: so each comparison runs both lanes on the same folders.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from filelock import FileLock

from support.rho import RHO, run_rho
from support.stores import import_tasks, spec

FULL_CLI = "import sys; from rho_mission.cli._main import main; main(sys.argv[1:])"
HEAVY = {"click", "pydantic", "pydantic_core", "rich", "filelock", "anyio", "git"}


def _lanes(project: Path, *args: str) -> tuple[tuple[int, str, str], tuple[int, str, str]]:
    def run(argv: list[str]) -> tuple[int, str, str]:
        done = subprocess.run(argv, cwd=project, capture_output=True, text=True, check=False)
        return done.returncode, done.stdout, done.stderr

    return run([str(RHO), *args]), run([sys.executable, "-c", FULL_CLI, *args])


@pytest.fixture
def three_missions(project: Path) -> dict[str, str]:
    """A completed mission, a partial one (a task failed, one held), and one recorded as
    running that no process runs (interrupted); their ids by kind."""
    import_tasks(project, [spec("task_1", "echo one > one.txt")])
    assert run_rho("mission", "--from-tasks", cwd=project).code == 0
    held = {**spec("task_9", "true"), "status": "cancelled"}
    tasks = [spec("task_2", "exit 3"), spec("task_3", "echo 3 > three.txt"),
             spec("task_4", "true", "task_9"), held]  # fmt: skip
    import_tasks(project, tasks)
    assert run_rho("mission", "--from-tasks", cwd=project).code == 1
    assert run_rho("task", "update", "task_2", "--command", "true", cwd=project).code == 0
    assert run_rho("mission", "--from-tasks", "--only", "task_2", cwd=project).code == 0
    folders = sorted((project / ".rho" / "missions").iterdir(), key=_started)
    ids = dict(zip(["completed", "partial", "interrupted"], [f.name for f in folders], strict=True))
    record = folders[2] / "mission.json"
    document = json.loads(record.read_text())
    record.write_text(json.dumps({**document, "status": "executing", "completed_at": None}))
    return ids


def _started(folder: Path) -> str:
    return str(json.loads((folder / "mission.json").read_text())["started_at"])


@pytest.mark.parametrize(
    "args",
    [
        ("mission", "list"),
        ("mission", "list", "--json"),
        ("mission", "show", "latest"),
        ("mission", "show", "nope"),
        ("--debug", "mission", "show", "latest"),
    ],
)
def test_both_lanes_print_alike(
    project: Path, three_missions: dict[str, str], args: tuple[str, ...]
) -> None:
    quick, full = _lanes(project, *args)
    assert quick == full


def test_every_mission_and_its_prefix_shows_alike(
    project: Path, three_missions: dict[str, str]
) -> None:
    for kind, ident in three_missions.items():
        for name in (ident, ident[:3]):
            quick, full = _lanes(project, "mission", "show", name)
            assert quick == full, kind
            assert quick[0] == 0
    shown = _lanes(project, "mission", "show", three_missions["partial"])[0][1]
    assert "task_2: failed, 1 attempt(s)" in shown
    assert "not run: 2 task(s) held by the task store (its statuses, agents' claims)" in shown
    interrupted = _lanes(project, "mission", "show", three_missions["interrupted"])[0][1]
    assert interrupted.startswith(f"mission {three_missions['interrupted']}  interrupted\n")


def test_a_running_mission_is_told_from_an_interrupted_one(
    project: Path, three_missions: dict[str, str]
) -> None:
    ident = three_missions["interrupted"]
    with FileLock(str(project / ".git" / f"rho-mission-{ident}.lock")):
        quick, full = _lanes(project, "mission", "list", "--json")
    assert quick == full
    states = {row["id"]: row["state"] for row in json.loads(quick[1])["missions"]}
    assert states[ident] == "executing"


def test_a_folder_the_lane_cannot_read_is_left_to_the_full_cli(
    project: Path, three_missions: dict[str, str]
) -> None:
    broken = project / ".rho" / "missions" / "0badf00d"
    broken.mkdir()
    (broken / "mission.json").write_text('{"id": "0badf00d", "features": 3}')
    quick, full = _lanes(project, "mission", "list")
    assert quick == full
    assert "0badf00d" not in quick[1], "the full CLI skips what it cannot read"


@pytest.mark.parametrize("args", [("mission", "list"), ("mission", "show", "latest")])
def test_the_views_import_no_heavy_package(
    project: Path, three_missions: dict[str, str], args: tuple[str, ...]
) -> None:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", str(RHO), *args],
        cwd=project,
        capture_output=True,
        text=True,
        check=True,
    )
    names = [line.rpartition("|")[2].strip() for line in done.stderr.splitlines()]
    assert {name.split(".")[0] for name in names if name} & HEAVY == set()
