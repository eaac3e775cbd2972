"""kill -9 in the middle of a wave: a resume adopts what had finished, and counts its spend once.

Wave 1 holds ``a`` (writes a file and a usage file, and counts its runs in a file outside the
repository) and ``b`` (waits on a file the test creates only before the last resume); ``c``
joins both in wave 2. ``rho`` is SIGKILLed once ``a``'s finish is in the journal while ``b``
still runs: mission.json, written at joins only, still has ``a`` to do. A resume checks
``a``'s branch against the journal (the head its attempt's end recorded, on top of the wave's
start) and adopts it: it never runs again, keeps its attempt number, and its usage, read from
the journal, counts once, against the budget too. A branch moved since that end is not
adopted: the task runs again (or, holding commits rho did not make, the resume refuses). A
resume itself killed once it saved the adoption, before any write of the task store, still
ends with every task completed in the store.
"""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support.repos import tree_files
from support.rho import RhoRuns, rho_env, run_rho, wait_file_cmd, wait_until
from support.stores import import_tasks, journal_events, mission_dir, spec, store_tasks

pytestmark = pytest.mark.usefixtures("no_leftover_tasks")


def _q(path: Path) -> str:
    return shlex.quote(str(path))


def _usage(cost: float, tokens: int) -> str:
    """A shell command writing one ``rho.usage/v1`` object to ``$RHO_USAGE_FILE``."""
    record = {"schema_version": "rho.usage/v1", "cost_usd": cost, "input_tokens": tokens}
    return f'printf %s {shlex.quote(json.dumps(record))} > "$RHO_USAGE_FILE"'


