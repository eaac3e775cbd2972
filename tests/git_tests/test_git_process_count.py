"""How many git processes a mission starts per feature, counted by a ``git`` shim on PATH.

The shim (first on PATH, in a folder of the test) appends each call's arguments to a log file and
runs the real git; the store is loaded before the shim is used, so only the mission's own calls
are counted. Per-mission calls (open, settle refs, prune, the worktree folder) and per-wave calls
(merges at a join; a no-op feature has no commit, so none) are averaged over the features. The
processes git starts itself (``worktree add`` runs two, out of the shim's sight) are not counted:
they are per worktree, not per feature. ``bench/bench_git_processes.py`` prints the table.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import anyio
import pytest

from rho_mission import WorkerContext
from rho_mission._errors import RefMovedError
from rho_mission.git._commit import (
    WorktreeResult,
    WorktreeStatus,
    commit_worktree,
    parse_status,
    path_text,
)
from rho_mission.git._pool import WorktreePool
from rho_mission.git._repo import GitRepo, MergeChain
from support.library import plan
from support.procs import kill_leftover_groups
from support.repos import branches, run_git
from support.rho import run_rho
from support.stores import import_tasks, spec

# The mission shape: 20 no-op tasks in 4 waves of 5 (each blocked by every task of the wave
# before), 2 workers, 20 files. Once it took 11.25 git processes per feature, then 4.0
# with a detach at release, 3.0 without (2 per feature: "checkout -b", now "switch -c", and
# "status"; the rest per mission).
WAVES, WIDTH, WORKERS = 4, 5, 2
FEATURES = WAVES * WIDTH
FILES = 20
MAX_PER_FEATURE = 4.0


def _load_shim_helpers() -> ModuleType:
    # The shim, its log's reader and the subcommand parser are the benchmark's own: one copy.
    path = Path(__file__).resolve().parents[2] / "bench" / "bench_git_processes.py"
    spec = importlib.util.spec_from_file_location("bench_git_processes", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_SHIM = _load_shim_helpers()
git_shim: Callable[[Path, Path], dict[str, str]] = _SHIM.git_shim
subcommand: Callable[[list[str]], str] = _SHIM.subcommand
logged_calls: Callable[[Path], list[list[str]]] = _SHIM.logged_calls
walks: Callable[[Path, tuple[str, ...]], Counter[tuple[str, str]]] = _SHIM.walks
lstat_passes: Callable[[Path, int], Counter[str]] = _SHIM.lstat_passes
LSTAT_TRACE: dict[str, str] = _SHIM.LSTAT_TRACE
WALKS: tuple[str, ...] = _SHIM.WALKS
WRITE: str = _SHIM.WRITE
INDEX_WRITES: tuple[str, ...] = _SHIM.INDEX_WRITES


@pytest.fixture(autouse=True)
def no_leftovers(tmp_path: Path) -> Iterator[None]:
    """After each test, no task process of its missions may still run (they are killed)."""
    yield
    assert kill_leftover_groups(tmp_path) == [], "a task process outlived its mission"


def no_op_waves() -> list[dict[str, object]]:
    """WAVES waves of WIDTH tasks, each blocked by every task of the wave before."""
    ids = [[f"w{w}t{t}" for t in range(1, WIDTH + 1)] for w in range(1, WAVES + 1)]
    return [
        spec(task_id, None, *(ids[number - 1] if number else []))
        for number, wave in enumerate(ids)
        for task_id in wave
    ]


def _run_waves(make_repo: Callable[[str, int], Path], command: str, env: dict[str, str]) -> Path:
    """A repository of 20 files with the WAVES x WIDTH store, one mission of *command* run on
    it with *env* added; the repository."""
    project = make_repo("repo", FILES)
    import_tasks(project, no_op_waves())
    args = ("mission", "--from-tasks", "--run", command, "--workers", str(WORKERS))
    result = run_rho(*args, cwd=project, env=env)
    assert result.code == 0, result.stderr
    return project


def test_a_no_op_feature_costs_at_most_four_git_processes(
    make_repo: Callable[[str, int], Path], tmp_path: Path
) -> None:
    log = tmp_path / "git-calls.log"
    project = _run_waves(make_repo, "true", git_shim(tmp_path / "shim", log))
    assert len([b for b in branches(project) if b.startswith("rho-mission/")]) == FEATURES + 1
    calls = logged_calls(log)
    by_command = Counter(subcommand(call) for call in calls)
    checkout = [c for c in calls if subcommand(c) == "status" and "--porcelain=v1" in c]
    assert len(checkout) == 1  # the one look at the user's checkout: is it dirty?
    assert by_command["status"] - 1 == FEATURES  # the shim saw every feature's commit step
    table = ", ".join(f"{name} {count / FEATURES:.2f}" for name, count in by_command.most_common())
    per_feature = len(calls) / FEATURES
    assert per_feature <= MAX_PER_FEATURE, f"{per_feature:.2f} per feature: {table}"


# The walks of the work tree per feature whose task writes a file, counted by git's trace2: the
# commit step's status (an lstat of every entry, a readdir of the tree) and its staging by name (a
# readdir of the listed paths' folders only). Once, "git commit" refreshed the whole
# index again (4.1 per feature); the commit is now made from the index, by "write-tree" and
# "commit-tree". The pooled worktree's checkout (an lstat of every entry too) enters no region
# below git's 1,000 entries of parallel preload: bench/README.md counts it apart.
MAX_WALKS_PER_WRITING_FEATURE = 3.2


def test_a_feature_walks_the_tree_as_often_as_git_traces_and_no_more(
    make_repo: Callable[[str, int], Path], tmp_path: Path
) -> None:
    trace = tmp_path / "trace2"
    trace.mkdir()
    _run_waves(make_repo, WRITE, {"GIT_TRACE2_PERF": str(trace)})
    walked = walks(trace, WALKS)
    table = ", ".join(f"{name} {label} {times}" for (name, label), times in sorted(walked.items()))
    # Every feature's status was traced (the check is live), and nothing else refreshed the
    # index: no commit, no other status (the one look at the user's checkout refreshes too).
    refreshed = {name: times for (name, label), times in walked.items() if label == "refresh"}
    assert refreshed == {"status": FEATURES + 1}, table
    per_feature = sum(walked.values()) / FEATURES
    assert per_feature <= MAX_WALKS_PER_WRITING_FEATURE, f"{per_feature:.2f} per feature: {table}"
    # The status writes no index back (the files the checkout before it wrote are "racily
    # clean", so it would, at every feature): "add" and the next checkout write it anyway.
    written = walks(trace, INDEX_WRITES)
    assert written[("status", "do_write_index")] == 0, written
    assert written[("add", "do_write_index")] == FEATURES, written


def test_a_writing_feature_lstats_its_files_once(
    make_repo: Callable[[str, int], Path], tmp_path: Path
) -> None:
    # Every pass of git over the index's entries (an lstat of each), counted by git itself:
    # the commit step's status, and nothing else. A pooled worktree moves to its next start by
    # "read-tree -m -u", which looks only at the entries that differ; a checkout (or a
    # "checkout -b") would lstat every file again, at every feature.
    trace = tmp_path / "trace2"
    trace.mkdir()
    _run_waves(make_repo, WRITE, {"GIT_TRACE2_PERF": str(trace), **LSTAT_TRACE})
    passes = lstat_passes(trace, FILES)
    # Each feature's commit step, and the one look at the user's checkout.
    assert passes == Counter({"status": FEATURES + 1}), passes


# -- what the pool and the commit step know, so that they skip git processes ----------------


@pytest.fixture
def shim_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every git call of this process from now on goes through the shim; its log."""
    log = tmp_path / "git-calls.log"
    for name, value in git_shim(tmp_path / "shim", log).items():
        monkeypatch.setenv(name, value)
    return log


