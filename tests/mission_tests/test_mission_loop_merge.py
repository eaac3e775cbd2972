"""``rho mission merge``: the one command that touches the user's checkout, and only when asked.

Real ``rho`` processes on real repositories. Every refusal is checked byte for byte: the work
tree's files (untracked and ignored ones included), the index file, HEAD, ORIG_HEAD and every
ref are read before and after, without running git in between (``git status`` may rewrite the
index's stat cache).
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from support.repos import tree_files, worktree_paths
from support.rho import RhoRuns, run_rho, wait_file_cmd, wait_until
from support.stores import import_tasks, mission_dir, spec

pytestmark = pytest.mark.usefixtures("no_leftover_tasks")


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)
    return done.stdout


def _commit(repo: Path, name: str, text: str) -> str:
    (repo / name).write_text(text, encoding="utf-8")
    _git(repo, "add", name)
    _git(repo, "commit", "--quiet", f"--message=user: {name}")
    return _git(repo, "rev-parse", "HEAD").strip()


def _completed_mission(project: Path) -> str:
    """Run a two-task mission that adds ``one.txt`` and ``two.txt``; return its id."""
    import_tasks(
        project,
        [spec("task_1", "echo one > one.txt"), spec("task_2", "echo two > two.txt", "task_1")],
    )
    result = run_rho("mission", "--from-tasks", cwd=project)
    assert result.code == 0, result.stderr
    return mission_dir(project).name


def _head(repo: Path, ref: str = "HEAD") -> str:
    return _git(repo, "rev-parse", ref).strip()


def _checkout_bytes(repo: Path) -> dict[str, bytes]:
    """The user's checkout as bytes: work tree files and modes, index, HEAD files and refs."""
    found: dict[str, bytes] = {}
    for path in sorted(repo.rglob("*")):
        relative = path.relative_to(repo)
        if relative.parts[0] in (".git", ".rho") or (path.is_dir() and not path.is_symlink()):
            continue
        found[str(relative)] = oct(path.lstat().st_mode).encode() + b":" + path.read_bytes()
    git_dir = repo / ".git"
    for name in ("index", "HEAD", "ORIG_HEAD", "MERGE_HEAD"):
        file = git_dir / name
        found[f".git/{name}"] = file.read_bytes() if file.exists() else b"<absent>"
    refs = subprocess.run(
        ["git", "for-each-ref", "--format=%(objectname) %(refname)"],
        cwd=repo,
        check=True,
        capture_output=True,
    )
    found["<refs>"] = refs.stdout
    return found


def _refused(result: object, message: str) -> None:
    code, stdout, stderr = (getattr(result, k) for k in ("code", "stdout", "stderr"))
    assert (code, stdout, stderr) == (2, "", f"error: {message}\n")


# -- merges that happen -----------------------------------------------------------------------