def _mission(folder: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((folder / "mission.json").read_text(encoding="utf-8"))
    return document


def _features(folder: Path) -> dict[str, dict[str, Any]]:
    return {feature["id"]: feature for feature in _mission(folder)["features"]}


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def _journal_has(project: Path, event: str, feature_id: str) -> bool:
    missions = project / ".rho" / "missions"
    if not missions.is_dir() or not any(missions.iterdir()):
        return False
    return any(
        e.get("feature_id") == feature_id for e in journal_events(mission_dir(project), event)
    )


def _crash_after_a_finished(project: Path, marks: Path, runs: RhoRuns, *budget: str) -> Path:
    """Run the mission, SIGKILL rho once ``a`` finished while ``b`` runs; the mission's folder."""
    import_tasks(
        project,
        [
            spec("a", f"echo a >> {_q(marks / 'a.runs')}; echo a > a.txt; {_usage(0.6, 100)}"),
            spec(
                "b",
                f"echo b >> {_q(marks / 'b.runs')}; {wait_file_cmd(marks / 'go')}; "
                f"echo b > b.txt; {_usage(0.25, 10)}",
            ),
            spec("c", "cat a.txt b.txt > c.txt", "a", "b"),
        ],
    )
    first = runs.start("mission", "--from-tasks", *budget, cwd=project)
    wait_until(
        lambda: _journal_has(project, "finish", "a") and _journal_has(project, "process", "b"),
        "a to finish while b runs",
    )
    first.kill()
    assert runs.wait(first).code == -signal.SIGKILL
    folder = mission_dir(project)
    # Only the journal knows that a finished: mission.json is written at joins.
    assert _features(folder)["a"]["status"] != "completed"
    return folder


def test_a_resume_after_kill_9_adopts_the_finished_task_and_its_budget_counts_it_once(
    project: Path, marks: Path, runs: RhoRuns
) -> None:
    folder = _crash_after_a_finished(project, marks, runs, "--budget-usd", "0.5")

    # a's $0.60 is over the $0.50 budget: the resume starts nothing, and does not run a again.
    held = run_rho("mission", "resume", str(folder), cwd=project)
    assert held.code == 1, held.stderr
    assert "stopped: budget reached: $0.60 of $0.50" in held.stdout
    assert (_lines(marks / "a.runs"), _lines(marks / "b.runs")) == (["a"], ["b"])
    features = _features(folder)
    assert (features["a"]["status"], features["a"]["attempts"]) == ("completed", 1)
    assert [r["cost_usd"] for r in features["a"]["attempt_usage"]] == [0.6]
    [adopted] = journal_events(folder, "adopt")
    assert (adopted["feature_id"], adopted["attempt"]) == ("a", 1)

    (marks / "go").touch()
    done = run_rho("mission", "resume", str(folder), "--budget-usd", "5", cwd=project)

    assert done.code == 0, done.stderr
    assert (_lines(marks / "a.runs"), _lines(marks / "b.runs")) == (["a"], ["b", "b"])
    mission = _mission(folder)
    features = _features(folder)
    assert {i: f["attempts"] for i, f in features.items()} == {"a": 1, "b": 1, "c": 1}
    assert [(r["attempt"], r["cost_usd"]) for r in features["a"]["attempt_usage"]] == [(1, 0.6)]
    assert (mission["usage"]["cost_usd"], mission["usage"]["input_tokens"]) == (0.85, 110)
    files = tree_files(project, mission["integration_branch"])
    assert (files["a.txt"], files["c.txt"]) == ("a\n", "a\nb\n")
    assert {task["status"] for task in store_tasks(project).values()} == {"completed"}
    shown = run_rho("mission", "show", str(folder), cwd=project).stdout
    [row] = [line.split() for line in shown.splitlines() if line.split()[:2] == ["1", "a"]]
    assert row[2:4] == ["completed", "1"]


# A resume run by the library in a process of its own, with an observer that stalls it when b
# is dispatched: after the resume's start wrote mission.json (a adopted, completed), before its
# first write of the task store. The test SIGKILLs it there.
_STALLED_RESUME = """
import sys, time
from pathlib import Path
from rho_mission import Mission

class StallAtB:
    def feature_changed(self, mission, feature):
        if feature.id == "b" and feature.status == "in_progress":
            Path(sys.argv[2]).touch()
            time.sleep(600)

    def wave_joined(self, mission, join):
        pass

Mission.load(sys.argv[1]).resume_sync(observer=StallAtB())
"""


def _stalled_resume(project: Path, marks: Path, runs: RhoRuns, tmp_path: Path) -> Path:
    """`_crash_after_a_finished`, then a resume SIGKILLed at b's dispatch; the folder."""
    folder = _crash_after_a_finished(project, marks, runs)
    driver = tmp_path / "stalled_resume.py"
    driver.write_text(_STALLED_RESUME, encoding="utf-8")
    stalled = subprocess.Popen(
        [sys.executable, str(driver), str(folder), str(marks / "stalled")],
        cwd=project,
        env=rho_env(),
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_until(lambda: (marks / "stalled").exists(), "the resume to dispatch b")
    finally:
        stalled.kill()
        stalled.wait()
    # The kill came after the resume's start recorded the adoption in mission.json.
    assert _features(folder)["a"]["status"] == "completed"
    return folder


def _resumed_to_the_end(project: Path, marks: Path, folder: Path) -> None:
    (marks / "go").touch()
    done = run_rho("mission", "resume", str(folder), cwd=project)

    assert done.code == 0, done.stderr
    assert (_lines(marks / "a.runs"), _lines(marks / "b.runs")) == (["a"], ["b", "b"])
    assert {i: t["status"] for i, t in store_tasks(project).items()} == {
        "a": "completed",
        "b": "completed",
        "c": "completed",
    }


def test_a_resume_killed_at_its_start_leaves_the_adopted_task_completed_in_the_store(
    project: Path, marks: Path, runs: RhoRuns, tmp_path: Path
) -> None:
    folder = _stalled_resume(project, marks, runs, tmp_path)
    _resumed_to_the_end(project, marks, folder)


def test_a_resume_completes_a_task_left_in_progress_under_its_lease_that_mission_json_completed(
    project: Path, marks: Path, runs: RhoRuns, tmp_path: Path
) -> None:
    folder = _stalled_resume(project, marks, runs, tmp_path)
    # What a save of mission.json ahead of the store's write leaves (an older rho's resume, a
    # ladder's durable landing): a still in_progress in the store, under the mission's lease.
    path = project / ".rho" / "tasks.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    [a] = [task for task in document["tasks"] if task["id"] == "a"]
    assert a["metadata"]["rho.lease"] == _mission(folder)["id"]
    a["status"] = "in_progress"
    path.write_text(json.dumps(document), encoding="utf-8")

    _resumed_to_the_end(project, marks, folder)


def test_a_branch_moved_after_its_task_finished_is_not_adopted_and_the_task_runs_again(
    project: Path, marks: Path, runs: RhoRuns
) -> None:
    folder = _crash_after_a_finished(project, marks, runs)
    mission = _mission(folder)
    branch = f"rho-mission/{mission['id']}/a"
    # Put back at the wave's start (a commit rho wrote there): a's finished work is not there.
    _git(project, "update-ref", f"refs/heads/{branch}", mission["base_commit"])

    (marks / "go").touch()
    done = run_rho("mission", "resume", str(folder), cwd=project)

    assert done.code == 0, done.stderr
    assert _lines(marks / "a.runs") == ["a", "a"]
    assert journal_events(folder, "adopt") == []
    a = _features(folder)["a"]
    # Both runs spent: the second is attempt 2, and the first one's record is kept.
    assert a["attempts"] == 2
    assert [(r["attempt"], r["cost_usd"]) for r in a["attempt_usage"]] == [(1, 0.6), (2, 0.6)]
    assert _mission(folder)["usage"]["cost_usd"] == 1.45
    files = tree_files(project, _mission(folder)["integration_branch"])
    assert (files["a.txt"], files["c.txt"]) == ("a\n", "a\nb\n")


def test_a_branch_given_commits_after_its_task_finished_is_refused_never_adopted(
    project: Path, marks: Path, runs: RhoRuns
) -> None:
    folder = _crash_after_a_finished(project, marks, runs)
    mission = _mission(folder)
    branch = f"rho-mission/{mission['id']}/a"
    # A commit on top of a's finished work, as a task of the same mission could make it.
    tree = _git(project, "rev-parse", f"{branch}^{{tree}}")
    planted = _git(project, "commit-tree", tree, "-p", branch, "-m", "planted")
    _git(project, "update-ref", f"refs/heads/{branch}", planted)
    (marks / "go").touch()

    refused = run_rho("mission", "resume", str(folder), cwd=project)

    assert refused.code == 2
    assert refused.stderr.startswith(f'error: "{branch}" holds commits rho did not make (')
    assert _lines(marks / "a.runs") == ["a"]
    assert _git(project, "rev-parse", branch) == planted
    assert journal_events(folder, "adopt") == []


def test_lines_a_task_appends_to_the_journal_neither_hide_a_spend_nor_adopt_unfinished_work(
    project: Path, marks: Path, runs: RhoRuns
) -> None:
    # Without --sandbox a task can write the journal (it is the user): a's attempt 1 spent
    # nothing, says b, and b finished.
    forged = [
        {"event": "usage", "feature_id": "a", "stage": "task", "attempt": 1, "cost_usd": 0},
        {"event": "finish", "feature_id": "b", "status": "completed", "attempts": 1},
    ]
    appends = "; ".join(
        f'echo {shlex.quote(json.dumps(line))} >> "$RHO_MISSION_DIR/journal.jsonl"'
        for line in forged
    )
    import_tasks(
        project,
        [
            spec("a", f"echo a >> {_q(marks / 'a.runs')}; echo a > a.txt; {_usage(0.6, 100)}"),
            spec(
                "b",
                f"echo b >> {_q(marks / 'b.runs')}; {wait_file_cmd(marks / 'a-finished')}; "
                f"{appends}; touch {_q(marks / 'forged')}; {wait_file_cmd(marks / 'go')}; "
                "echo b > b.txt",
            ),
        ],
    )
    first = runs.start("mission", "--from-tasks", cwd=project)
    wait_until(lambda: _journal_has(project, "finish", "a"), "a to finish")
    (marks / "a-finished").touch()
    wait_until((marks / "forged").exists, "b to append to the journal")
    first.kill()
    assert runs.wait(first).code == -signal.SIGKILL
    folder = mission_dir(project)
    (marks / "go").touch()

    done = run_rho("mission", "resume", str(folder), cwd=project)

    assert done.code == 0, done.stderr
    assert (_lines(marks / "a.runs"), _lines(marks / "b.runs")) == (["a"], ["b", "b"])
    assert [event["feature_id"] for event in journal_events(folder, "adopt")] == ["a"]
    a = _features(folder)["a"]
    assert [(r["attempt"], r["cost_usd"]) for r in a["attempt_usage"]] == [(1, 0.6)]
    files = tree_files(project, _mission(folder)["integration_branch"])
    assert (files["a.txt"], files["b.txt"]) == ("a\n", "b\n")
