"""Missions over a store that lives on: each mission holds its own work, the store's statuses
count, selections, superseded resumes, and review before merge (real repositories, real rho)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from rho_mission import InvalidMissionError, Mission, MissionConfig, mission_from_tasks
from support.repos import branches, run_git, tree_files
from support.rho import dry_run_waves, run_rho
from support.stores import import_tasks, spec, store_tasks


def _missions(repo: Path) -> list[dict[str, Any]]:
    """Every mission.json of *repo*, oldest first."""
    records = [
        json.loads((folder / "mission.json").read_text())
        for folder in (repo / ".rho" / "missions").iterdir()
    ]
    return sorted(records, key=lambda record: record["started_at"])


def _latest(repo: Path) -> dict[str, Any]:
    return _missions(repo)[-1]


def _features(record: dict[str, Any]) -> dict[str, str]:
    return {feature["id"]: feature["status"] for feature in record["features"]}


def _ok(*args: str, cwd: Path) -> str:
    result = run_rho(*args, cwd=cwd)
    assert result.code == 0, (args, result.stdout, result.stderr)
    return result.stdout


# -- a mission's features are the work it will do -----------------------------------------------


def test_a_later_mission_holds_only_the_tasks_still_to_do(project: Path) -> None:
    import_tasks(project, [spec("a", "echo a > a.txt"), spec("b", "echo b > b.txt", "a")])
    _ok("mission", "--from-tasks", cwd=project)
    _ok("mission", "merge", "latest", cwd=project)
    _ok("task", "add", "c", "--blocked-by", "b", "--command", "echo c > c.txt", cwd=project)
    _ok("task", "add", "d", "--command", "echo d > d.txt", cwd=project)

    _ok("mission", "--from-tasks", cwd=project)

    second = _latest(project)
    # c waits only for completed work: it starts in the first wave, beside d.
    assert (second["waves"], _features(second)) == (
        [["task_1", "task_2"]],
        {"task_1": "completed", "task_2": "completed"},
    )
    assert [f["blocked_by"] for f in second["features"]] == [[], []]
    [join] = second["wave_joins"]
    assert join["summary"] == "wave 1 joined 2 feature(s), 2 completed, 0 failed"
    assert second["prompt"] == "run 2 task(s) of the task store"


def test_nothing_to_run_creates_nothing(project: Path) -> None:
    import_tasks(project, [spec("a", "true")])
    _ok("mission", "--from-tasks", cwd=project)
    before = (branches(project), sorted((project / ".rho" / "missions").iterdir()))

    result = run_rho("mission", "--from-tasks", cwd=project)

    as_json = run_rho("mission", "--from-tasks", "--json", cwd=project)

    assert (result.code, result.stderr) == (0, "")
    assert result.stdout == "nothing to run: 1 task(s) completed\n"
    assert (as_json.code, as_json.json()) == (
        0,
        {"mission": None, "nothing_to_run": "nothing to run: 1 task(s) completed"},
    )
    assert (branches(project), sorted((project / ".rho" / "missions").iterdir())) == before


# -- the store's statuses -------------------------------------------------------------------------


@pytest.mark.parametrize("status", ["cancelled", "skipped", "reviewing"])
def test_a_held_status_is_not_run_and_holds_its_dependents(project: Path, status: str) -> None:
    import_tasks(
        project,
        [
            spec("held", "echo no > held.txt"),
            spec("after", "echo no > after.txt", "held"),
            spec("later", "echo no > later.txt", "after"),
            spec("free", "echo free > free.txt"),
        ],
    )
    _ok("task", "update", "held", "--status", status, cwd=project)

    dry = _ok("mission", "--from-tasks", "--dry-run", cwd=project)
    ran = run_rho("mission", "--from-tasks", cwd=project)

    assert "  free: do free\n" in dry
    assert (
        "not run (3 held by the task store: its statuses, agents' claims):\n"
        '  after: blocked by "held" (' + status + ")\n"
        f"  held: {status} in the task store\n"
        '  later: blocked by "held" (' + status + ")\n"
        "workers: 4;"
    ) in dry
    assert ran.code == 0, ran.stderr
    assert "not run (3 held by the task store: its statuses, agents' claims):" in ran.stderr
    record = _latest(project)
    assert _features(record) == {"free": "completed"}
    assert [(h["id"], h["held_by"]) for h in record["held"]] == [
        ("after", "held"),
        ("held", "held"),
        ("later", "held"),
    ]
    statuses = {i: t["status"] for i, t in store_tasks(project).items()}
    assert statuses == {"held": status, "after": "pending", "later": "pending", "free": "completed"}
    shown = _ok("mission", "show", "latest", cwd=project)
    assert f"  held: {status} in the task store" in shown


def test_a_store_of_held_tasks_only_has_nothing_to_run(project: Path) -> None:
    import_tasks(project, [spec("a", "true"), spec("b", "true", "a")])
    _ok("task", "update", "a", "--status", "cancelled", cwd=project)

    result = run_rho("mission", "--from-tasks", cwd=project)

    assert (result.code, result.stdout) == (
        0,
        'nothing to run: 2 held: "a" (cancelled in the task store), "b" (blocked by "a" '
        "(cancelled))\n",
    )
    assert not (project / ".rho" / "missions").exists()


# -- selections -----------------------------------------------------------------------------------


def _selectable(project: Path) -> None:
    tasks = [
        spec("lib", "echo lib > lib.txt"),
        spec("api", "echo api > api.txt", "lib"),
        spec("ui", "echo ui > ui.txt", "api"),
        spec("docs", "echo docs > docs.txt"),
    ]
    tasks[3]["metadata"]["labels"] = ["writing"]
    tasks[1]["metadata"]["labels"] = ["backend"]
    import_tasks(project, tasks)


def test_only_runs_those_tasks_and_their_unfinished_blockers(project: Path) -> None:
    _selectable(project)

    dry = _ok("mission", "--from-tasks", "--only", "api", "--dry-run", cwd=project)
    _ok("mission", "--from-tasks", "--only", "api", cwd=project)

    assert dry_run_waves(dry) == [
        "wave 1:",
        "  lib: do lib",
        "    $ echo lib > lib.txt",
        "wave 2:",
        "  api: do api",
        "    $ echo api > api.txt",
    ]
    assert _features(_latest(project)) == {"lib": "completed", "api": "completed"}
    assert {i: t["status"] for i, t in store_tasks(project).items()} == {
        "lib": "completed",
        "api": "completed",
        "ui": "pending",
        "docs": "pending",
    }


def test_labels_select_and_combine_with_only(project: Path) -> None:
    _selectable(project)

    dry = _ok("mission", "--from-tasks", "--label", "writing", "--only", "lib", "--dry-run",
              cwd=project)  # fmt: skip
    by_label = _ok("mission", "--from-tasks", "--label", "backend", "--dry-run", cwd=project)

    tasks_of = [line for line in dry_run_waves(dry) if not line.startswith("    $ ")]
    labelled = [line for line in dry_run_waves(by_label) if not line.startswith("    $ ")]
    assert tasks_of == ["wave 1:", "  docs: do docs", "  lib: do lib"]
    assert labelled == ["wave 1:", "  lib: do lib", "wave 2:", "  api: do api"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--only", "nope"), 'error: --only names "nope": no such task in the store'),
        (("--label", "nope"), 'error: --label "nope": no task of the store has it'),
    ],
)
def test_a_selection_of_nothing_known_is_refused(
    project: Path, args: tuple[str, ...], message: str
) -> None:
    _selectable(project)
    before = (project / ".rho" / "tasks.json").read_bytes()

    result = run_rho("mission", "--from-tasks", *args, cwd=project)

    assert (result.code, result.stderr_lines) == (2, [message])
    assert (project / ".rho" / "tasks.json").read_bytes() == before
    assert not (project / ".rho" / "missions").exists()


def test_the_library_selects_as_the_cli_does(project: Path) -> None:
    _selectable(project)
    store = project / ".rho" / "tasks.json"

    mission = mission_from_tasks(store, project, MissionConfig(), only=["ui"], labels=["writing"])

    assert mission.waves == [["docs", "lib"], ["api"], ["ui"]]
    with pytest.raises(InvalidMissionError, match="no such task"):
        mission_from_tasks(store, project, MissionConfig(), only=["nope"])


# -- a superseded mission is never resumed into finished work ------------------------------------


def test_resuming_a_mission_superseded_by_another_is_refused(project: Path, marks: Path) -> None:
    flag = marks / "fixed"
    import_tasks(
        project,
        [
            spec("a", "echo a > a.txt"),
            spec("b", f"test -e {flag} && echo b > b.txt", "a"),
            spec("c", "echo c > c.txt", "b"),
        ],
    )
    assert run_rho("mission", "--from-tasks", cwd=project).code == 1
    first = _latest(project)
    flag.touch()
    _ok("mission", "--from-tasks", "--continue", first["id"], cwd=project)
    second = _latest(project)
    assert _features(second) == {"b": "completed", "c": "completed"}
    record = (Path(first["dir"]) / "mission.json").read_bytes()
    store = (project / ".rho" / "tasks.json").read_bytes()

    result = run_rho("mission", "resume", first["id"], cwd=project)

    assert result.code == 2
    assert result.stderr_lines == [
        f'error: mission {first["id"]} is superseded: "b", "c" completed since by mission '
        f"{second['id']}; a resume never runs finished work again: bring that work in with "
        f"'rho mission merge {second['id']}', then run what is left with 'rho mission "
        f"--from-tasks', or drop this mission with 'rho mission clean {first['id']}'"
    ]
    assert (Path(first["dir"]) / "mission.json").read_bytes() == record
    assert (project / ".rho" / "tasks.json").read_bytes() == store
    _ok("mission", "merge", second["id"], cwd=project)
    assert sorted(tree_files(project, "main")) == ["a.txt", "b.txt", "c.txt", "file0000.txt"]


# -- verification once per head -------------------------------------------------------------------


def test_a_head_already_verified_is_not_checked_again(project: Path, marks: Path) -> None:
    count = marks / "checks"
    import_tasks(project, [spec("a", "echo a > a.txt"), spec("b", "true", "a")])

    _ok("mission", "--from-tasks", "--verify", f"echo run >> {count}", cwd=project)

    first, second = _latest(project)["wave_joins"]
    assert count.read_text() == "run\n"  # b merged nothing: wave 2's head is wave 1's
    assert (first["verification"]["status"], first["verification"]["attempts"]) == ("passed", 1)
    assert (second["verification"]["status"], second["verification"]["attempts"]) == ("passed", 0)
    assert second["verification"]["head"] == first["verification"]["head"]


# -- .rho/ out of git from the first write --------------------------------------------------------


def test_the_first_task_added_keeps_rho_out_of_git(tmp_path: Path) -> None:
    repo = tmp_path / "fresh"
    repo.mkdir()
    run_git(repo, "init", "--quiet", "--initial-branch=main")
    run_git(repo, "commit", "--quiet", "--allow-empty", "--message=first")

    _ok("task", "add", "write it", "--command", "echo x > x.txt", cwd=repo)
    run_git(repo, "add", "--all")

    assert run_git(repo, "status", "--porcelain") == ""
    assert ".rho/" in (repo / ".git" / "info" / "exclude").read_text().splitlines()


def test_a_tracked_store_is_named_with_its_fix(project: Path) -> None:
    import_tasks(project, [spec("a", "echo a > a.txt")])
    run_git(project, "add", "--force", ".rho/tasks.json")
    run_git(project, "commit", "--quiet", "--message=the store, by mistake")

    ran = run_rho("mission", "--from-tasks", cwd=project)
    merged = run_rho("mission", "merge", "latest", cwd=project)

    fix = "untrack them with 'git rm --cached -r .rho' and commit"
    assert ran.code == 0
    assert fix in ran.stderr
    assert merged.code == 2
    assert merged.stderr.startswith("error: rho's records are tracked by git (.rho/tasks.json)")
    assert fix in merged.stderr


# -- small ones -----------------------------------------------------------------------------------


def test_a_repository_without_a_commit_is_told_to_make_one(tmp_path: Path) -> None:
    repo = tmp_path / "empty"
    repo.mkdir()
    run_git(repo, "init", "--quiet")
    _ok("task", "add", "a", "--command", "true", cwd=repo)

    result = run_rho("mission", "--from-tasks", cwd=repo)

    assert result.code == 2
    assert result.stderr == (
        f"error: the repository {repo.resolve()} has no commit yet: a mission starts from one; "
        "make a first commit (git commit --allow-empty -m 'first commit')\n"
    )


def test_staged_waves_that_leave_a_feature_out_are_refused(repo_path: Path) -> None:
    from rho_mission import Feature

    mission = Mission.new(repo_path, "p", [Feature("a"), Feature("b")])

    with pytest.raises(InvalidMissionError) as refused:
        mission.run_staged_sync(lambda ctx: None, waves=[["a"]])

    assert str(refused.value) == (
        'staged execution waves leave out 1 feature(s) still to run ("b"): name every feature '
        "in a wave, or leave it out of the mission"
    )
    assert not Path(mission.dir).exists()


def test_a_task_that_printed_nothing_says_so_in_its_log(project: Path) -> None:
    import_tasks(project, [spec("quiet", "exit 4")])
    assert run_rho("mission", "--from-tasks", cwd=project).code == 1

    shown = _ok("mission", "log", "latest", "quiet", cwd=project).splitlines()
    failed = run_rho("mission", "--from-tasks", cwd=project)

    assert shown[0].startswith("== rho: quiet attempt 1: command sha256 ")
    assert shown[1:] == [
        "== rho: quiet attempt 1 failed: command failed: exit code 4 ==",
        "(task quiet printed nothing: command failed: exit code 4)",
    ]
    assert "(the task printed nothing)" in failed.stdout


def test_views_count_ids_as_numbers_and_name_no_branch_that_never_was(project: Path) -> None:
    tasks = [spec(f"task_{n}", "exit 1" if n == 1 else "true") for n in (1, 2, 10)]
    tasks.append(spec("task_3", "true", "task_1"))
    import_tasks(project, tasks)
    dry = _ok("mission", "--from-tasks", "--dry-run", cwd=project)
    assert run_rho("mission", "--from-tasks", cwd=project).code == 1

    shown = _ok("mission", "show", "latest", cwd=project)

    listed = [line for line in dry.splitlines() if line.startswith("  ") and ": " in line]
    assert [line.split(":")[0].strip() for line in listed[:3]] == [
        "task_1",
        "task_2",
        "task_10",
    ]
    row = next(line for line in shown.splitlines() if " task_3 " in line)
    assert "blocked" in row
    assert "rho-mission/" not in row


def test_the_public_key_of_a_key_file_is_the_hex_trusted_key_takes(
    project: Path, tmp_path: Path
) -> None:
    key = tmp_path / "issuer.key"
    key.write_text("11" * 32 + "\n")
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    expected = (
        Ed25519PrivateKey.from_private_bytes(bytes.fromhex("11" * 32))
        .public_key()
        .public_bytes(Encoding.Raw, PublicFormat.Raw)
        .hex()
    )

    assert _ok("mission", "plan", "--public-key", str(key), cwd=project) == expected + "\n"


# -- review before merge --------------------------------------------------------------------------


def _reviewed(project: Path) -> str:
    import_tasks(
        project,
        [
            spec("lib", "echo lib > lib.txt"),
            spec("app", "cat lib.txt > app.txt; echo app >> app.txt", "lib"),
            spec("notes", "echo notes > notes.txt"),
        ],
    )
    _ok("mission", "--from-tasks", cwd=project)
    return str(_latest(project)["id"])


def test_diff_shows_the_whole_mission_or_one_task(project: Path) -> None:
    mission = _reviewed(project)

    whole = _ok("mission", "diff", mission, "--stat", cwd=project)
    one = _ok("mission", "diff", mission, "app", cwd=project)

    assert [line.split("|")[0].strip() for line in whole.splitlines()[:-1]] == [
        "app.txt",
        "lib.txt",
        "notes.txt",
    ]
    assert "+++ b/app.txt" in one
    assert "lib.txt" not in one.replace("cat lib.txt", "")
    assert run_git(project, "status", "--porcelain") == ""


def test_merge_only_some_tasks_then_the_rest(project: Path) -> None:
    mission = _reviewed(project)

    refused = run_rho("mission", "merge", mission, "--only", "app", cwd=project)
    picked = run_rho("mission", "merge", mission, "--only", "notes", "--squash", cwd=project)

    assert refused.code == 2
    assert refused.stderr_lines == [
        'error: task "app" needs the work of "lib" (it waits for it): add it with \'--only lib\''
    ]
    assert picked.code == 0, picked.stderr
    assert sorted(tree_files(project, "main")) == ["file0000.txt", "notes.txt"]
    assert run_git(project, "rev-list", "--count", "main").strip() == "2"  # one squashed commit
    assert "not merged: app, lib" in picked.stdout
    head = run_git(project, "rev-parse", "main").strip()
    assert store_tasks(project)["notes"]["metadata"]["rho.commit"] == head
    # A next mission from main finds notes' work there, and the others' still on the branch.
    _ok("task", "add", "more", "--blocked-by", "notes", "--command", "true", cwd=project)
    assert run_rho("mission", "--from-tasks", "--dry-run", cwd=project).code == 0

    _ok("mission", "merge", mission, "--only", "lib,app", cwd=project)

    files = tree_files(project, "main")
    assert sorted(files) == ["app.txt", "file0000.txt", "lib.txt", "notes.txt"]
    assert files["app.txt"] == "lib\napp\n"


def test_merge_squash_is_one_commit_on_the_branch(project: Path) -> None:
    mission = _reviewed(project)
    before = run_git(project, "rev-parse", "main").strip()

    out = _ok("mission", "merge", mission, "--squash", cwd=project)

    parents = run_git(project, "log", "-1", "--format=%P", "main").split()
    assert parents == [before]
    assert f"merged mission {mission} into main: squash " in out
    assert sorted(tree_files(project, "main")) == [
        "app.txt",
        "file0000.txt",
        "lib.txt",
        "notes.txt",
    ]
    head = run_git(project, "rev-parse", "main").strip()
    assert {t["metadata"]["rho.commit"] for t in store_tasks(project).values()} == {head}
    done = subprocess.run(
        ["git", "merge-base", "--is-ancestor", f"rho-mission/{mission}/integration", "main"],
        cwd=project,
        check=False,
    )
    assert done.returncode == 1  # the history stays on the mission's branch


def _claimed(project: Path, task_id: str, owner: str, at: str) -> None:
    """Mark *task_id* claimed by *owner* at *at* in the store, as an agent's claim leaves it."""
    path = project / ".rho" / "tasks.json"
    document = json.loads(path.read_text())
    for task in document["tasks"]:
        if task["id"] == task_id:
            task.update(status="in_progress", owner=owner, updatedAt=at)
    path.write_text(json.dumps(document))


