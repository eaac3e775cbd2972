"""Importing beads, Task Master and GitHub issues, end to end: import, ready, a mission, a
second import, and export back (hand-written fixtures in ``trackers/``, from each tool's docs)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from support.environ import IDENTITY as GIT_ENV
from support.rho import RHO, RunRho

FIXTURES = Path(__file__).with_name("trackers")


@pytest.fixture
def project(repo: Path) -> Path:
    subprocess.run(
        ["git", "commit", "-q", "--allow-empty", "-m", "first"],
        cwd=repo,
        check=True,
        env={**os.environ, **GIT_ENV},
    )
    return repo


def _ready(rho: RunRho, repo: Path) -> list[str]:
    result = rho("task", "ready", "--json", cwd=repo)
    assert result.code == 0, result.stderr
    return [task["id"] for task in result.json()["tasks"]]


def _tasks(rho: RunRho, repo: Path) -> dict[str, dict[str, Any]]:
    listed = rho("task", "export", cwd=repo)
    assert listed.code == 0, listed.stderr
    return {task["id"]: task for task in json.loads(listed.stdout)["tasks"]}


def _import(rho: RunRho, repo: Path, *args: str) -> str:
    result = rho("task", "import", *args, cwd=repo)
    assert result.code == 0, result.stderr
    return result.stdout


def test_beads_issues_keep_their_ids_links_and_statuses(rho: RunRho, project: Path) -> None:
    out = _import(rho, project, "--from", "beads", str(FIXTURES / "beads.json"))

    tasks = _tasks(rho, project)
    assert out == "imported 8 task(s) from beads: 8 added, 0 updated\n"
    assert "bd-9" not in tasks  # a tombstone is not imported, and links to it are dropped
    assert {i: t["status"] for i, t in tasks.items()} == {
        "bd-1": "completed",
        "bd-2": "pending",
        "bd-3": "pending",
        "bd-4": "pending",
        "bd-4.1": "skipped",
        "bd-5": "skipped",
        "bd-6": "in_progress",
        "bd-7": "skipped",
    }
    assert tasks["bd-3"]["dependencies"] == [
        {"targetId": "bd-2", "type": "blocks"},
        {"targetId": "bd-5", "type": "related"},
    ]
    assert (tasks["bd-4.1"]["parentId"], tasks["bd-2"]["metadata"]["labels"]) == ("bd-4", ["api"])
    assert tasks["bd-2"]["metadata"]["priority"] == 1
    # The epic bd-4 is a parent, not work: ready offers its work, not it.
    assert _ready(rho, project) == ["bd-2"]
    assert tasks["bd-4"]["metadata"]["rho.group"] is True

    ran = rho("mission", "--from-tasks", "--run", "echo done > $RHO_TASK_ID.txt", "--only",
              "bd-3", cwd=project)  # fmt: skip
    assert ran.code == 0, ran.stderr
    assert {i: t["status"] for i, t in _tasks(rho, project).items() if i in ("bd-2", "bd-3")} == {
        "bd-2": "completed",
        "bd-3": "completed",
    }


def test_beads_jsonl_reads_as_the_array(rho: RunRho, project: Path, tmp_path: Path) -> None:
    issues = json.loads((FIXTURES / "beads.json").read_text())
    lines = tmp_path / "issues.jsonl"
    lines.write_text("".join(json.dumps(issue) + "\n" for issue in issues))
    other = tmp_path / "array.json"
    other.write_text(json.dumps(issues))

    _import(rho, project, "--from", "beads", str(lines))
    _import(rho, project, "--from", "beads", str(other), "--store", str(tmp_path / "b.json"))

    first = _tasks(rho, project)
    second = json.loads(rho("task", "export", "--store", str(tmp_path / "b.json")).stdout)
    strip = ("createdAt", "updatedAt")
    assert [{k: v for k, v in t.items() if k not in strip} for t in first.values()] == [
        {k: v for k, v in t.items() if k not in strip} for t in second["tasks"]
    ]


def test_a_second_import_updates_and_never_duplicates(
    rho: RunRho, project: Path, tmp_path: Path
) -> None:
    source = FIXTURES / "beads.json"
    _import(rho, project, "--from", "beads", str(source))
    store = project / ".rho" / "tasks.json"
    before = store.read_bytes()

    again = _import(rho, project, "--from", "beads", str(source))
    assert again == "imported 8 task(s) from beads: 0 added, 0 updated\n"
    assert store.read_bytes() == before

    # A mission completes bd-2; the tracker still says open: the store keeps completed. A
    # changed title, and a status the tracker changed, are taken.
    assert rho("task", "update", "bd-2", "--status", "completed", cwd=project).code == 0
    issues = json.loads(source.read_text())
    issues[2]["title"] = "Login page, new design"
    issues[3]["status"] = "closed"
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(issues))
    third = _import(rho, project, "--from", "beads", str(edited))

    tasks = _tasks(rho, project)
    assert third == "imported 8 task(s) from beads: 0 added, 2 updated\n"
    assert (tasks["bd-2"]["status"], tasks["bd-3"]["subject"]) == (
        "completed",
        "Login page, new design",
    )
    assert tasks["bd-4"]["status"] == "completed"
    assert len(tasks) == 8


def test_task_master_tasks_and_subtasks(rho: RunRho, project: Path) -> None:
    out = _import(rho, project, "--from", "taskmaster", str(FIXTURES / "tasks.json"))

    tasks = _tasks(rho, project)
    assert out == "imported 9 task(s) from taskmaster: 9 added, 0 updated\n"
    assert {i: t["status"] for i, t in tasks.items()} == {
        "1": "completed",
        "2": "pending",
        "2.1": "completed",
        "2.2": "pending",
        "2.3": "pending",
        "3": "skipped",
        "4": "reviewing",
        "5": "cancelled",
        "6": "skipped",
    }
    assert tasks["2.3"]["dependencies"] == [
        {"targetId": "2.2", "type": "blocks"},
        {"targetId": "2", "type": "parent-child"},
    ]
    assert (
        tasks["1"]["description"]
        == "the layout\n\nDetails:\nmake the folders\n\nTest strategy:\nls"
    )
    assert tasks["1"]["metadata"]["priority"] == 1
    # Task 2 has subtasks: they are its work, and it is done when they are.
    assert _ready(rho, project) == ["2.2"]
    ran = rho("mission", "--from-tasks", "--run", "true", "--dry-run", cwd=project)
    assert ran.stdout.splitlines()[1:6] == [
        "wave 1:",
        "  2.2: Grammar",
        "    $ true",
        "wave 2:",
        "  2.3: Error messages",
    ]
    ran = rho("mission", "--from-tasks", "--run", "echo done > t$RHO_TASK_ID.txt", cwd=project)
    assert ran.code == 0, ran.stderr
    done = [i for i, t in _tasks(rho, project).items() if t["status"] == "completed"]
    assert done == ["1", "2", "2.1", "2.2", "2.3"]
    tagged = rho("task", "import", "--from", "taskmaster", "--tag", "feature-x",
                 str(FIXTURES / "tasks.json"), "--store", str(project.parent / "x"))  # fmt: skip
    assert tagged.code == 0, tagged.stderr
    missing = rho("task", "import", "--from", "taskmaster", "--tag", "nope",
                  str(FIXTURES / "tasks.json"), cwd=project)  # fmt: skip
    assert missing.stderr == (
        'error: taskmaster: no tag "nope" in the file (its tags: feature-x, master)\n'
    )


def test_github_issues_and_their_blocked_by_lines(rho: RunRho, project: Path) -> None:
    out = _import(rho, project, "--from", "github", str(FIXTURES / "issues.json"))

    tasks = _tasks(rho, project)
    assert out == "imported 6 task(s) from github: 6 added, 0 updated\n"
    blockers = {
        i: [d["targetId"] for d in t["dependencies"] if d["type"] == "blocks"]
        for i, t in tasks.items()
    }
    assert blockers == {"1": [], "2": ["1"], "3": ["2", "4"], "4": ["2", "1"], "5": [], "6": []}
    assert tasks["5"]["parentId"] == "4"
    assert (tasks["6"]["status"], tasks["2"]["metadata"]["labels"]) == (
        "cancelled",
        ["good-first-issue"],
    )
    assert _ready(rho, project) == ["2", "5"]
    ran = rho("mission", "--from-tasks", "--run", "echo done > issue-$RHO_TASK_ID.txt", cwd=project)
    assert ran.code == 0, ran.stderr
    done = {i for i, t in _tasks(rho, project).items() if t["status"] == "completed"}
    assert done == {"1", "2", "3", "4", "5"}


def test_a_link_outside_the_file_is_an_error_or_dropped(
    rho: RunRho, project: Path, tmp_path: Path
) -> None:
    issues = json.loads((FIXTURES / "issues.json").read_text())
    issues[1]["body"] += "\nblocked by #99"
    source = tmp_path / "issues.json"
    source.write_text(json.dumps(issues))

    refused = rho("task", "import", "--from", "github", str(source), cwd=project)
    dropped = rho("task", "import", "--from", "github", str(source), "--drop-missing", cwd=project)

    assert (refused.code, refused.stderr) == (
        2,
        'error: github: task "2" links to "99", which the file does not hold (--drop-missing '
        "drops such links)\n",
    )
    assert dropped.code == 0, dropped.stderr
    assert dropped.stdout.splitlines()[1] == "dropped the link of 2 to 99: not in the file"


def test_a_file_read_from_standard_input(rho: RunRho, project: Path) -> None:
    done = subprocess.run(
        [str(RHO), "task", "import", "--from",
         "github", "-"],
        input=(FIXTURES / "issues.json").read_text(), cwd=project, capture_output=True,
        text=True, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (0, "")
    assert _ready(rho, project) == ["2", "5"]


def test_export_writes_each_tools_statuses_back(rho: RunRho, project: Path) -> None:
    _import(rho, project, "--from", "beads", str(FIXTURES / "beads.json"))
    assert rho("task", "update", "bd-2", "--status", "completed", cwd=project).code == 0

    beads = json.loads(rho("task", "export", "--to", "beads", cwd=project).stdout)

    by_id = {issue["id"]: issue for issue in beads}
    assert {i: issue["status"] for i, issue in by_id.items()} == {
        "bd-1": "closed",
        "bd-2": "closed",  # completed here since
        "bd-3": "open",
        "bd-4": "open",
        "bd-4.1": "blocked",  # the tool's own word, which the store still agrees with
        "bd-5": "deferred",
        "bd-6": "hooked",
        "bd-7": "pinned",
    }
    assert by_id["bd-3"]["dependencies"][0] == {
        "issue_id": "bd-3",
        "depends_on_id": "bd-2",
        "type": "blocks",
    }

    tm_store = ("--store", str(project.parent / "tm.json"))
    _import(rho, project, "--from", "taskmaster", str(FIXTURES / "tasks.json"), *tm_store)
    exported = json.loads(rho("task", "export", "--to", "taskmaster", *tm_store).stdout)
    [parser] = [t for t in exported["master"]["tasks"] if t["id"] == 2]
    assert [(s["id"], s["status"], s["dependencies"]) for s in parser["subtasks"]] == [
        (1, "done", []),
        (2, "pending", [1]),
        (3, "pending", [2]),
    ]
    assert {t["id"]: t["status"] for t in exported["master"]["tasks"]} == {
        1: "done",
        2: "pending",
        3: "deferred",
        4: "review",
        5: "cancelled",
        6: "blocked",
    }


def test_beads_assignee_and_creation_time_are_kept_and_its_work_under_way_is_held(
    rho: RunRho, project: Path, tmp_path: Path
) -> None:
    # Before the fix: the importer dropped assignee and created_at, and the next mission ran an
    # in_progress issue someone was working on.
    issues = [
        {"id": "bd-1", "title": "Taken", "status": "in_progress", "assignee": "alice",
         "created_at": "2026-11-01T10:00:00Z"},
        {"id": "bd-2", "title": "Free", "status": "open", "created_at": "2026-11-02T10:00:00Z"},
    ]  # fmt: skip
    source = tmp_path / "issues.json"
    source.write_text(json.dumps(issues), encoding="utf-8")
    _import(rho, project, "--from", "beads", str(source))

    tasks = _tasks(rho, project)
    assert (tasks["bd-1"]["owner"], tasks["bd-1"]["createdAt"]) == ("alice", "2026-11-01T10:00:00Z")
    assert tasks["bd-2"]["createdAt"] == "2026-11-02T10:00:00Z"
    ran = rho("mission", "--from-tasks", "--run", "true", cwd=project)
    assert ran.code == 0, ran.stderr
    assert 'bd-1: claimed by "alice" ' in ran.stderr
    assert _tasks(rho, project)["bd-1"]["status"] == "in_progress"


def test_task_master_subtasks_that_repeat_an_id_are_numbered_by_position(
    rho: RunRho, project: Path, tmp_path: Path
) -> None:
    # Before the fix: a real tasks.json whose subtasks all carry "id": 42 was refused whole, and a
    # subtask of a subtask was dropped without a word.
    subtasks: list[dict[str, Any]] = [
        {"id": 42, "title": f"step {n}", "status": "pending", "dependencies": [n - 1]}
        for n in (1, 2, 3)
    ]
    subtasks[0]["dependencies"] = []
    subtasks[0]["subtasks"] = [{"id": 1, "title": "deeper", "status": "done"}]
    data = {
        "master": {
            "tasks": [{"id": 42, "title": "Parent", "status": "pending", "subtasks": subtasks}]
        }
    }
    source = tmp_path / "tasks.json"
    source.write_text(json.dumps(data), encoding="utf-8")

    first = rho("task", "import", "--from", "taskmaster", str(source), cwd=project)
    again = rho("task", "import", "--from", "taskmaster", str(source), cwd=project)

    assert first.code == 0, first.stderr
    assert first.stderr == (
        'warning: taskmaster: the subtasks of "42" repeat their ids; numbered 42.1 to 42.3 by '
        "their position\n"
    )
    tasks = _tasks(rho, project)
    assert sorted(tasks) == ["42", "42.1", "42.1.1", "42.2", "42.3"]
    assert tasks["42.3"]["dependencies"][0] == {"targetId": "42.2", "type": "blocks"}
    assert tasks["42.1.1"]["parentId"] == "42.1"
    assert again.code == 0, again.stderr
    assert again.stdout == "imported 5 task(s) from taskmaster: 0 added, 0 updated\n"


@pytest.mark.parametrize("fmt", ["beads", "taskmaster", "github"])
def test_a_file_nested_too_deeply_is_one_error_line(
    rho: RunRho, project: Path, tmp_path: Path, fmt: str
) -> None:
    # Before the fix: "error: unexpected RecursionError ... this is a bug in rho", exit 1.
    source = tmp_path / "deep.json"
    source.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    result = rho("task", "import", "--from", fmt, str(source), cwd=project)
    assert (result.code, result.stdout) == (2, "")
    assert result.stderr == f"error: {fmt}: invalid JSON: nested too deeply\n"
    assert not (project / ".rho" / "tasks.json").exists()


def test_an_epic_is_a_parent_its_children_are_the_work_and_it_ends_with_them(
    rho: RunRho, project: Path, tmp_path: Path
) -> None:
    # Before the fix: a beads epic was imported as a runnable task, and ran.
    def issue(ident: str, kind: str, **extra: Any) -> dict[str, Any]:
        return {"id": ident, "title": ident, "status": "open", "issue_type": kind, **extra}

    child = {"type": "parent-child", "depends_on_id": "bd-e"}
    issues = [
        issue("bd-e", "epic"),
        issue("bd-1", "task", dependencies=[child]),
        issue("bd-2", "task", dependencies=[child]),
        issue("bd-after", "task", dependencies=[{"type": "blocks", "depends_on_id": "bd-e"}]),
    ]
    source = tmp_path / "issues.json"
    source.write_text(json.dumps(issues), encoding="utf-8")
    _import(rho, project, "--from", "beads", str(source))
    assert _ready(rho, project) == ["bd-1", "bd-2"]  # the epic is no work to start

    dry = rho("mission", "--from-tasks", "--run", "true", "--dry-run", cwd=project)
    ran = rho("mission", "--from-tasks", "--run", "echo done > $RHO_TASK_ID.txt", cwd=project)

    lines = dry.stdout.splitlines()[1:]
    lines = lines[: next(n for n, line in enumerate(lines) if line.startswith("workers: "))]
    waves = [line.strip() for line in lines if not line.startswith("    $")]
    assert waves == ["wave 1:", "bd-1: bd-1", "bd-2: bd-2", "wave 2:", "bd-after: bd-after"]
    assert ran.code == 0, ran.stdout + ran.stderr
    statuses = {i: t["status"] for i, t in _tasks(rho, project).items()}
    assert statuses == dict.fromkeys(("bd-e", "bd-1", "bd-2", "bd-after"), "completed")


def test_what_an_epic_blocks_is_held_while_a_child_of_it_is_held(
    rho: RunRho, project: Path, tmp_path: Path
) -> None:
    child = {"type": "parent-child", "depends_on_id": "bd-e"}
    issues = [
        {"id": "bd-e", "title": "epic", "status": "open", "issue_type": "epic"},
        {"id": "bd-1", "title": "one", "status": "deferred", "dependencies": [child]},
        {"id": "bd-after", "title": "after", "status": "open",
         "dependencies": [{"type": "blocks", "depends_on_id": "bd-e"}]},
    ]  # fmt: skip
    source = tmp_path / "issues.json"
    source.write_text(json.dumps(issues), encoding="utf-8")
    _import(rho, project, "--from", "beads", str(source))

    ran = rho("mission", "--from-tasks", "--run", "true", cwd=project)

    assert ran.code == 0, ran.stdout + ran.stderr
    assert "nothing to run" in ran.stdout
    assert '"bd-after" (blocked by "bd-1" (skipped))' in ran.stdout


def _cycle_file(tmp_path: Path, second_status: str) -> Path:
    # As Task Master's own tasks.json holds it: subtasks 12.1 and 12.4 block each other.
    subtasks = [
        {"id": 1, "title": "one", "status": "done", "dependencies": [4]},
        {"id": 2, "title": "two", "status": "done", "dependencies": [1]},
        {"id": 4, "title": "four", "status": second_status, "dependencies": [1]},
    ]
    tasks = [
        {"id": 12, "title": "Parent", "status": "done", "subtasks": subtasks},
        {"id": 13, "title": "Next", "status": "pending", "dependencies": [12]},
    ]
    source = tmp_path / "tasks.json"
    source.write_text(json.dumps({"master": {"tasks": tasks}}), encoding="utf-8")
    return source


def test_a_cycle_among_completed_tasks_is_imported_as_related_links_with_a_warning(
    rho: RunRho, project: Path, tmp_path: Path
) -> None:
    source = _cycle_file(tmp_path, "done")
    result = rho("task", "import", "--from", "taskmaster", str(source), cwd=project)
    assert result.code == 0, result.stderr
    assert result.stderr_lines == [
        f"warning: taskmaster: {a} is blocked by {b} in a cycle of completed tasks: imported as "
        "a related link (it decides no schedule)"
        for a, b in (("12.1", "12.4"), ("12.4", "12.1"))
    ]
    tasks = _tasks(rho, project)
    assert {"targetId": "12.4", "type": "related"} in tasks["12.1"]["dependencies"]
    assert {"targetId": "12.1", "type": "related"} in tasks["12.4"]["dependencies"]
    # A link between completed tasks that closes no cycle stays a blocker.
    assert {"targetId": "12.1", "type": "blocks"} in tasks["12.2"]["dependencies"]
    assert _ready(rho, project) == ["13"]


def test_a_cycle_that_touches_unfinished_work_is_still_refused(
    rho: RunRho, project: Path, tmp_path: Path
) -> None:
    store = project / ".rho" / "tasks.json"
    before = store.read_bytes() if store.exists() else None
    source = _cycle_file(tmp_path, "pending")
    result = rho("task", "import", "--from", "taskmaster", str(source), cwd=project)
    assert result.code == 2
    assert result.stderr_lines == [
        "error: cycle detected in blocking task dependency graph: 12.1 -> 12.4 -> 12.1"
    ]
    assert (store.read_bytes() if store.exists() else None) == before


def test_an_epic_with_no_children_is_work_its_own_status_says_when_it_is_done(
    rho: RunRho, project: Path, tmp_path: Path
) -> None:
    # A group is done when its children are: one with none could never be done nor run.
    issues = [
        {"id": "bd-e", "title": "Lonely epic", "status": "open", "issue_type": "epic"},
        {"id": "bd-c", "title": "Closed epic", "status": "closed", "issue_type": "epic"},
        {
            "id": "bd-after",
            "title": "after",
            "status": "open",
            "issue_type": "task",
            "dependencies": [{"type": "blocks", "depends_on_id": "bd-e"}],
        },
    ]
    source = tmp_path / "issues.json"
    source.write_text(json.dumps(issues), encoding="utf-8")
    result = rho("task", "import", "--from", "beads", str(source), cwd=project)
    assert result.code == 0, result.stderr
    # Said of the one that will run; the closed one is simply done.
    assert result.stderr_lines == [
        "warning: beads: bd-e has no children in the file: imported as work"
    ]
    assert _ready(rho, project) == ["bd-e"]
    ran = rho("mission", "--from-tasks", "--run", "echo done > $RHO_TASK_ID.txt", cwd=project)
    assert ran.code == 0, ran.stdout + ran.stderr
    statuses = {i: t["status"] for i, t in _tasks(rho, project).items()}
    assert statuses == dict.fromkeys(("bd-e", "bd-c", "bd-after"), "completed")