def test_a_worktree_is_cleaned_for_the_next_feature_unless_it_came_back_spotless(
    repo_path: Path, shim_log: Path
) -> None:
    run_git(repo_path, "rm", "--quiet", "file0002.txt")
    (repo_path / ".gitignore").write_text("*.log\n", encoding="utf-8")
    run_git(repo_path, "add", ".gitignore")
    run_git(repo_path, "commit", "--quiet", "--message=ignore logs")
    seen: dict[str, tuple[Path, list[str]]] = {}

    async def worker(ctx: WorkerContext) -> None:
        names = sorted(p.name for p in ctx.worktree.iterdir() if p.name != ".git")
        seen[ctx.feature.id] = (ctx.worktree, names)
        if ctx.feature.id == "a":  # ignored: nothing to commit, but not spotless either
            (ctx.worktree / "scratch.log").write_text("left behind\n", encoding="utf-8")

    mission = plan(repo_path, ["a", "b", "c"], max_workers=1)
    shim_log.unlink(missing_ok=True)
    mission.run_staged_sync(worker, waves=[["a"], ["b"], ["c"]])
    assert mission.status == "completed"
    files = [".gitignore", "file0000.txt", "file0001.txt"]
    assert {feature: names for feature, (_, names) in seen.items()} == dict.fromkeys("abc", files)
    assert len({worktree for worktree, _ in seen.values()}) == 1  # one worktree, reused
    # Cleaned before b (a left an ignored file), not before c (b left nothing at all).
    cleans = [call for call in logged_calls(shim_log) if subcommand(call) == "clean"]
    assert len(cleans) == 1