def test_a_claimed_task_and_what_it_blocks_are_held_until_the_claim_lapses(
    project: Path,
) -> None:
    import_tasks(
        project,
        [
            spec("a", "echo a > a.txt"),
            spec("b", "echo b > b.txt", "a"),
            spec("c", "echo c > c.txt"),
        ],
    )
    _claimed(project, "a", "agent-1", "2026-01-01T00:00:00Z")  # long ago

    held = run_rho("mission", "--from-tasks", "--claim-ttl", "1000000d", cwd=project)

    assert held.code == 0, held.stdout + held.stderr
    assert 'a: claimed by "agent-1" ' in held.stderr
    assert 'b: blocked by "a" (in_progress)' in held.stderr
    assert store_tasks(project)["a"]["status"] == "in_progress"
    lapsed = run_rho("mission", "--from-tasks", "--claim-ttl", "1h", cwd=project)
    assert lapsed.code == 0, lapsed.stdout + lapsed.stderr
    assert {t["status"] for t in store_tasks(project).values()} == {"completed"}


def test_a_resume_refuses_a_task_claimed_since_and_takes_it_with_include_claimed(
    project: Path,
) -> None:
    import_tasks(project, [spec("a", "exit 1")])
    assert run_rho("mission", "--from-tasks", cwd=project).code == 1
    _ok("task", "update", "a", "--command", "echo a > a.txt", cwd=project)
    _claimed(project, "a", "agent-2", "2099-01-01T00:00:00Z")

    refused = run_rho("mission", "resume", "latest", cwd=project)
    taken = run_rho("mission", "resume", "latest", "--include-claimed", cwd=project)

    assert refused.code == 2
    assert 'claimed by "agent-2"' in refused.stderr
    assert "--include-claimed" in refused.stderr
    assert taken.code == 0, taken.stdout + taken.stderr
    assert store_tasks(project)["a"]["status"] == "completed"
