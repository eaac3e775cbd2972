"""``rho mission``: the real console script on real repositories and task stores.

Every test runs ``rho`` as a subprocess in a temporary git repository whose store was built with
``rho task add`` or ``rho task import`` (by hand only where the CLI refuses to write such a store),
and checks exit codes, output, the store, the mission folder and the branches git holds.
"""

from __future__ import annotations

import json
import re
import shlex
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from rho_mission import MissionConfig, WorkerContext
from rho_mission.engine._storesync import StoreSync
from rho_mission.mission._fromtasks import mission_from_tasks
from support.procs import group_alive, kill_leftover_groups
from support.repos import branches, run_git, tree_files
from support.rho import Result, dry_run_waves, run_rho
from support.stores import (
    import_tasks,
    journal_events,
    mission_dir,
    spec,
    store_bytes,
    store_path,
    store_tasks,
)
from taskstore import TaskStore

_USAGE_HINT = "hint: run 'rho mission --help' for usage"


@pytest.fixture(autouse=True)
def no_leftovers(tmp_path: Path) -> Iterator[None]:
    """After each test, no task process of its missions may still run (they are killed)."""
    yield
    assert kill_leftover_groups(tmp_path) == [], "a task process outlived its mission"


@pytest.fixture
def project(make_repo: Callable[[str, int], Path]) -> Path:
    """A repository with one committed file, ``file0000.txt``."""
    return make_repo("repo", 1)


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    """A file that a task touches if it ever runs (outside the repository)."""
    return tmp_path / "a-task-ran"


def _statuses(project: Path) -> dict[str, str]:
    return {task_id: task["status"] for task_id, task in store_tasks(project).items()}


def _mission_json(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / "mission.json").read_text(encoding="utf-8"))
    return data


def _add(project: Path, *args: str) -> None:
    result = run_rho("task", "add", *args, cwd=project)
    assert result.code == 0, result.stderr


# -- a mission that runs -----------------------------------------------------------------------


# What a task's command finds of its own task in the store: its status, into seen-<id>.txt.
_READ_OWN_STATUS = (
    "python3 -c 'import json, os; "
    'store = os.path.join(os.environ["RHO_MISSION_DIR"], "..", "..", "tasks.json"); '
    'me = os.environ["RHO_TASK_ID"]; '
    'task = [t for t in json.load(open(store))["tasks"] if t["id"] == me][0]; '
    'open("seen-" + me + ".txt", "w").write(task["status"])'
    "'"
)


def test_a_task_that_asks_the_store_finds_itself_in_progress(project: Path) -> None:
    for name in ("one", "two", "three", "four", "five"):
        _add(project, name, "--command", _READ_OWN_STATUS)

    result = run_rho("mission", "--from-tasks", "--workers", "4", cwd=project)

    assert (result.code, result.stderr) == (0, "")
    folder = mission_dir(project).resolve()
    files = tree_files(project, f"rho-mission/{folder.name}/integration")
    seen = {name: text for name, text in files.items() if name.startswith("seen-")}
    assert seen == {f"seen-task_{n}.txt": "in_progress" for n in range(1, 6)}