def test_work_committed_whole_needs_no_clean_and_no_second_checkout(
    repo_path: Path, shim_log: Path
) -> None:
    """a's new file is committed whole, so b reuses the worktree with no checkout and no clean;
    b sees a's work (merged) and nothing else."""
    seen: dict[str, list[str]] = {}

    async def worker(ctx: WorkerContext) -> None:
        seen[ctx.feature.id] = sorted(p.name for p in ctx.worktree.iterdir() if p.name != ".git")
        if ctx.feature.id == "a":
            (ctx.worktree / "new.txt").write_text("a's work\n", encoding="utf-8")
            (ctx.worktree / "also.txt").write_text("more\n", encoding="utf-8")
            run_git(ctx.worktree, "rm", "--quiet", "file0002.txt")

    mission = plan(repo_path, ["a", "b"], max_workers=1)
    shim_log.unlink(missing_ok=True)
    mission.run_staged_sync(worker, waves=[["a"], ["b"]])
    assert mission.status == "completed"
    base = ["file0000.txt", "file0001.txt", "file0002.txt"]
    assert seen == {"a": base, "b": ["also.txt", "file0000.txt", "file0001.txt", "new.txt"]}
    calls = [subcommand(call) for call in logged_calls(shim_log)]
    assert calls.count("clean") == 0, calls
    # a: the fill (a new worktree's checkout of every file), then its branch made there; b
    # starts where a's commit stands (the join fast-forwards to it): its branch made there, no
    # file written, no checkout (which would lstat every file). Both branches are made by the
    # repository's one "update-ref --stdin", started once: no process per move.
    moves = [c for c in calls if c in ("checkout", "switch", "read-tree", "symbolic-ref")]
    assert moves == ["checkout"], calls
    streams = [
        c for c in logged_calls(shim_log) if subcommand(c) == "update-ref" and "--stdin" in c
    ]
    assert len(streams) == 1, calls


def test_a_new_feature_branch_is_never_taken_from_someone_else(repo: GitRepo) -> None:
    start = repo.head_commit()
    # A commit of someone else's, made without touching the user's checkout.
    theirs = run_git(repo.root, "commit-tree", "HEAD^{tree}", "-p", "HEAD", "-m", "theirs").strip()
    run_git(repo.root, "branch", "m/a", theirs)
    with WorktreePool(repo, repo.root / ".rho" / "worktrees" / "abc", "abc") as pool:
        with pytest.raises(RefMovedError) as raised:
            pool.acquire("m/a", start, None)  # rho expects no branch there
        assert str(raised.value) == (
            f'"m/a" moved while rho was moving it (expected no branch, found {theirs[:12]}); '
            "nothing was overwritten"
        )
        assert repo.branch_commit("m/a") == theirs
        path = pool.acquire("m/b", start, None)
        assert run_git(path, "symbolic-ref", "HEAD") == "refs/heads/m/b\n"
        assert run_git(path, "status", "--porcelain", "--ignored") == ""


def _commit_in(repo: GitRepo, work: Callable[[Path], None]) -> tuple[str, WorktreeResult]:
    # A fresh pool's worktree on a new branch m/a, *work* done in it, then the commit step.
    start = repo.head_commit()
    with WorktreePool(repo, repo.root / ".rho" / "worktrees" / "abc", "abc") as pool:
        path = pool.acquire("m/a", start, None)
        work(path)
        return start, commit_worktree(repo, path, "m/a", base=start, branch="m/a")


def test_a_worker_that_changed_nothing_leaves_a_spotless_worktree_on_its_branch(
    repo: GitRepo, shim_log: Path
) -> None:
    start, result = _commit_in(repo, lambda path: None)
    assert result == WorktreeResult(None, [], start, True, True)
    statuses = [call for call in logged_calls(shim_log) if subcommand(call) == "status"]
    assert len(statuses) == 1  # and nothing after it: no staging, no ref read


