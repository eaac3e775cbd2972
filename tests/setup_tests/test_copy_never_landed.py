"""No commit rho lands carries a ``--copy`` file, whoever made the commit (design §12).

A task, a resolver or a fix that commits by itself (``git add -A && git commit``, as agents do)
would take the copied ``.env`` into its commit; rho lands none of that work: the feature (the
resolution, the fix) fails with one line naming the path, the task's own history is kept on
its branch as it wrote it, and ``rho mission merge`` has nothing of the secret to bring.

Real ``rho`` processes in real repositories, real shell tasks; the secret lives in an untracked
``.env`` that no ``.gitignore`` covers unless the test says so.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from support.overlap import STAND_IN, package, registering_tasks
from support.repos import integration_branch, run_git, tree_files
from support.rho import run_rho
from support.stores import import_tasks, spec

pytestmark = pytest.mark.usefixtures("no_leftover_tasks")

SECRET = "k3y-that-never-leaves"
COMMITS = "echo hi > a.txt && git add -A && git commit -qm wip"
# The reason a feature fails, the commit it names aside.
REASON = (
    r"holds \.env, a --copy file, which no commit rho lands may carry "
    r"\(make git ignore \.env, so that 'git add -A' leaves it out\)"
)


@pytest.fixture
def app(project: Path) -> Path:
    """The project with its secret (``_with_secret``)."""
    return _with_secret(project)


def _with_secret(project: Path) -> Path:
    """*project* with an untracked ``.env`` (mode 0600) that no ``.gitignore`` covers, and a
    branch ``rel`` at its HEAD for ``rho mission merge --into``."""
    env_file = project / ".env"
    env_file.write_text(f"SECRET={SECRET}\n", encoding="utf-8")
    env_file.chmod(0o600)
    run_git(project, "branch", "rel")
    return project


def _mission(project: Path) -> dict[str, Any]:
    (folder,) = (project / ".rho" / "missions").iterdir()
    record: dict[str, Any] = json.loads((folder / "mission.json").read_text())
    return record


def _features(project: Path) -> dict[str, dict[str, Any]]:
    return {feature["id"]: feature for feature in _mission(project)["features"]}


def _history_holds(project: Path, ref: str, path: str) -> bool:
    """Whether any commit *ref* reaches (from the base on) names *path*, or the secret shows."""
    names = run_git(project, "log", "--format=", "--name-only", "--full-history", ref)
    return path in names.split() or SECRET in run_git(project, "log", "-p", "--full-history", ref)


def _merged_into_rel(project: Path) -> None:
    """``rho mission merge latest --into rel``: whatever it says, ``rel`` gets no secret."""
    run_rho("mission", "merge", "latest", "--into", "rel", cwd=project)
    assert not _history_holds(project, "rel", ".env")


def test_a_task_that_commits_the_copy_fails_naming_it_and_lands_nothing(app: Path) -> None:
    import_tasks(app, [spec("t1", COMMITS)])
    done = run_rho("mission", "--from-tasks", "--copy", ".env", cwd=app)
    assert done.code == 1, done.stderr + done.stdout
    feature = _features(app)["t1"]
    assert feature["status"] == "failed"
    # The task's own commit, kept on its branch as it wrote it (never rewritten by rho).
    kept = run_git(app, "rev-parse", feature["branch"]).strip()
    assert re.fullmatch(rf"commit {kept[:12]} {REASON}", feature["error"]), feature["error"]
    assert tree_files(app, kept)[".env"] == f"SECRET={SECRET}\n"
    assert not _history_holds(app, integration_branch(app), ".env")
    shown = run_rho("mission", "show", "latest", cwd=app)
    said = [line for line in shown.stdout_lines if line.startswith("t1: failed, 1 attempt(s)")]
    assert [line.endswith(f": {feature['error']}") for line in said] == [True], shown.stdout
    _merged_into_rel(app)


@pytest.mark.usefixtures("bwrap")
def test_a_sandboxed_task_that_commits_the_copy_fails_the_same(app: Path) -> None:
    # Its commit reaches the store through the quarantine; it is refused all the same.
    import_tasks(app, [spec("t1", COMMITS)])
    done = run_rho("mission", "--from-tasks", "--copy", ".env", "--sandbox", cwd=app)
    assert done.code == 1, done.stderr + done.stdout
    feature = _features(app)["t1"]
    kept = run_git(app, "rev-parse", feature["branch"]).strip()
    assert re.fullmatch(rf"commit {kept[:12]} {REASON}", feature["error"]), feature["error"]
    assert not _history_holds(app, integration_branch(app), ".env")


def test_a_secret_committed_then_dropped_from_the_tip_still_fails(app: Path) -> None:
    dropped = f"{COMMITS} && git rm -q --cached .env && git commit -qm unwip"
    import_tasks(app, [spec("t1", dropped)])
    done = run_rho("mission", "--from-tasks", "--copy", ".env", cwd=app)
    assert done.code == 1, done.stderr + done.stdout
    feature = _features(app)["t1"]
    assert feature["status"] == "failed"
    tip = feature["branch"]
    assert ".env" not in tree_files(app, tip)  # the tip is clean, its history is not
    first = run_git(app, "rev-parse", f"{tip}~1").strip()
    assert re.fullmatch(rf"commit {first[:12]} {REASON}", feature["error"]), feature["error"]
    assert not _history_holds(app, integration_branch(app), ".env")
    _merged_into_rel(app)


def test_a_copy_hidden_in_a_merged_side_branch_fails(app: Path) -> None:
    # The side branch's commit adds the secret; the merge keeps the tip without it.
    side = (
        "git add .env && git commit -qm side && side=$(git rev-parse HEAD) && "
        "git reset -q --soft HEAD~1 && git rm -q --cached .env && "
        "echo hi > a.txt && git add a.txt && git commit -qm main && "
        'git merge -q --no-ff -s ours -m merge "$side"'
    )
    import_tasks(app, [spec("t1", side)])
    done = run_rho("mission", "--from-tasks", "--copy", ".env", cwd=app)
    assert done.code == 1, done.stderr + done.stdout
    feature = _features(app)["t1"]
    assert re.fullmatch(rf"commit [0-9a-f]{{12}} {REASON}", feature["error"]), feature["error"]
    assert not _history_holds(app, integration_branch(app), ".env")


@pytest.mark.parametrize(
    ("ignored", "command"),
    [
        (False, "echo hi > a.txt && git add a.txt && git commit -qm wip"),
        (True, COMMITS),  # .gitignore names .env: 'git add -A' leaves it out
    ],
    ids=["added-by-name", "ignored"],
)
def test_a_task_that_commits_without_the_copy_lands(app: Path, ignored: bool, command: str) -> None:
    if ignored:
        (app / ".gitignore").write_text(".env\n", encoding="utf-8")
        run_git(app, "add", ".gitignore")
        run_git(app, "commit", "-qm", "ignore .env")
        run_git(app, "branch", "-f", "rel")
    import_tasks(app, [spec("t1", command)])
    done = run_rho("mission", "--from-tasks", "--copy", ".env", cwd=app)
    assert done.code == 0, done.stderr + done.stdout
    assert _features(app)["t1"]["status"] == "completed"
    branch = integration_branch(app)
    assert tree_files(app, branch)["a.txt"] == "hi\n"
    assert not _history_holds(app, branch, ".env")
    merged = run_rho("mission", "merge", "latest", "--into", "rel", cwd=app)
    assert merged.code == 0, merged.stderr
    assert tree_files(app, "rel")["a.txt"] == "hi\n"
    assert not _history_holds(app, "rel", ".env")


def test_a_resolver_that_brings_the_secret_and_commits_lands_nothing(
    project: Path, marks: Path
) -> None:
    package(project)
    app = _with_secret(project)
    registering_tasks(app, marks)
    # The resolve worktree gets no copy; this resolver fetches the user's and commits it all.
    resolver = (
        f'test ! -e .env && {STAND_IN} && cp "$RHO_MISSION_DIR/../../../.env" .env && '
        "git add -A && git commit -qm resolved"
    )
    done = run_rho("mission", "--from-tasks", "--copy", ".env", "--resolve", resolver, cwd=app)
    assert done.code == 1, done.stderr + done.stdout
    features = _features(app)
    assert features["add_a"]["status"] == "completed"
    for name in ("add_b", "add_c"):
        feature = features[name]
        assert feature["status"] == "failed"
        assert feature["conflict"]["outcome"] == "failed"
        reason = feature["conflict"]["reason"]
        assert re.fullmatch(rf"the resolver failed: its resolution {REASON}", reason), reason
        assert feature["error"].endswith(reason)
    assert not _history_holds(app, integration_branch(app), ".env")
    _merged_into_rel(app)


def test_a_fix_that_commits_the_copy_fails_and_lands_nothing(app: Path) -> None:
    import_tasks(app, [spec("t1", "echo 1 > one.txt")])
    fix = "echo ok > fixed.txt && git add -A && git commit -qm fix"
    done = run_rho(
        "mission", "--from-tasks", "--copy", ".env", "--verify", "test -f fixed.txt",
        "--fix", fix, "--fix-attempts", "1", cwd=app,
    )  # fmt: skip
    assert done.code == 1, done.stderr + done.stdout
    [join] = _mission(app)["wave_joins"]
    assert join["verification"]["status"] == "failed"
    branch = integration_branch(app)
    assert "fixed.txt" not in tree_files(app, branch)
    assert not _history_holds(app, branch, ".env")
    log = (Path(_mission(app)["dir"]) / "logs").glob("*")
    said = "".join(path.read_text() for path in log) + json.dumps(join)
    assert re.search(rf"commit [0-9a-f]{{12}} {REASON}", said), said
    _merged_into_rel(app)


def test_the_start_never_advises_committing_a_copied_file(app: Path) -> None:
    # The checkout's changes are warned of (the worktrees will not see them); the --copy file
    # is not among them: it reaches every worktree, and is a secret not to commit.
    import_tasks(app, [spec("a", "echo a > a.txt")])
    (app / "notes.txt").write_text("mine, not committed\n")
    done = run_rho("mission", "--from-tasks", "--copy", ".env", cwd=app)
    assert done.code == 0, done.stderr
    [warning] = [line for line in done.stderr_lines if "hold changes no commit has" in line]
    assert warning.startswith("warning: 1 file(s) of your checkout hold changes no commit has")
    assert "notes.txt" in warning
    assert ".env" not in done.stderr
