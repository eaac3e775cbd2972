"""The git layer: a repository, its repository-wide lock, branches, commits and merges.

Every git call of the mission engine goes through ``GitRepo.run``, the one place where git's
failures become ``MissionError``s. Nothing here touches the user's working tree, index or
current branch: feature work happens in linked worktrees (``_pool.WorktreePool``) and merges
are computed with ``git merge-tree`` and written with ``commit-tree`` + ``update-ref``. What a
feature's worktree holds is committed by ``_commit.commit_worktree`` (``commit_all``).

A call on a worktree (``cwd=``) names that worktree's git directory, common directory and work
tree explicitly, from what rho recorded when it made it (``containment.PinnedWorktree``), after
checking the folder is still that one: never from the ``.git`` file a task can rewrite.

All calls are synchronous; the engine runs them in worker threads (``anyio.to_thread``). Every
operation that changes git metadata (worktrees, branches, merges, commits that move a ref) holds
``GitRepo.locked()``: a thread lock shared by all ``GitRepo`` objects of one repository in this
process, combined with a file lock at ``<git common dir>/rho-mission.lock`` for other processes.

Decision: docs/decisions/0602-git-per-feature.md, docs/decisions/0703-git-hardening.md
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .._errors import (
    BranchCheckedOutError,
    GitOperationError,
    MergeConflictError,
    NotAGitRepositoryError,
    RefMovedError,
    UnknownRefError,
    UnsafePathError,
)
from ..containment import PinnedWorktree, pin_worktree, pinned, require_pinned
from ..containment._environ import child_environ
from ..containment._gitconfig import check_config
from ..containment._helpers import run_continued
from ._commit import CommitResult, commit_worktree, path_text
from ._exclude import add_exclude_line
from ._lock import repo_lock
from ._refstream import RefStream

__all__ = [
    "PARALLEL_CHECKOUT",
    "CommitResult",
    "GitRepo",
    "MergeChain",
    "WorktreeInfo",
    "ref_moved",
]

LOCK_FILE_NAME = "rho-mission.lock"

# The identity of rho's own commits when the user has configured none.
_FALLBACK_IDENTITY = {
    "GIT_AUTHOR_NAME": "rho-mission",
    "GIT_AUTHOR_EMAIL": "rho-mission@localhost",
    "GIT_COMMITTER_NAME": "rho-mission",
    "GIT_COMMITTER_EMAIL": "rho-mission@localhost",
}

# Hooks and fsmonitor daemons belong to the user's interactive work, not to rho's plumbing in
# throw-away worktrees: a slow post-checkout hook would run on every feature, a daemon would be
# spawned per worktree and outlive it; and a task could plant either for rho to run. No
# submodule is entered: a nested repository a task made has a config of the task's.
_PLUMBING_CONFIG = (
    "-c",
    f"core.hooksPath={os.devnull}",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "submodule.recurse=false",
    # No "gc --auto" from rho's plumbing: detached, it would be a daemon in a session of its
    # own under rho (the subreaper), ended as a task's orphan.
    "-c",
    "gc.auto=0",
)


# In the worktrees rho makes, the index is written split (git/_handover): a shared part git
# writes once, and a small file of what changed since. At 60,000 files that takes each of a
# feature's index writes (checkout, add, write-tree) from 5 MB to a few kilobytes. The
# user's own checkout is left as the user's config has it.
_SPLIT_INDEX = ("-c", "core.splitIndex=true")


# A checkout that writes many files (a new worktree's first, 20,000 files) writes them with one
# worker per core: 3x faster here at 20,000 files (bench/README.md, "first checkout"). From
# 1,000 files to write, not git's 100: below that, starting the workers costs more than it saves.
PARALLEL_CHECKOUT = ("-c", "checkout.workers=0", "-c", "checkout.thresholdForParallelism=1000")


@dataclass(frozen=True, slots=True)
class WorktreeInfo:
    """One entry of ``git worktree list``: ``branch`` is the short name, None when detached.

    ``locked`` is the lock reason (``""`` when locked without one), None when not locked.
    """

    path: Path
    head: str | None
    branch: str | None
    locked: str | None


# The reflog's word for a branch moved to the start of a feature attempt.
_START_MESSAGE = "rho-mission: start of a feature attempt"


class GitRepo:
    """A git repository seen from its main work tree; open one with ``GitRepo.open``.

    ``root`` is the top level of the work tree that ``open`` was given a path in; ``common_dir``
    the git directory shared by all its worktrees (``<root>/.git`` for a main work tree).
    """

    def __init__(self, root: Path, common_dir: Path) -> None:
        self.root = root
        self.common_dir = common_dir
        self._lock = repo_lock(common_dir / LOCK_FILE_NAME)
        self._identity: dict[str, str] | None = None
        # Feature attempts' branch moves (start_branch): one git process for the repository's
        # life, ended with this object at the latest.
        command = ["git", "-C", str(root), *_PLUMBING_CONFIG, "update-ref", "-m"]
        self._starts = RefStream([*command, _START_MESSAGE, "--stdin"], child_environ(None))
        weakref.finalize(self, self._starts.close)

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> GitRepo:
        """Open the repository whose work tree holds *path* (the top level or any folder below).

        Found by git itself from *path*, never from inherited ``GIT_DIR`` or ``GIT_WORK_TREE``.

        Raises:
            NotAGitRepositoryError: *path* lies in no git work tree, or in a bare repository.
        """
        shown = os.path.abspath(path)
        # One process: "--show-toplevel" fails (after printing the first two answers) outside
        # a work tree.
        args = ("--git-common-dir", "--is-inside-work-tree", "--show-toplevel")
        command = ["git", "-C", shown, "rev-parse", "--path-format=absolute", *args]
        status, out, _ = _execute(command, None)
        lines = out.splitlines()
        if len(lines) >= 2 and lines[1] != "true":
            raise NotAGitRepositoryError(shown, "git work tree")
        if status != 0 or len(lines) != 3:
            raise NotAGitRepositoryError(shown)
        return cls(Path(lines[2]).resolve(), Path(lines[0]).resolve())

    def __repr__(self) -> str:
        return f"GitRepo({str(self.root)!r})"

    # -- the translation boundary ------------------------------------------------------------

    def run(self, *args: str, cwd: Path | None = None, env: Mapping[str, str] | None = None) -> str:
        """Run ``git <args>`` in *cwd* (default: the root) and return its standard output.

        Raises:
            GitOperationError: git exited with a non-zero status, or could not be started.
        """
        status, out, err = self.run_status(*args, cwd=cwd, env=env)
        if status != 0:
            raise GitOperationError(["git", *args], status, err)
        return out

    def run_status(
        self, *args: str, cwd: Path | None = None, env: Mapping[str, str] | None = None
    ) -> tuple[int, str, str]:
        """Run ``git <args>`` and return its exit status, standard output and standard error.

        For commands whose exit status is an answer (``merge-base --is-ancestor``).

        Raises:
            GitOperationError: git could not be started at all.
        """
        check_config(self.common_dir)
        if cwd is None:
            done = _execute(["git", "-C", str(self.root), *_PLUMBING_CONFIG, *args], env)
        else:
            pin = self._pin_of(cwd)
            pin.check()
            where = ("-C", str(pin.path), *pin.git_options())
            config = (*_PLUMBING_CONFIG, *_SPLIT_INDEX)
            done = _execute(["git", *where, *config, *args], env, pin.git_environ())
        # Changed while git ran: what git did is not taken (the caller gets the error).
        check_config(self.common_dir)
        return done

    # -- worktrees rho made --------------------------------------------------------------------

    def pin_worktree(self, path: Path) -> PinnedWorktree:
        """Record the linked worktree at *path* as it is now: its folder and its git directory.

        Every later call with ``cwd=path`` uses what was recorded and checks the folder is
        still the same. Call it before anything untrusted runs there (the worktree pool does,
        right after ``git worktree add``).

        Raises:
            WorktreeTamperedError: *path* is no linked worktree of this repository.
        """
        return pin_worktree(path, self.common_dir)

    def _pin_of(self, cwd: Path) -> PinnedWorktree:
        pin = require_pinned(cwd)
        if pin.common_dir != self.common_dir:
            raise UnsafePathError(cwd, "is no worktree rho made for this repository")
        return pin

    # -- the lock ----------------------------------------------------------------------------

    def locked(self, timeout: float | None = None) -> contextlib.AbstractContextManager[None]:
        """Hold the repository-wide lock for the ``with`` block; reentrant in one thread.

        Other threads of this process and other processes (another ``rho`` on this repository)
        wait. Every metadata method of this module takes it; take it yourself to make several
        calls atomic. *timeout* seconds (None: wait for ever) bounds the wait.

        Raises:
            RepositoryLockTimeoutError: the lock is still held by someone else after *timeout*.
        """
        return self._lock.hold(timeout)

    @property
    def lock_path(self) -> Path:
        """The file that other processes lock: ``<git common dir>/rho-mission.lock``."""
        return self._lock.path

    # -- refs --------------------------------------------------------------------------------

    def resolve_commit(self, ref: str) -> str:
        """Return the full sha of the commit that *ref* names (a branch, tag, sha, ``HEAD~1``).

        Raises:
            UnknownRefError: *ref* names no commit.
        """
        status, out, _ = self.run_status(
            "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"
        )
        if status != 0 or not ref:
            raise UnknownRefError(ref)
        return out.strip()

    def commit_id(self, ref: str) -> str:
        """Like ``resolve_commit``, but a full sha is taken as it is, without a git process.

        For the commits rho resolved itself (a wave's start): git checks them again where it
        uses them (a branch can only be pointed at a commit that exists).

        Raises:
            UnknownRefError: *ref*, not a full sha, names no commit.
        """
        if len(ref) == 40 and all(c in "0123456789abcdef" for c in ref):
            return ref
        return self.resolve_commit(ref)

    def head_commit(self) -> str:
        """Return the sha of the commit checked out in the root's work tree.

        Raises:
            UnknownRefError: the repository has no commit yet.
        """
        return self.resolve_commit("HEAD")

    def branch_commit(self, name: str) -> str | None:
        """Return the sha that branch *name* points at, or None when there is no such branch."""
        status, out, _ = self.run_status(
            "rev-parse", "--verify", "--quiet", f"refs/heads/{name}^{{commit}}"
        )
        return out.strip() if status == 0 and name else None

    def list_branches(self, prefix: str = "") -> list[str]:
        """Return the sorted names of the local branches that start with *prefix*."""
        out = self.run("for-each-ref", "--format=%(refname:strip=2)", "refs/heads/")
        return sorted(name for name in out.splitlines() if name.startswith(prefix))

    def create_branch(self, name: str, commit: str) -> None:
        """Point branch *name* at *commit*, creating it or force-resetting it.

        Raises:
            UnknownRefError: *commit* names no commit.
            GitOperationError: *name* is not a valid branch name, or a work tree has it checked
                out (git refuses to move it).
        """
        sha = self.resolve_commit(commit)
        with self.locked():
            self.run("branch", "--force", "--no-track", "--", name, sha)

    def delete_branch(self, name: str) -> bool:
        """Delete branch *name*; return False when there was no such branch.

        Raises:
            GitOperationError: a work tree has the branch checked out.
        """
        with self.locked():
            if self.branch_commit(name) is None:
                return False
            self.run("branch", "--delete", "--force", "--", name)
            return True

    def exclude(self, pattern: str) -> bool:
        """Add *pattern* as a line of ``<common dir>/info/exclude`` unless it is there already.

        The common dir's exclude file applies to every worktree of the repository. Returns
        whether the file changed.
        """
        with self.locked():
            return add_exclude_line(self.common_dir, pattern)

    def worktrees(self) -> list[WorktreeInfo]:
        """Return every worktree of the repository, the main one first, as git lists them."""
        out = self.run("worktree", "list", "--porcelain", "-z")
        return [_parse_worktree(block) for block in out.split("\0\0") if block.strip("\0")]

    # -- commits and merges ------------------------------------------------------------------

    def commit_all(
        self,
        worktree: Path,
        message: str,
        *,
        base: str | None = None,
        branch: str | None = None,
        spared: tuple[str, ...] = (),
    ) -> CommitResult:
        """Commit what *worktree* holds, its HEAD and its uncommitted changes, on *branch*.

        The result is the worktree's HEAD, whatever branch the worker left it on (or none):
        when it is not on *branch*, HEAD is detached first (so that rho's commit moves no branch
        of the worker's), and then *branch* is moved to the result. Ignored files stay out.
        Hooks and signing never run; when the user has no ``user.email``, the commit is made as
        ``rho-mission <rho-mission@localhost>``. The result compares HEAD with *base* (default:
        the head before this call), so commits the worker made itself count too. *spared*
        paths (a worktree's kept setup outputs and copied files) are never staged.

        Raises:
            UnknownRefError: *base* names no commit.
            FeatureResultError: HEAD no longer descends from *base* (the worker checked out
                unrelated history, or an orphan branch with no commit): that work cannot be
                taken.
            GitOperationError: staging or committing failed (for example mid-rebase).
        """
        if pinned(worktree) is None:
            self.pin_worktree(worktree)  # a library caller's own worktree: recorded now
        result = commit_worktree(self, worktree, message, base=base, branch=branch, spared=spared)
        return result.commit_result()

    def merge_into(self, target_branch: str, source_branch: str, message: str) -> str:
        """Merge *source_branch* into *target_branch* without any worktree; return the new head.

        ``merge_commit`` then ``move_branch``, the move checked against the head just read.

        Raises:
            UnknownRefError: either branch does not exist.
            MergeConflictError: the branches conflict; ``.files`` names the files.
            BranchCheckedOutError: a work tree has *target_branch* checked out.
        """
        with self.locked():
            old = self.branch_commit(target_branch)
            if old is None:
                raise UnknownRefError(target_branch)
            source = self.branch_commit(source_branch)
            if source is None:
                raise UnknownRefError(source_branch)
            new = self.merge_commit(old, source, message, (target_branch, source_branch))
            if new != old:
                self.refuse_checked_out(target_branch)
                self.move_branch(target_branch, new, old, message)
            return new

    def merge_commit(
        self, head: str, commit: str, message: str, names: tuple[str, str] = ("", "")
    ) -> str:
        """The commit that merges *commit* into *head*; no ref moves.

        *head* itself when it already contains *commit*; *commit* when *head* is behind it (a
        fast-forward); else a new merge commit of both, its tree computed by ``git merge-tree``.
        *names* (target, source) name the two sides in a conflict error.

        Raises:
            MergeConflictError: the two conflict; ``.files`` names the files.
        """
        # One "merge-base" answers both questions: when one commit contains the other, it is
        # their only best common ancestor (two "--is-ancestor" calls cost a process more).
        head, commit = self.commit_id(head), self.commit_id(commit)  # compared as full ids
        base = self._merge_base(head, commit)
        if base == commit:
            return head
        if base == head:
            return commit
        return self._merge_commit(head, commit, message, names)

    def merge_trees(
        self, head: str, commit: str, message: str, names: tuple[str, str] = ("", "")
    ) -> str:
        """A new merge commit of *head* and *commit* (parents in that order); no ref moves.

        For two commits known to be such that neither contains the other (``MergeChain``).

        Raises:
            MergeConflictError: the two conflict; ``.files`` names the files.
        """
        return self._merge_commit(head, commit, message, names)

    def parents(self, commits: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """Each of *commits* (full ids) and its parents, from one ``git rev-list``."""
        if not commits:
            return {}
        out = self.run("rev-list", "--no-walk=unsorted", "--parents", *commits, "--")
        lines = (line.split() for line in out.splitlines() if line)
        return {fields[0]: tuple(fields[1:]) for fields in lines}

    def move_branch(self, name: str, new: str, expected: str | None, message: str = "") -> None:
        """Point branch *name* at *new* if it still holds *expected* (None: if it does not exist).

        A compare-and-swap (``git update-ref <ref> <new> <old>``): a branch that someone else
        moved meanwhile is refused, never overwritten.

        Raises:
            RefMovedError: the branch does not hold *expected*.
            GitOperationError: *name* is not a valid branch name, or *new* no commit.
        """
        ref = f"refs/heads/{name}"
        old = expected or ""  # git's "must not exist yet"
        with self.locked():
            status, _, err = self.run_status(
                "update-ref", "-m", f"rho-mission: {message or 'move'}", ref, new, old
            )
            if status != 0:
                raise self._refused_move(name, expected, ["git", "update-ref", ref], status, err)

    def start_branch(self, name: str, start: str, expected: str | None) -> None:
        """``move_branch(name, start, expected)`` for the start of a feature attempt: the same
        compare-and-swap under the lock (made where *expected* is None), sent to the
        repository's one ``git update-ref --stdin`` (``_refstream``) instead of a new process.

        Raises:
            RefMovedError: the branch does not hold *expected*.
            GitOperationError: git refused otherwise (an invalid name, no such commit).
        """
        ref = f"refs/heads/{name}"
        line = f"update {ref} {start} {expected}" if expected else f"create {ref} {start}"
        command = ["git", "update-ref", "--stdin", ref]
        if len(line.split()) != (4 if expected else 3) or not line.isprintable():
            # The stream reads one command per line, its fields split at spaces: a name or id
            # with a space or a line break would be another field or another command (such as
            # a "delete" of the user's branch), where "update-ref" in argv refuses the name.
            raise GitOperationError(command, None, f"fatal: invalid ref move: {line!r}")
        with self.locked():
            check_config(self.common_dir)
            try:
                said = self._starts.apply(line)
            except OSError as exc:  # git could not be started at all
                raise GitOperationError(command, None, str(exc)) from exc
            check_config(self.common_dir)
            if said is not None:
                raise self._refused_move(name, expected, command, 128, said)

    @property
    def branch_stream(self) -> RefStream:
        """The ``git update-ref --stdin`` that ``start_branch`` sends its moves to."""
        return self._starts

    def close(self) -> None:
        """End the git process this object keeps for branch moves (started again if needed)."""
        self._starts.close()

    def refuse_checked_out(self, branch: str) -> None:
        """Refuse to go on when a work tree has *branch* checked out.

        ``update-ref`` skips git's "checked out elsewhere" check; moving a checked-out branch
        would leave that work tree's files looking modified under its user.

        Raises:
            BranchCheckedOutError: a work tree has *branch* checked out.
        """
        for tree in self.worktrees():
            if tree.branch == branch:
                raise BranchCheckedOutError(branch, str(tree.path))

    def refs_under(self, prefix: str) -> dict[str, str]:
        """The branches whose names start with *prefix* (``rho-mission/<id>/``) and their commits.

        One ``git for-each-ref`` call; keys are short branch names.
        """
        out = self.run(
            "for-each-ref", "--format=%(objectname) %(refname:strip=2)", f"refs/heads/{prefix}"
        )
        pairs = (line.split(" ", 1) for line in out.splitlines() if line)
        return {name: sha for sha, name in pairs}

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        """Whether commit *ancestor* is *descendant* or one of its ancestors."""
        return self._is_ancestor(ancestor, descendant)

    # -- helpers -----------------------------------------------------------------------------

    def _refused_move(
        self, name: str, expected: str | None, command: list[str], status: int, err: str
    ) -> GitOperationError | RefMovedError:
        # git refused to move the branch: because it no longer holds *expected*, or otherwise.
        found = self.branch_commit(name)
        if found == expected:
            return GitOperationError(command, status, err)
        return ref_moved(name, expected, found)

    def _is_ancestor(self, ancestor: str, descendant: str) -> bool:
        status, _, err = self.run_status("merge-base", "--is-ancestor", ancestor, descendant)
        if status > 1:
            raise GitOperationError(["git", "merge-base", "--is-ancestor"], status, err)
        return status == 0

    def _merge_base(self, one: str, other: str) -> str | None:
        # None when the two share no history (git exits 1 and prints nothing).
        status, out, err = self.run_status("merge-base", one, other)
        if status > 1:
            raise GitOperationError(["git", "merge-base"], status, err)
        return out.strip() or None

    def merge_tree(self, ours: str, theirs: str) -> tuple[str, list[str]]:
        """The tree of merging *theirs* into *ours*, and the paths where they conflict (none:
        a clean merge), computed by ``git merge-tree``: no worktree, index or ref is touched.

        Raises:
            GitOperationError: git could not compute the merge.
        """
        args = ("merge-tree", "--write-tree", "--name-only", "--no-messages", "-z", ours, theirs)
        status, out, err = self.run_status(*args)
        fields = [item for item in out.split("\0") if item]
        if status not in (0, 1) or not fields:
            raise GitOperationError(["git", *args], status, err)
        return fields[0], [path_text(name) for name in fields[1:]] if status == 1 else []

    def _merge_commit(self, ours: str, theirs: str, message: str, names: tuple[str, str]) -> str:
        tree, conflicted = self.merge_tree(ours, theirs)
        if conflicted:
            raise MergeConflictError(conflicted, target=names[0], source=names[1])
        parents = ("-p", ours, "-p", theirs)
        env = self.identity_env()
        return self.run(
            "commit-tree", "--no-gpg-sign", *parents, "-m", message, tree, env=env
        ).strip()

    def commit_tree(self, tree: str, parents: Sequence[str], message: str) -> str:
        """A new commit of *tree* with *parents* (rho's identity when the user has none)."""
        options = [option for parent in parents for option in ("-p", parent)]
        env = self.identity_env()
        return self.run(
            "commit-tree", "--no-gpg-sign", *options, "-m", message, tree, env=env
        ).strip()

    def apply_change(self, onto: str, before: str, after: str) -> str | None:
        """The tree of commit *onto* with the change from *before* to *after* applied; None
        when it does not apply (a conflict). No work tree, index or ref is touched: the change
        goes through a private index file (three-way, as ``git apply --3way`` does).
        """
        diff = self.run("diff", "--binary", "--full-index", "--no-renames", before, after)
        # mkstemp opens with O_EXCL and the patch is written through that descriptor: a link
        # planted at its name is never written through. git writes the index by a lock file and
        # a rename, which replaces a link and never follows it.
        fd, name = tempfile.mkstemp(
            prefix="rho-mission-pick-", suffix=".patch", dir=self.common_dir
        )
        patch, index = Path(name), Path(name).with_suffix(".index")
        with os.fdopen(fd, "wb") as handle:
            handle.write(diff.encode("utf-8", "surrogateescape"))  # git's bytes, as read

        def git(*args: str) -> tuple[int, str, str]:
            check_config(self.common_dir)
            command = ["git", "-C", str(self.root), *_PLUMBING_CONFIG, *args]
            done = _execute(command, None, {"GIT_INDEX_FILE": str(index)})
            check_config(self.common_dir)
            return done

        try:
            status, _, err = git("read-tree", onto)
            if status != 0:
                raise GitOperationError(["git", "read-tree"], status, err)
            if git("apply", "--cached", "--3way", "--whitespace=nowarn", str(patch))[0] != 0:
                return None
            status, out, err = git("write-tree")
            if status != 0:
                raise GitOperationError(["git", "write-tree"], status, err)
            return out.strip()
        finally:
            for path in (index, patch):
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()

    def identity_env(self) -> dict[str, str]:
        """The variables that give rho's commits an author when the user configured none."""
        if self._identity is None:
            status, out, _ = self.run_status("config", "user.email")
            configured = status == 0 and bool(out.strip())
            fallback = {k: v for k, v in _FALLBACK_IDENTITY.items() if not os.environ.get(k)}
            self._identity = {} if configured else fallback
        return self._identity


class MergeChain:
    """Commits merged one after another onto *start* without moving a ref: ``head`` so far.

    ``GitRepo.merge_commit`` asks git whether one side already contains the other (one
    ``merge-base``). For rho's usual commit, whose only parent is *start* (what a worker left
    on the wave's start), the answer is known as long as every commit merged before was such a
    commit too: it is not in the head (which holds *start*, other such commits and merge
    commits made after them), and it holds the head only while the head is *start* (then it
    is a fast-forward). So a wave's join asks git only for the merges themselves.
    """

    def __init__(self, repo: GitRepo, start: str, parents: Mapping[str, tuple[str, ...]]) -> None:
        self.repo = repo
        self.start = start
        self.head = start
        self.merged: list[str] = []  # the commits that moved the head, in order
        self._parents = parents
        self._known = True  # the head's history is start's, plus commits whose parent is start

    def add(self, commit: str, message: str, names: tuple[str, str] = ("", "")) -> None:
        """Merge *commit* into the head (nothing when the head contains it already).

        Raises:
            MergeConflictError: the two conflict; the head stays as it was.
        """
        if commit in self.merged:
            return
        if self._known and self._parents.get(commit) == (self.start,):
            new = (
                commit
                if self.head == self.start
                else self.repo.merge_trees(self.head, commit, message, names)
            )
        else:
            new = self.repo.merge_commit(self.head, commit, message, names)
            # Unless the head held it already, its history (unknown here) is in the head now.
            self._known = self._known and new == self.head
        if new != self.head:
            self.merged.append(commit)
            self.head = new

    def adopt(self, merge: str, commit: str) -> None:
        """Take *merge*, a merge of the head and *commit* made elsewhere (a resolved
        conflict), as the new head."""
        self.merged.append(commit)
        self.head = merge
        self._known = False  # a merge commit is in the head now: ask git from here on


def _execute(
    command: list[str],
    extra: Mapping[str, str] | None,
    repository: Mapping[str, str] | None = None,
) -> tuple[int, str, str]:
    """Run *command* with the caller's environment minus git's repository paths.

    *repository* are git's repository variables rho sets itself (a pinned worktree's common
    dir): added after the inherited ones are dropped.

    Not through GitPython: it merges the whole ``os.environ`` into every call and honours an
    inherited ``GIT_WORK_TREE`` when it opens a repository, which is what must never happen here.

    Raises:
        GitOperationError: git could not be started at all.
    """
    try:
        # Continued if a task stops it (a task beside the feature committed or merged may):
        # a stopped git would hold rho past every timeout and signal.
        code, out, err = run_continued(command, {**child_environ(extra), **(repository or {})})
    except OSError as exc:
        raise GitOperationError(command, None, str(exc)) from exc
    return code, _text(out), _text(err)


def _text(data: bytes) -> str:
    # Paths in git's output are bytes; undecodable ones survive the round trip to the OS.
    return data.decode("utf-8", "surrogateescape")


def ref_moved(name: str, expected: str | None, found: str | None) -> RefMovedError:
    """The error of a move that found branch *name* at *found* instead of *expected*."""
    return RefMovedError(
        name,
        f"moved while rho was moving it (expected {_short(expected)}, found "
        f"{_short(found)}); nothing was overwritten",
    )


def _short(commit: str | None) -> str:
    return commit[:12] if commit else "no branch"


def _parse_worktree(block: str) -> WorktreeInfo:
    attributes: dict[str, str] = {}
    for line in block.strip("\0").split("\0"):
        key, _, value = line.partition(" ")
        attributes[key] = value
    branch = attributes.get("branch")
    return WorktreeInfo(
        path=Path(attributes["worktree"]),
        head=attributes.get("HEAD"),
        branch=branch.removeprefix("refs/heads/") if branch else None,
        locked=attributes.get("locked"),
    )