def test_a_worker_that_left_its_branch_without_new_work_leaves_it_unknown(repo: GitRepo) -> None:
    def leave(path: Path) -> None:
        run_git(path, "checkout", "--quiet", "-b", "mine")

    start, result = _commit_in(repo, leave)
    assert result == WorktreeResult(None, [], start, False, True)


def test_the_branch_holds_rhos_commit_of_what_the_worker_left(repo: GitRepo) -> None:
    def leave(path: Path) -> None:
        (path / "new.txt").write_text("new\n", encoding="utf-8")
        run_git(path, "checkout", "--quiet", "--detach")

    start, result = _commit_in(repo, leave)
    assert result.commit_id not in (None, start)
    # Committed whole: the worktree holds its HEAD and nothing else, so its next use skips
    # the clean and the detached checkout.
    assert result == WorktreeResult(result.commit_id, ["new.txt"], result.commit_id, True, True)
    assert repo.branch_commit("m/a") == result.commit_id


@pytest.mark.parametrize(
    ("records", "expected"),
    [
        (
            ["# branch.oid abc", "# branch.head m/a"],
            WorktreeStatus("abc", "m/a", False, True, True, ()),
        ),
        (
            ["# branch.oid abc", "# branch.head (detached)"],
            WorktreeStatus("abc", None, False, True, True, ()),
        ),
        (
            ["# branch.oid (initial)", "# branch.head o"],
            WorktreeStatus(None, "o", False, True, True, ()),
        ),
        (["# branch.oid abc", "! build/"], WorktreeStatus("abc", None, False, False, False)),
        (
            ["# branch.oid abc", "? new.txt"],
            WorktreeStatus("abc", None, True, False, True, ("new.txt",), True),
        ),
        (["# branch.oid abc", "? nested/"], WorktreeStatus("abc", None, True, False, False)),
        (
            ["1 .M N... 100644 100644 100644 a b f", "1 .D N... 100644 100644 000000 a b g h"],
            WorktreeStatus(None, None, True, False, True, ("f", "g h"), True),
        ),
        # Staged by the worker: the commit's change is read from git, not from the status.
        (
            ["1 M. N... 100644 100644 100644 a b f", "? new.txt"],
            WorktreeStatus(None, None, True, False, True, None, True),
        ),
        (
            ["1 D. N... 100644 000000 000000 a b gone"],
            WorktreeStatus(None, None, True, False, True, None, True),
        ),
        # Staged, then edited again: perhaps back to HEAD's content, git is asked.
        (
            ["1 MM N... 100644 100644 100644 a b f"],
            WorktreeStatus(None, None, True, False, True, None, False),
        ),
        (
            ["1 MM N... 100644 100644 100644 a b f", "1 .M N... 100644 100644 100644 a a g"],
            WorktreeStatus(None, None, True, False, True, None, True),
        ),
        (
            ["1 .M S.M. 160000 160000 160000 a b sub"],
            WorktreeStatus(None, None, True, False, False),
        ),
        (
            ["2 R. N... 100644 100644 100644 a b R100 new", "# old"],
            WorktreeStatus(None, None, True, False, True),
        ),
        (
            ["u UU N... 100644 100644 100644 100644 a b c f"],
            WorktreeStatus(None, None, True, False, False),
        ),
    ],
)
def test_git_status_is_read_in_one_pass(records: list[str], expected: WorktreeStatus) -> None:
    assert parse_status("\0".join(records) + "\0") == expected


@pytest.mark.parametrize(
    ("records", "expected"),
    [
        # An untracked or ignored output of a kept setup: neither work nor a leftover.
        (["# branch.oid abc", "? venv/bin/python", "! node_modules/"], (True, True)),
        # A tracked file under a spared path that differs from HEAD: never staged, and the
        # worktree is not its HEAD's (its next move must check every file out again).
        (
            ["# branch.oid abc", "1 .M N... 100644 100644 100644 a b venv/pinned.txt"],
            (False, False),
        ),
        (
            ["# branch.oid abc", "? new.txt", "1 .D N... 100644 100644 000000 a b venv/x"],
            (False, False),
        ),
    ],
)
def test_a_spared_path_counts_against_spotless_only_for_a_tracked_change(
    records: list[str], expected: tuple[bool, bool]
) -> None:
    status = parse_status("\0".join(records) + "\0", ("venv", "node_modules"))
    assert (status.spotless, status.stageable) == expected


def _since(log: Path, mark: int) -> list[str]:
    return [subcommand(call) for call in logged_calls(log)[mark:]]


