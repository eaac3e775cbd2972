"""Real git repositories for the tests: made, run and read with the real git CLI.

``run_git`` and ``init_repo`` use the test's own environment (``hermetic_git`` keeps the
machine's git out of it); ``git`` and ``init_home_repo`` give git a home of the test's own
(``support.environ.rho_env``), for the tests whose ``rho`` runs get one too.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

from support.environ import rho_env

__all__ = [
    "branches",
    "git",
    "init_home_repo",
    "init_repo",
    "integration_branch",
    "run_git",
    "tree_digest",
    "tree_files",
    "user_snapshot",
    "worktree_paths",
]


def run_git(cwd: Path, *args: str) -> str:
    """Run the real git CLI in *cwd* and return its output (independent of the code under test)."""
    done = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)
    return done.stdout


def init_repo(root: Path, files: int) -> Path:
    """Create a git repository at *root* on branch ``main`` with one commit of *files* files."""
    root.mkdir(parents=True)
    run_git(root, "init", "--quiet", "--initial-branch=main")
    for index in range(files):
        (root / f"file{index:04d}.txt").write_text(f"line {index}\n", encoding="utf-8")
    run_git(root, "add", "--all")
    run_git(root, "commit", "--quiet", "--message=initial")
    return root


def git(cwd: Path, home: Path, *args: str) -> str:
    """Run the real git CLI in *cwd* with *home* as its home and return its output."""
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=rho_env(home), check=True, capture_output=True, text=True
    )
    return done.stdout


def init_home_repo(root: Path, home: Path) -> Path:
    """A git repository at *root* on ``main`` with one commit of one file, made by ``git``
    with *home* as its home."""
    root.mkdir(parents=True)
    git(root, home, "init", "--quiet", "--initial-branch=main")
    (root / "README.txt").write_text("a project\n", encoding="utf-8")
    git(root, home, "add", "--all")
    git(root, home, "commit", "--quiet", "--message=initial")
    return root


def user_snapshot(root: Path) -> str:
    """What the user sees of their checkout: current branch, HEAD, status, unstaged, staged."""
    return "".join(
        run_git(root, *args)
        for args in (
            ("symbolic-ref", "HEAD"),
            ("rev-parse", "HEAD"),
            ("status", "--porcelain=v1", "--untracked-files=all"),
            ("diff",),
            ("diff", "--cached"),
        )
    )


def branches(repo: Path) -> set[str]:
    """Every local branch name."""
    return set(run_git(repo, "branch", "--format=%(refname:short)").split())


def worktree_paths(repo: Path, *, pooled: bool = False) -> list[str]:
    """The paths of the worktrees git has registered, the main one first: those in use or left
    behind; the ones given back to the shared pool (locked ``rho-pool idle``) only if *pooled*."""
    blocks = run_git(repo, "worktree", "list", "--porcelain").split("\n\n")
    return [
        block.splitlines()[0].removeprefix("worktree ")
        for block in blocks
        if block.startswith("worktree ") and (pooled or "locked rho-pool idle" not in block)
    ]


def integration_branch(repo: Path) -> str:
    """The integration branch of the newest mission of *repo*: by its start (to the
    millisecond: two missions often start within one second, a commit's date), else, with no
    mission folder left, by its branch's creation."""
    records = [
        json.loads(p.read_text()) for p in (repo / ".rho" / "missions").glob("*/mission.json")
    ]
    started = [record for record in records if record.get("started_at")]
    if started:
        newest = max(started, key=lambda record: record["started_at"])
        return str(newest["integration_branch"])
    listed = run_git(repo, "for-each-ref", "--sort=-creatordate", "--format=%(refname:short)")
    return next(ref for ref in listed.splitlines() if ref.endswith("/integration"))


def tree_files(repo: Path, ref: str) -> dict[str, str]:
    """The files of commit *ref*, each with its content."""
    names = run_git(repo, "ls-tree", "-r", "--name-only", ref).split()
    return {name: run_git(repo, "show", f"{ref}:{name}") for name in names}


def tree_digest(root: Path) -> str:
    """SHA-256 over every entry below *root*: relative path, mode, mtime and file bytes.

    Equal digests mean no file was created, removed, rewritten or re-permissioned.
    """
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        status = path.lstat()
        line = f"{path.relative_to(root)}\0{status.st_mode:o}\0{status.st_mtime_ns}\0"
        digest.update(line.encode())
        if path.is_file() and not path.is_symlink():
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()