def test_merge_fast_forwards_the_current_branch_and_its_files(project: Path) -> None:
    ident = _completed_mission(project)
    integration = _head(project, f"rho-mission/{ident}/integration")
    before = _head(project)

    result = run_rho("mission", "merge", ident, cwd=project)

    assert (result.code, result.stderr) == (0, "")
    assert result.stdout_lines == [
        f"merged mission {ident} into main: fast-forward {before[:12]}..{integration[:12]}, "
        "2 file(s) changed",
        f"next: rho mission clean {ident}",
    ]
    assert _head(project) == integration
    assert _git(project, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    assert (project / "one.txt").read_text() == "one\n"
    assert (project / "two.txt").read_text() == "two\n"
    assert _git(project, "status", "--porcelain", "--untracked-files=no") == ""


def test_merge_makes_a_merge_commit_when_the_branch_moved_on(project: Path) -> None:
    ident = _completed_mission(project)
    integration = _head(project, f"rho-mission/{ident}/integration")
    mine = _commit(project, "mine.txt", "mine\n")

    result = run_rho("mission", "merge", ident[:3], cwd=project)

    assert result.code == 0, result.stderr
    merge = _head(project)
    assert result.stdout_lines[0] == (
        f"merged mission {ident} into main: merge commit {merge[:12]}, 2 file(s) changed"
    )
    assert _git(project, "rev-parse", "HEAD^1", "HEAD^2").split() == [mine, integration]
    assert (
        _git(project, "log", "-1", "--format=%s").strip() == f"Merge rho mission {ident} into main"
    )
    assert set(tree_files(project, "HEAD")) == {"file0000.txt", "mine.txt", "one.txt", "two.txt"}
    assert (project / "two.txt").read_text() == "two\n"
    assert _git(project, "status", "--porcelain", "--untracked-files=no") == ""


def test_merge_twice_says_there_is_nothing_left_to_merge(project: Path) -> None:
    ident = _completed_mission(project)
    assert run_rho("mission", "merge", ident, cwd=project).code == 0
    head = _head(project)

    again = run_rho("mission", "merge", "latest", cwd=project)

    assert (again.code, again.stdout_lines) == (
        0,
        [f"main already holds the work of mission {ident}: nothing to merge"],
    )
    assert _head(project) == head


def test_merge_into_a_branch_not_checked_out_moves_only_that_branch(project: Path) -> None:
    base = _head(project)
    _git(project, "branch", "release")
    ident = _completed_mission(project)
    (project / "file0000.txt").write_text("the user's unfinished edit\n", encoding="utf-8")
    before = _checkout_bytes(project)

    result = run_rho("mission", "merge", ident, "--into", "release", cwd=project)

    assert result.code == 0, result.stderr
    integration = _head(project, f"rho-mission/{ident}/integration")
    assert _head(project, "release") == integration
    after = _checkout_bytes(project)
    assert after.pop("<refs>") != before.pop("<refs>")
    assert after == before  # files, index, HEAD: untouched; only refs/heads/release moved
    assert _head(project, "main") == base


# -- refusals: nothing changes -----------------------------------------------------------------


def _dirty_unstaged(project: Path) -> None:
    (project / "file0000.txt").write_text("unsaved work\n", encoding="utf-8")


def _dirty_staged(project: Path) -> None:
    (project / "staged.txt").write_text("staged work\n", encoding="utf-8")
    _git(project, "add", "staged.txt")


@pytest.mark.parametrize(
    ("arrange", "listed"),
    [(_dirty_unstaged, "file0000.txt"), (_dirty_staged, "staged.txt")],
    ids=["unstaged", "staged"],
)
def test_merge_refuses_a_dirty_work_tree_and_changes_nothing(
    project: Path, arrange: Callable[[Path], None], listed: str
) -> None:
    ident = _completed_mission(project)
    arrange(project)
    (project / "untracked-note.txt").write_text("mine\n", encoding="utf-8")
    before = _checkout_bytes(project)

    result = run_rho("mission", "merge", ident, cwd=project)

    _refused(
        result,
        f"your work tree has uncommitted changes ({listed}); commit or stash them, "
        f"then run 'rho mission merge {ident}' again",
    )
    assert _checkout_bytes(project) == before


@pytest.mark.parametrize("ignored", [False, True], ids=["untracked", "ignored"])
def test_merge_refuses_to_overwrite_an_untracked_or_ignored_file(
    project: Path, ignored: bool
) -> None:
    ident = _completed_mission(project)
    (project / "two.txt").write_text("the user's own two\n", encoding="utf-8")
    if ignored:
        with (project / ".git" / "info" / "exclude").open("a") as exclude:
            exclude.write("two.txt\n")
    before = _checkout_bytes(project)

    result = run_rho("mission", "merge", ident, cwd=project)

    _refused(
        result,
        "the merge would overwrite untracked files in your work tree (two.txt); move them "
        f"away, then run 'rho mission merge {ident}' again",
    )
    assert _checkout_bytes(project) == before


def test_merge_refuses_a_conflict_and_changes_nothing(project: Path) -> None:
    import_tasks(project, [spec("task_1", "echo mission > file0000.txt")])
    assert run_rho("mission", "--from-tasks", cwd=project).code == 0
    ident = mission_dir(project).name
    _commit(project, "file0000.txt", "user\n")
    before = _checkout_bytes(project)

    result = run_rho("mission", "merge", ident, cwd=project)

    branch = f"rho-mission/{ident}/integration"
    _refused(
        result,
        f'merging "{branch}" into "main" conflicts in file0000.txt; nothing was changed: '
        f"merge it by hand with 'git merge {branch}'",
    )
    assert _checkout_bytes(project) == before


def test_merge_refuses_a_detached_head(project: Path) -> None:
    ident = _completed_mission(project)
    _git(project, "checkout", "--quiet", "--detach")
    before = _checkout_bytes(project)

    result = run_rho("mission", "merge", ident, cwd=project)

    _refused(result, "HEAD is detached: check out the branch to merge into, or pass --into BRANCH")
    assert _checkout_bytes(project) == before


def test_merge_into_a_branch_checked_out_elsewhere_is_refused(
    project: Path, tmp_path: Path
) -> None:
    ident = _completed_mission(project)
    _git(project, "branch", "release")
    other = tmp_path / "other"
    _git(project, "worktree", "add", "--quiet", str(other), "release")
    before = _checkout_bytes(project), _checkout_bytes(other)

    result = run_rho("mission", "merge", ident, "--into", "release", cwd=project)

    _refused(
        result,
        f"branch \"release\" is checked out at {other}; run 'rho mission merge {ident}' there",
    )
    assert (_checkout_bytes(project), _checkout_bytes(other)) == before


@pytest.mark.parametrize(
    ("into", "message"),
    [
        ("nope", 'no branch "nope" to merge mission {id} into'),
        (
            "rho-mission/{id}/task_1",
            'refusing to merge into "rho-mission/{id}/task_1": it is a branch of a mission, '
            "not yours",
        ),
    ],
    ids=["unknown", "mission-branch"],
)
def test_merge_into_a_bad_branch_is_refused(project: Path, into: str, message: str) -> None:
    ident = _completed_mission(project)
    before = _checkout_bytes(project)

    result = run_rho("mission", "merge", ident, "--into", into.format(id=ident), cwd=project)

    _refused(result, message.format(id=ident))
    assert _checkout_bytes(project) == before


def test_merge_and_clean_refuse_a_running_mission(
    project: Path, tmp_path: Path, runs: RhoRuns
) -> None:
    up, go = tmp_path / "up", tmp_path / "go"
    command = f"touch {shlex.quote(str(up))}; {wait_file_cmd(go)}; echo one > one.txt"
    import_tasks(project, [spec("task_1", command)])
    running = runs.start("mission", "--from-tasks", cwd=project)
    wait_until(up.exists, "the task to start")
    ident = mission_dir(project).name
    before = _checkout_bytes(project)

    merged = run_rho("mission", "merge", ident, cwd=project)
    cleaned = run_rho("mission", "clean", ident, "--force", cwd=project)

    running_line = f"mission {ident} is running; wait for it to end (or cancel it) first"
    _refused(merged, running_line)
    _refused(cleaned, running_line)
    assert _checkout_bytes(project) == before
    assert worktree_paths(project)[1:], "the running mission's worktrees are in place"
    go.touch()
    assert runs.wait(running).code == 0