def test_committing_plain_changes_takes_five_git_processes_and_one_walk(
    repo: GitRepo, shim_log: Path
) -> None:
    """status, add, write-tree, commit-tree, update-ref: what add stages whole needs no "diff
    --cached" first, the changed files come from the status, not from a "diff" afterwards, and
    the commit is made from the index ("git commit" would lstat every file again first)."""
    start = repo.head_commit()
    with WorktreePool(repo, repo.root / ".rho" / "worktrees" / "abc", "abc") as pool:
        path = pool.acquire("m/a", start, None)
        (path / "new.txt").write_text("new\n", encoding="utf-8")
        (path / "file0000.txt").write_text("changed\n", encoding="utf-8")
        (path / "file0001.txt").unlink()
        repo.identity_env()  # once per repository (a "git config"), not per commit
        mark = len(logged_calls(shim_log))
        result = commit_worktree(repo, path, "m/a", base=start, branch="m/a")
        steps = ["status", "add", "write-tree", "commit-tree", "update-ref"]
        assert _since(shim_log, mark) == steps
        assert run_git(path, "rev-parse", "HEAD").strip() == result.commit_id
        assert run_git(path, "symbolic-ref", "HEAD").strip() == "refs/heads/m/a"
        assert run_git(path, "status", "--porcelain") == ""
    assert result.files_changed == ["file0000.txt", "file0001.txt", "new.txt"]
    assert result.spotless


def _mixed_changes(path: Path) -> None:
    (path / "with space.txt").write_text("a\n", encoding="utf-8")
    (path / "sub" / "deeper").mkdir(parents=True)
    (path / "sub" / "deeper" / "f.txt").write_text("b\n", encoding="utf-8")
    (path / os.fsdecode(b"bad\xff.txt")).write_bytes(b"c\n")
    (path / "file0000.txt").unlink()
    (path / "file0001.txt").chmod(0o755)
    (path / "link").symlink_to("file0001.txt")
    # Names that are pathspec magic or patterns to git: staged by name, they are literal.
    (path / "*.txt").write_text("star\n", encoding="utf-8")
    (path / ":(exclude)x").write_text("magic\n", encoding="utf-8")


def _staged_rename(path: Path) -> None:
    run_git(path, "mv", "file0000.txt", "renamed.txt")
    (path / "new.txt").write_text("new\n", encoding="utf-8")


def _changed_back(path: Path) -> None:
    # Staged, then changed back in the work tree: listed by status, not in the commit.
    original = (path / "file0000.txt").read_bytes()
    (path / "file0000.txt").write_text("other\n", encoding="utf-8")
    run_git(path, "add", "file0000.txt")
    (path / "file0000.txt").write_bytes(original)
    (path / "kept.txt").write_text("kept\n", encoding="utf-8")


@pytest.mark.parametrize("work", [_mixed_changes, _staged_rename, _changed_back])
def test_the_changed_files_are_the_ones_git_diff_names(
    repo: GitRepo, work: Callable[[Path], None]
) -> None:
    start, result = _commit_in(repo, work)
    assert result.commit_id is not None
    diff = ["git", "diff", "--name-only", "--no-renames", "-z", start, result.commit_id]
    out = subprocess.run(diff, cwd=repo.root, check=True, capture_output=True).stdout
    names = out.decode("utf-8", "surrogateescape").split("\0")
    assert result.files_changed == sorted(path_text(name) for name in names if name)


def test_a_merge_asks_git_for_the_merge_base_once(repo: GitRepo, shim_log: Path) -> None:
    base = repo.head_commit()
    tree = f"{base}^{{tree}}"
    ours = run_git(repo.root, "commit-tree", tree, "-p", base, "-m", "ours").strip()
    theirs = run_git(repo.root, "commit-tree", tree, "-p", base, "-m", "theirs").strip()
    repo.identity_env()
    cases = [
        ((base, ours), ours, ["merge-base"]),  # behind: a fast-forward
        ((ours, base), ours, ["merge-base"]),  # contained already
        ((ours, ours), ours, ["merge-base"]),
        ((ours, theirs), None, ["merge-base", "merge-tree", "commit-tree"]),
    ]
    for (head, commit), expected, calls in cases:
        mark = len(logged_calls(shim_log))
        merged = repo.merge_commit(head, commit, "merge")
        assert _since(shim_log, mark) == calls
        if expected is not None:
            assert merged == expected
        else:
            parents = run_git(repo.root, "rev-list", "--parents", "-n", "1", merged).split()
            assert parents[1:] == [ours, theirs]