def test_a_worker_waits_for_its_start_to_reach_a_slow_store(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import_tasks(project, [spec(f"t{n}", None) for n in range(4)])
    write = StoreSync._write

    def slow_write(self: StoreSync, store: TaskStore, batch: list[Any]) -> None:
        time.sleep(0.3)  # the real write, late: a worker must not start before it is done
        write(self, store, batch)

    monkeypatch.setattr(StoreSync, "_write", slow_write)
    seen: dict[str, str] = {}

    async def worker(ctx: WorkerContext) -> None:
        seen[ctx.feature.id] = TaskStore(store_path(project)).get(ctx.feature.id).status

    mission = mission_from_tasks(store_path(project), project, MissionConfig(max_workers=4))
    mission.run_staged_sync(worker)
    assert mission.status == "completed"
    assert seen == {f"t{n}": "in_progress" for n in range(4)}


def test_from_tasks_completes_every_task_and_merges_their_files(project: Path) -> None:
    _add(project, "one", "--command", "echo one > one.txt")
    _add(project, "two", "--command", "mkdir sub && echo two > sub/two.txt")
    blockers = ("--blocked-by", "task_1", "--blocked-by", "task_2")
    _add(project, "three", *blockers, "--command", "cat one.txt sub/two.txt > three.txt")

    result = run_rho("mission", "--from-tasks", cwd=project)

    folder = mission_dir(project).resolve()
    assert (result.code, result.stderr) == (0, "")
    *progress, last, after = result.stdout_lines
    assert last == f"mission {folder.name} completed: {folder}"
    assert after == f"next: rho mission merge {folder.name}"
    assert sorted(progress) == sorted(
        [
            *(f"task_{n} {status}" for n in (1, 2, 3) for status in ("in_progress", "completed")),
            "wave 1 joined 2 feature(s), 2 completed, 0 failed",
            "wave 2 joined 1 feature(s), 1 completed, 0 failed",
        ]
    )
    assert progress.index("task_3 in_progress") > progress.index(
        "wave 1 joined 2 feature(s), 2 completed, 0 failed"
    )
    assert _statuses(project) == {
        "task_1": "completed",
        "task_2": "completed",
        "task_3": "completed",
    }
    assert tree_files(project, f"rho-mission/{folder.name}/integration") == {
        "file0000.txt": "line 0\n",
        "one.txt": "one\n",
        "sub/two.txt": "two\n",
        "three.txt": "one\ntwo\n",
    }


def test_show_and_list_describe_a_finished_mission(
    project: Path, plain_table: Callable[..., list[list[str]]]
) -> None:
    import_tasks(project, [spec("task_1", "echo one > one.txt")])
    assert run_rho("mission", "--from-tasks", cwd=project).code == 0
    folder = mission_dir(project).resolve()
    ident = folder.name

    shown = run_rho("mission", "show", str(folder), cwd=project)
    as_json = run_rho("mission", "show", str(folder), "--json", cwd=project)
    listed = run_rho("mission", "list", cwd=project)
    listed_json = run_rho("mission", "list", "--json", cwd=project)

    document = _mission_json(folder)
    assert [r.code for r in (shown, as_json, listed, listed_json)] == [0, 0, 0, 0]
    assert shown.stdout_lines[:3] == [
        f"mission {ident}  completed",
        "prompt: run 1 task(s) of the task store",
        f"base {document['base_commit'][:12]}  integration rho-mission/{ident}/integration",
    ]
    row = ["1", "task_1", "completed", "1", "1", f"rho-mission/{ident}/task_1", "1 file(s) changed"]
    assert [cells[:4] + cells[5:] for cells in plain_table(shown.stdout, "wave")[1:]] == [row]
    assert shown.stdout_lines[-2].startswith("wave 1 joined 1 feature(s), 1 completed, 0 failed  (")
    assert shown.stdout_lines[-1] == "integration: 1 merge, 1 agent run per landed task"
    # mission.json, and the integration counts derived from it (records._stats).
    shown_document = as_json.json()
    assert shown_document.pop("integration")["merges"] == 1
    assert shown_document == document
    assert plain_table(listed.stdout)[1:] == [
        [ident, "completed", "1", "1", "", document["started_at"], "do task_1", str(folder)]
    ]
    assert listed_json.json() == {
        "missions": [
            {
                "id": ident,
                "status": "completed",
                "state": "completed",
                "dir": str(folder),
                "started_at": document["started_at"],
                "completed_at": document["completed_at"],
                "features": 1,
                "what": "do task_1",
                "merged": None,
                "usage": None,  # a plain shell task: nothing recorded
                "budget_stop": None,
            }
        ]
    }


def test_list_says_what_each_mission_is_about_and_where_it_was_merged(
    project: Path, plain_table: Callable[..., list[list[str]]]
) -> None:
    # Before the fix: the list showed ids only.
    tasks = [spec(f"t{n}", f"echo {n} > {n}.txt") for n in range(1, 5)]
    subjects = ("Write the lexer", "Write the parser", "Docs", "Tests")
    for task, subject in zip(tasks, subjects, strict=True):
        task["subject"] = subject
    import_tasks(project, tasks)
    assert run_rho("mission", "--from-tasks", cwd=project).code == 0
    ident = mission_dir(project).name
    assert run_rho("mission", "merge", ident, "--squash", cwd=project).code == 0
    assert run_rho("mission", "clean", ident, cwd=project).code == 0

    listed = run_rho("mission", "list", cwd=project)
    as_json = run_rho("mission", "list", "--json", cwd=project).json()["missions"][0]

    (row,) = plain_table(listed.stdout)[1:]
    assert row[4] == "main (squash), cleaned"
    assert row[6] == "Write the lexer, Write the parser +2 more"
    assert (as_json["merged"], as_json["what"]) == (row[4], row[6])


def test_json_prints_only_the_final_mission_document(project: Path) -> None:
    import_tasks(project, [spec("task_1", "echo one > one.txt"), spec("task_2", "true", "task_1")])

    result = run_rho("mission", "--from-tasks", "--json", cwd=project)

    assert result.code == 0
    document = result.json()  # the whole of stdout is one document
    assert document == _mission_json(mission_dir(project))
    assert document["status"] == "completed"
    assert "wave 2 joined 1 feature(s), 1 completed, 0 failed" in result.stderr_lines


def test_dry_run_prints_the_plan_and_writes_nothing(project: Path) -> None:
    import_tasks(project, [spec("task_1", "touch x"), spec("task_2", "touch y", "task_1")])
    before = (store_bytes(project), sorted((project / ".rho").rglob("*")), branches(project))
    exclude = (project / ".git" / "info" / "exclude").read_bytes()

    plain = run_rho("mission", "--from-tasks", "--dry-run", cwd=project)
    as_json = run_rho("mission", "--from-tasks", "--dry-run", "--json", cwd=project)

    header = re.fullmatch(
        r"mission ([0-9a-f]{8}) \(dry run: nothing runs, nothing is written\)",
        plain.stdout_lines[0],
    )
    assert header is not None
    assert (plain.code, plain.stderr, dry_run_waves(plain.stdout)) == (
        0,
        "",
        # Each task's command under it, as /bin/sh gets it (before the fix: a planned "rm -rf ~"
        # was never shown before it ran).
        [
            "wave 1:",
            "  task_1: do task_1",
            "    $ touch x",
            "wave 2:",
            "  task_2: do task_2",
            "    $ touch y",
        ],
    )
    # Then every setting the run would use.
    assert plain.stdout_lines[7:] == [
        "workers: 4; retries: 0; keep going after a failure: no",
        "time limits: no limit a task, no limit the mission; grace 5s",
        "budget: none",
        "sandbox: no",
    ]
    plan = as_json.json()
    assert (as_json.code, plan["status"], plan["waves"]) == (
        0,
        "planning",
        [["task_1"], ["task_2"]],
    )
    after = (store_bytes(project), sorted((project / ".rho").rglob("*")), branches(project))
    assert after == before
    assert (project / ".git" / "info" / "exclude").read_bytes() == exclude


def test_failing_task_exits_1_and_leaves_its_downstream_pending(project: Path) -> None:
    import_tasks(
        project,
        [spec("task_1", "exit 3"), spec("task_2", "true", "task_1"), spec("task_3", "touch t")],
    )

    result = run_rho("mission", "--from-tasks", cwd=project)

    folder = mission_dir(project).resolve()
    assert result.code == 1
    assert "task_1 failed: command failed: exit code 3" in result.stdout_lines
    assert result.stdout_lines[-4:-2] == [
        "wave 1 joined 2 feature(s), 1 completed, 1 failed, 1 downstream blocked",
        f"mission {folder.name} partial: {folder}",
    ]
    tasks = store_tasks(project)
    assert _statuses(project) == {"task_1": "failed", "task_2": "pending", "task_3": "completed"}
    assert (tasks["task_1"]["lastError"], tasks["task_1"]["attempts"]) == (
        "command failed: exit code 3",
        1,
    )
    document = _mission_json(folder)
    assert [f["status"] for f in document["features"]] == ["failed", "completed", "pending"]
    assert [j["blocked_ids"] for j in document["wave_joins"]] == [["task_2"]]


# -- bad input: exit 2, one error line, nothing written ----------------------------------------


def _assert_refused(result: Result, project: Path, before: bytes, stderr: list[str]) -> None:
    """Exit 2 with exactly *stderr*, nothing on stdout, the store as it was, no mission at all."""
    assert (result.code, result.stdout, result.stderr_lines) == (2, "", stderr)
    assert store_bytes(project) == before
    assert not (project / ".rho" / "missions").exists()
    assert not (project / ".rho" / "worktrees").exists()
    assert branches(project) == {"main"}


@pytest.mark.parametrize(
    ("args", "stderr"),
    [
        pytest.param(
            ["--workers", "0"],
            ["error: Invalid value for '--workers': 0 is not in the range 1<=x<=64.", _USAGE_HINT],
            id="workers-zero",
        ),
        pytest.param(
            ["--workers", "many"],
            [
                "error: Invalid value for '--workers': 'many' is not a valid integer range.",
                _USAGE_HINT,
            ],
            id="workers-not-a-number",
        ),
        pytest.param(
            ["--timeout", "5x"],
            [
                "error: Invalid value for '--timeout': '5x' is not a duration like 90, 90s, 5m or "
                "1.5h",
                _USAGE_HINT,
            ],
            id="timeout-unit",
        ),
        pytest.param(
            ["--task-timeout", "0s"],
            [
                "error: Invalid value for '--task-timeout': '0s' is not a duration like "
                "90, 90s, 5m or 1.5h",
                _USAGE_HINT,
            ],
            id="task-timeout-zero",
        ),
        pytest.param(
            ["--base", "no-such-ref"], ['error: unknown git ref "no-such-ref"'], id="unknown-base"
        ),
    ],
)
def test_bad_option_exits_2_before_any_task_runs(
    project: Path, marker: Path, args: list[str], stderr: list[str]
) -> None:
    import_tasks(project, [spec("task_1", f"touch {shlex.quote(str(marker))}")])
    before = store_bytes(project)

    result = run_rho("mission", "--from-tasks", *args, cwd=project)

    _assert_refused(result, project, before, stderr)
    assert not marker.exists()


def test_invalid_graph_exits_2_with_the_validation_error(project: Path, marker: Path) -> None:
    # `rho task import` refuses a cycle, so this store is written as a hand edit would leave it.
    touch = f"touch {shlex.quote(str(marker))}"
    tasks = [spec("task_1", touch, "task_2"), spec("task_2", touch, "task_1")]
    store_path(project).parent.mkdir()
    store_path(project).write_text(
        json.dumps({"schema_version": "rho.tasks/v1", "tasks": tasks}), encoding="utf-8"
    )
    before = store_bytes(project)

    result = run_rho("mission", "--from-tasks", cwd=project)

    message = (
        "error: validate task schedule: "
        "cycle detected in blocking task dependency graph: task_1 -> task_2 -> task_1"
    )
    _assert_refused(result, project, before, [message])
    assert not marker.exists()


def test_task_without_command_and_no_run_exits_2(project: Path, marker: Path) -> None:
    import_tasks(
        project, [spec("task_1", f"touch {shlex.quote(str(marker))}"), spec("task_2", None)]
    )
    before = store_bytes(project)

    result = run_rho("mission", "--from-tasks", cwd=project)

    message = (
        'error: task "task_2" has no command; give it one with \'rho task update task_2 '
        "--command CMD', or pass --run CMD (the command every task without one runs)"
    )
    _assert_refused(result, project, before, [message])
    assert not marker.exists()


def test_outside_a_git_repository_exits_2(tmp_path: Path, marker: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    store = plain / "tasks.json"
    import_tasks(
        plain, [spec("task_1", f"touch {shlex.quote(str(marker))}")], "--store", str(store)
    )
    before = store.read_bytes()

    result = run_rho("mission", "--from-tasks", "--store", str(store), cwd=plain)

    assert (result.code, result.stdout) == (2, "")
    assert result.stderr_lines == [f"error: not a git repository: {plain.resolve()}"]
    assert store.read_bytes() == before
    assert not (plain / ".rho").exists()
    assert not marker.exists()


def test_empty_store_exits_2_and_writes_nothing(project: Path) -> None:
    import_tasks(project, [])
    before = store_bytes(project)

    result = run_rho("mission", "--from-tasks", cwd=project)

    _assert_refused(
        result,
        project,
        before,
        [f"error: no tasks to run: the task store {project / '.rho' / 'tasks.json'} is empty"],
    )


@pytest.mark.parametrize("command", ["show", "resume"])
def test_show_or_resume_of_a_folder_without_mission_exits_2(project: Path, command: str) -> None:
    result = run_rho("mission", command, "nowhere", cwd=project)

    assert (result.code, result.stdout) == (2, "")
    assert result.stderr_lines == ["error: no mission at nowhere: mission.json missing"]


# -- options that shape the run ----------------------------------------------------------------


def test_run_command_runs_the_tasks_that_have_no_command(project: Path) -> None:
    import_tasks(project, [spec("task_1", None), spec("task_2", "echo own > own.txt")])

    result = run_rho(
        "mission", "--from-tasks", "--run", 'echo run > "$RHO_TASK_ID.txt"', cwd=project
    )

    assert result.code == 0, result.stdout
    integration = f"rho-mission/{mission_dir(project).name}/integration"
    assert tree_files(project, integration) == {
        "file0000.txt": "line 0\n",
        "task_1.txt": "run\n",
        "own.txt": "own\n",
    }


@pytest.mark.parametrize(
    ("retries", "code", "status", "attempts"), [(0, 1, "failed", 1), (1, 0, "completed", 2)]
)
def test_retries_run_a_failed_task_again(
    project: Path, retries: int, code: int, status: str, attempts: int
) -> None:
    import_tasks(project, [spec("task_1", '[ "$RHO_ATTEMPT" -ge 2 ] || exit 4; touch ok')])

    result = run_rho("mission", "--from-tasks", "--retries", str(retries), cwd=project)

    assert result.code == code
    task = store_tasks(project)["task_1"]
    assert (task["status"], task["attempts"]) == (status, attempts)
    (feature,) = _mission_json(mission_dir(project))["features"]
    assert (feature["status"], feature["attempts"]) == (status, attempts)
    assert feature["error"] == (None if retries else "command failed: exit code 4")


def test_task_timeout_fails_a_task_that_runs_too_long(project: Path) -> None:
    import_tasks(project, [spec("task_1", "sleep 30"), spec("task_2", "true", "task_1")])

    result = run_rho("mission", "--from-tasks", "--task-timeout", "1s", cwd=project)

    folder = mission_dir(project)
    assert result.code == 1
    assert "task_1 failed: timed out after 1s" in result.stdout_lines
    task = store_tasks(project)["task_1"]
    assert (task["status"], task["lastError"]) == ("failed", "timed out after 1s")
    assert _statuses(project)["task_2"] == "pending"
    assert _mission_json(folder)["status"] == "failed"
    (started,) = journal_events(folder, "process")
    assert not group_alive(started["pgid"])


def test_mission_timeout_cancels_the_mission_with_exit_130(project: Path) -> None:
    import_tasks(project, [spec("task_1", "sleep 30"), spec("task_2", "true", "task_1")])

    result = run_rho("mission", "--from-tasks", "--timeout", "1s", cwd=project)

    folder = mission_dir(project).resolve()
    assert result.code == 130
    assert result.stdout_lines[-2] == f"mission {folder.name} cancelled: {folder}"
    document = _mission_json(folder)
    assert document["status"] == "cancelled"
    assert [(f["id"], f["status"]) for f in document["features"]] == [
        ("task_1", "cancelled"),
        ("task_2", "pending"),
    ]
    assert _statuses(project) == {"task_1": "pending", "task_2": "pending"}  # to do again
    assert all(not group_alive(e["pgid"]) for e in journal_events(folder, "process"))


def test_a_dirty_checkout_is_one_warning_line_at_start(project: Path) -> None:
    # Before the fix: a task failed importing the user's uncommitted module, with no word before.
    import_tasks(project, [spec("task_1", "test ! -e mine.py")])
    (project / "mine.py").write_text("x = 1\n")
    (project / "file0000.txt").write_text("changed\n")

    dirty = run_rho("mission", "--from-tasks", cwd=project)

    assert dirty.code == 0, dirty.stdout + dirty.stderr  # the task did not see mine.py
    warnings = [line for line in dirty.stderr_lines if line.startswith("warning:")]
    assert warnings == [
        "warning: 2 file(s) of your checkout hold changes no commit has (such as file0000.txt); "
        "the mission starts from HEAD without them: commit them first if its tasks need them"
    ]
    run_git(project, "add", "--all")
    run_git(project, "commit", "--quiet", "--message=mine")
    import_tasks(project, [spec("task_2", "true")])
    clean = run_rho("mission", "--from-tasks", cwd=project)
    assert clean.code == 0, clean.stderr
    assert not [line for line in clean.stderr_lines if line.startswith("warning:")]


def test_a_dry_run_says_what_a_run_would_warn_of_and_every_setting(project: Path) -> None:
    import_tasks(project, [spec("task_1", "touch x")])
    (project / "file0000.txt").write_text("changed, not committed\n")
    args = ("--retries", "2", "--task-timeout", "10m", "--budget-usd", "3", "--sandbox")
    dry = run_rho("mission", "--from-tasks", "--dry-run", *args, "--keep-going", cwd=project)
    assert dry.code == 0, dry.stderr
    assert dry.stderr_lines[0].startswith("warning: 1 file(s) of your checkout hold changes")
    assert dry.stderr_lines[1].startswith("warning: the budget counts only attempts that write")
    assert dry.stdout_lines[4:] == [
        "workers: 4; retries: 2; keep going after a failure: yes",
        "time limits: 600s a task, no limit the mission; grace 5s",
        "budget: $3",
        "sandbox: yes; network kept",
    ]


def test_a_timed_out_attempts_log_ends_with_a_line_saying_so(project: Path, tmp_path: Path) -> None:
    # As a passed or failed attempt's log ends with rho's line of how it ended.
    never = shlex.quote(str(tmp_path / "never"))
    import_tasks(
        project, [spec("slow", f"echo started; while [ ! -e {never} ]; do sleep 0.05; done")]
    )
    verify = f"while [ ! -e {never} ]; do sleep 0.05; done"
    args = ("--task-timeout", "1s", "--keep-going")
    done = run_rho("mission", "--from-tasks", *args, cwd=project)
    assert done.code == 1
    log = (mission_dir_of(done) / "logs" / "slow.log").read_text().splitlines()
    assert log[-1] == "== rho: slow attempt 1 failed: timed out after 1s =="
    # A stage's too: checks that never end.
    import_tasks(project, [spec("quick", "echo q > q.txt")])
    checked = run_rho("mission", "--from-tasks", "--only", "quick", *args, "--verify", verify,
                      cwd=project)  # fmt: skip
    assert checked.code == 1
    [second] = [f for f in (project / ".rho" / "missions").iterdir() if f != mission_dir_of(done)]
    stage = (second / "logs" / "verify-1.log").read_text().splitlines()
    assert stage[-1] == "== rho: verify-1 attempt 1 failed: timed out after 1s =="


def mission_dir_of(done: Result) -> Path:
    """The folder of the mission a run's last line names (``mission ID STATUS: FOLDER``)."""
    said = (re.fullmatch(r"mission [0-9a-f]{8} \w+: (.+)", line) for line in done.stdout_lines)
    found = [match.group(1) for match in said if match is not None]
    assert found, done.stdout
    return Path(found[-1])


def test_a_wave_starts_its_tasks_by_priority_then_in_natural_order(
    project: Path, tmp_path: Path
) -> None:
    started = tmp_path / "started"
    tasks = [spec(i, f"echo $RHO_TASK_ID >> {shlex.quote(str(started))}") for i in _IDS]
    for task in tasks:
        if task["id"] in _PRIORITIES:
            task["metadata"]["priority"] = _PRIORITIES[task["id"]]
    import_tasks(project, tasks)
    done = run_rho("mission", "--from-tasks", "--workers", "1", cwd=project)
    assert done.code == 0, done.stderr
    # Priority 0 first; then natural order (task_2 before task_10), not the ids' text order.
    assert started.read_text().split() == ["task_19", "task_1", "task_2", "task_10", "task_3"]
    record = json.loads((mission_dir_of(done) / "mission.json").read_text())
    assert record["waves"] == [sorted(_IDS)]  # the join's merge order: fixed, as before


_IDS = ["task_1", "task_10", "task_19", "task_2", "task_3"]
_PRIORITIES = {"task_19": 0, "task_3": 4}
