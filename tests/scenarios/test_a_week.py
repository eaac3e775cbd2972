"""A week in one repository: ten missions over a store that grows, with failures, fixes,
``--continue``, a superseded resume, verified joins, selections and merges of every kind.

After every step the store, the refs and the mission records must agree (``_agree``): each
task completed by exactly one mission, which is where the store says its work is; every mission's
integration branch where its record says; no worktree left; no branch for a task that never ran.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

from support.repos import branches, run_git, tree_files
from support.rho import run_rho
from support.stores import import_tasks, spec, store_tasks


def _records(repo: Path) -> list[dict[str, Any]]:
    folder = repo / ".rho" / "missions"
    found = [json.loads((m / "mission.json").read_text()) for m in folder.iterdir()]
    return sorted(found, key=lambda record: record["started_at"])


def _ancestor(repo: Path, commit: str, of: str) -> bool:
    done = subprocess.run(["git", "merge-base", "--is-ancestor", commit, of], cwd=repo, check=False)
    return done.returncode == 0


def _agree(repo: Path) -> None:
    records = _records(repo)
    completed_by: dict[str, list[str]] = {}
    for record in records:
        for feature in record["features"]:
            if feature["status"] == "completed":
                completed_by.setdefault(feature["id"], []).append(record["id"])
        head = run_git(repo, "rev-parse", "--verify", "--quiet", record["integration_branch"])
        assert head.strip() == record["integration_head"], record["id"]
        ran = {f["id"] for f in record["features"] if f["attempts"] > 0}
        prefix = f"rho-mission/{record['id']}/"
        own = {b.removeprefix(prefix) for b in branches(repo) if b.startswith(prefix)}
        stages = {name for name in own if re.fullmatch(r"(verify|fix)-\d+", name)}
        assert own - stages - {"integration"} <= ran, (record["id"], own, ran)
    assert all(len(ids) == 1 for ids in completed_by.values()), completed_by
    by_id = {record["id"]: record for record in records}
    for task_id, task in store_tasks(repo).items():
        metadata = task.get("metadata", {})
        assert "rho.lease" not in metadata, task_id  # every mission ended
        if task["status"] != "completed":
            assert task_id not in completed_by, task_id
            continue
        [mission] = completed_by[task_id]
        if "rho.commit" not in metadata:  # it changed nothing: no work to point at
            feature = next(f for f in by_id[mission]["features"] if f["id"] == task_id)
            assert (feature["handoff"] or {}).get("commit_id") is None, task_id
            continue
        assert metadata["rho.mission"] == mission, task_id
        commit = metadata["rho.commit"]
        branch = by_id[mission]["integration_branch"]
        assert _ancestor(repo, commit, branch) or _ancestor(repo, commit, "main"), task_id
    latest = records[-1]
    statuses = {i: t["status"] for i, t in store_tasks(repo).items()}
    for feature in latest["features"]:
        assert statuses[feature["id"]] == feature["status"], feature["id"]
    listed = run_git(repo, "worktree", "list", "--porcelain").split("\n\n")
    in_use = [block for block in listed if block and "locked rho-pool idle" not in block]
    assert len(in_use) == 1, "only the main checkout; the pool's idle ones are given back"
    assert run_git(repo, "status", "--porcelain") == ""


def _rho(repo: Path, *args: str, code: int = 0) -> str:
    result = run_rho(*args, cwd=repo)
    assert result.code == code, (args, result.stdout, result.stderr)
    return result.stdout + result.stderr


def _mission(repo: Path, *args: str, code: int = 0) -> dict[str, Any]:
    _rho(repo, "mission", "--from-tasks", *args, code=code)
    record = _records(repo)[-1]
    _agree(repo)
    return record


def _ran(record: dict[str, Any]) -> dict[str, str]:
    return {feature["id"]: feature["status"] for feature in record["features"]}


def _add(repo: Path, task_id: str, command: str, *blockers: str, **metadata: Any) -> None:
    task = spec(task_id, command, *blockers)
    task["metadata"].update(metadata)
    import_tasks(repo, [task])


def test_ten_missions_over_a_growing_store(project: Path, marks: Path) -> None:
    repo = project
    # Monday: a library and its first user.
    _add(repo, "lib", "echo lib > lib.txt")
    _add(repo, "cli", "cat lib.txt > cli.txt", "lib")
    one = _mission(repo)
    assert _ran(one) == {"lib": "completed", "cli": "completed"}
    _rho(repo, "mission", "merge", one["id"])
    _agree(repo)

    # Tuesday: a task that fails, fixed in the store, resumed.
    _add(repo, "parse", "exit 3", "lib")
    _add(repo, "help", "echo help > help.txt")
    two = _mission(repo, code=1)
    assert _ran(two) == {"parse": "failed", "help": "completed"}
    _rho(repo, "task", "update", "parse", "--command", "echo parse > parse.txt")
    _rho(repo, "mission", "resume", two["id"])
    _agree(repo)
    _rho(repo, "mission", "merge", two["id"])
    _agree(repo)

    # Wednesday: a failure fixed by a new mission that continues the old one; the old one's
    # resume is then refused, and the new one's merge brings both missions' work.
    _add(repo, "cache", f"test -e {marks / 'disk'} && echo cache > cache.txt")
    _add(repo, "warm", "cat cache.txt > warm.txt", "cache")
    _add(repo, "log", "echo log > log.txt")
    three = _mission(repo, code=1)
    assert _ran(three) == {"cache": "failed", "log": "completed", "warm": "pending"}
    assert three["wave_joins"][0]["blocked_ids"] == ["warm"]
    (marks / "disk").touch()
    four = _mission(repo, "--continue", three["id"])
    assert _ran(four) == {"cache": "completed", "warm": "completed"}
    superseded = run_rho("mission", "resume", three["id"], cwd=repo)
    assert superseded.code == 2
    assert "is superseded" in superseded.stderr
    _agree(repo)
    _rho(repo, "mission", "merge", four["id"])
    _agree(repo)
    assert {"cache.txt", "log.txt", "warm.txt"} <= set(tree_files(repo, "main"))

    # Thursday: a selection by label, merged as one commit.
    _add(repo, "theme", "echo theme > theme.txt", labels=["ui"])
    _add(repo, "server", "echo server > server.txt", labels=["backend"])
    five = _mission(repo, "--label", "ui")
    assert _ran(five) == {"theme": "completed"}
    _rho(repo, "mission", "merge", five["id"], "--squash")
    _agree(repo)

    # Friday: a cancelled task holds what depends on it; the rest runs.
    _add(repo, "legacy", "echo no > legacy.txt")
    _add(repo, "port", "echo no > port.txt", "legacy")
    _rho(repo, "task", "update", "legacy", "--status", "cancelled")
    six = _mission(repo)
    assert _ran(six) == {"server": "completed"}
    assert [h["id"] for h in six["held"]] == ["legacy", "port"]
    _rho(repo, "mission", "merge", six["id"])
    _agree(repo)

    # Saturday: verified joins, checked once per merged head.
    checks = marks / "checks"
    _add(repo, "tests", "echo tests > tests.txt")
    _add(repo, "noop", "true", "tests")
    seven = _mission(repo, "--verify", f"test -f lib.txt && echo ok >> {checks}")
    assert [j["verification"]["status"] for j in seven["wave_joins"]] == ["passed", "passed"]
    assert checks.read_text() == "ok\n"
    _rho(repo, "mission", "merge", seven["id"])
    _agree(repo)

    # Sunday: one task picked out, merged alone, then the rest of the week.
    _add(repo, "alpha", "echo alpha > alpha.txt")
    _add(repo, "beta", "echo beta > beta.txt")
    eight = _mission(repo, "--only", "beta")
    assert _ran(eight) == {"beta": "completed"}
    nine = _mission(repo)
    assert _ran(nine) == {"alpha": "completed"}
    _rho(repo, "mission", "merge", nine["id"], "--only", "alpha")
    _rho(repo, "mission", "merge", eight["id"])
    _agree(repo)
    _rho(repo, "task", "update", "legacy", "--status", "pending")
    ten = _mission(repo)
    assert _ran(ten) == {"legacy": "completed", "port": "completed"}
    _rho(repo, "mission", "merge", ten["id"])
    _agree(repo)

    assert len(_records(repo)) == 10
    assert {t["status"] for t in store_tasks(repo).values()} == {"completed"}
    assert sorted(tree_files(repo, "main")) == sorted(
        ["file0000.txt"]
        + [f"{name}.txt" for name in ("lib", "cli", "parse", "help", "cache", "warm", "log")]
        + [f"{name}.txt" for name in ("theme", "server", "tests", "alpha", "beta")]
        + ["legacy.txt", "port.txt"]
    )
    nothing = run_rho("mission", "--from-tasks", cwd=repo)
    assert (nothing.code, nothing.stdout) == (0, "nothing to run: 15 task(s) completed\n")