def _commit_on(repo: GitRepo, message: str, *parents: str) -> str:
    tree = f"{parents[0]}^{{tree}}"
    options = [item for parent in parents for item in ("-p", parent)]
    return run_git(repo.root, "commit-tree", tree, *options, "-m", message).strip()


def test_a_chain_of_rhos_own_commits_asks_git_only_for_the_merges(
    repo: GitRepo, shim_log: Path
) -> None:
    start = repo.head_commit()
    a, b, c = (_commit_on(repo, name, start) for name in "abc")
    repo.identity_env()
    mark = len(logged_calls(shim_log))
    chain = MergeChain(repo, start, repo.parents([a, b, c]))
    for commit in (a, b, a, c):  # a twice: the second time it is in the head already
        chain.add(commit, "merge")
    # One rev-list for the parents; a is a fast-forward; b and c are merges.
    assert _since(shim_log, mark) == ["rev-list", *["merge-tree", "commit-tree"] * 2]
    assert chain.merged == [a, b, c]
    assert run_git(repo.root, "rev-parse", f"{chain.head}^2").strip() == c
    assert repo.is_ancestor(a, chain.head)
    assert repo.is_ancestor(b, chain.head)


def test_after_a_commit_of_unknown_history_the_chain_asks_git_again(repo: GitRepo) -> None:
    """b's worker merged a's work into its own: once b is in, a is in the head already."""
    start = repo.head_commit()
    a = _commit_on(repo, "a", start)
    b = _commit_on(repo, "b", _commit_on(repo, "b0", start), a)
    chain = MergeChain(repo, start, repo.parents([a, b]))
    chain.add(b, "merge")
    chain.add(a, "merge")
    assert (chain.head, chain.merged) == (b, [b])  # a fast-forward to b, then nothing to merge


def test_a_join_moves_the_integration_branch_once_and_asks_no_merge_base(
    make_repo: Callable[[str, int], Path], tmp_path: Path
) -> None:
    project = make_repo("repo", 20)
    tasks = [spec(f"a{n}", f"echo {n} > a{n}.txt") for n in range(3)]
    tasks += [spec(f"b{n}", f"echo {n} > b{n}.txt", f"a{n}") for n in range(3)]
    import_tasks(project, tasks)
    log = tmp_path / "git-calls.log"
    env = git_shim(tmp_path / "shim", log)
    result = run_rho("mission", "--from-tasks", "--workers", "2", cwd=project, env=env)
    assert result.code == 0, result.stderr
    calls = logged_calls(log)
    moves = [c for c in calls if subcommand(c) == "update-ref" and "/integration" in " ".join(c)]
    assert len(moves) == 2 + 1, moves  # its creation, then one move per wave
    assert [c for c in calls if subcommand(c) == "merge-base"] == []
    names = run_git(
        project, "ls-tree", "--name-only", f"rho-mission/{_only_mission(project)}/integration"
    )
    assert {f"{w}{n}.txt" for w in "ab" for n in range(3)} <= set(names.split())


def _only_mission(project: Path) -> str:
    (folder,) = (project / ".rho" / "missions").iterdir()
    return folder.name


def test_a_worktree_whose_move_writes_no_index_gets_one_newer_than_its_files(
    repo_path: Path,
) -> None:
    """A new worktree's checkout writes its files and its index in the same second: git (built
    without nanosecond times, as Debian's) deems each entry "racily clean" and reads the file
    whole at every status, until an index is written in a later second. The moves of no-op
    features write no index, so the commit step's status writes back the one it refreshed
    (before, a no-op chain read every file of its repository at every feature, for good)."""
    seen: list[Path] = []

    async def worker(ctx: WorkerContext) -> None:
        seen.append(ctx.worktree)
        if ctx.feature.id == "b":
            await anyio.sleep(1.1)  # its status, and so its index, a second after the files

    mission = plan(repo_path, ["a", "b", "c"], max_workers=1)
    mission.run_staged_sync(worker, waves=[["a"], ["b"], ["c"]])
    assert mission.status == "completed"
    (worktree,) = set(seen)  # one worktree, moved twice with no index written
    git_dir = Path(run_git(worktree, "rev-parse", "--absolute-git-dir").strip())
    index = int((git_dir / "index").stat().st_mtime)
    files = [int(path.stat().st_mtime) for path in worktree.iterdir() if path.name != ".git"]
    assert files
    assert max(files) < index
