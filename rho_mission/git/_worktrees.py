"""A pool of linked worktrees for one mission, and the clean-up of those a crash left behind.

A fresh ``git worktree add`` checks out every file and registers a new worktree; reusing an
idle one is several times cheaper (``bench/bench_worktrees.py``): check the start commit out over
it, clean it, and point its branch there. So a feature borrows a worktree with ``acquire`` and
gives it back with ``release``; ``close`` removes them all at the end of the mission.

A feature whose worktree comes back spotless (``release(..., spotless=True)``: its last ``git
status`` listed nothing, not even an ignored file) is not cleaned again at its next ``acquire``:
a no-op feature costs one git process (its commit step's ``status``; its branch is made by
the repository's one ``update-ref --stdin``, ``GitRepo.start_branch``): a released worktree
stays on its branch until the next ``acquire`` puts another one there.

Each worktree is registered *locked*, with the reason ``rho-mission <mission> pid <pid>``: git's
own ``worktree prune`` leaves it alone, and ``prune_stale`` can tell a worktree that a live
process is using from one that a crashed process left behind.

A *shared* pool (``shared=True``, the engine's ``<repo>/.rho/worktrees/pool``) outlives its
mission: ``close`` gives its healthy idle worktrees back to the folder, detached and locked with
the reason ``rho-pool idle``, up to ``limit`` worktrees in the folder in all. A later mission of the
repository (or a resume) reclaims one instead of checking out every file again: only a worktree
given back that way, whose claim lock (``<git common dir>/rho-pool-<name>.lock``, ``flock``)
nobody holds, and that passes the checks a new one passes (``pin_worktree``: a real folder whose
``.git`` names its own git directory, which points back; nothing unfinished in it). Then the
start commit is checked out over it and it is cleaned, as any reused worktree is. One that
fails is deleted without running git on it. A worktree whose holder died without giving it back
is never reclaimed (what the holder started may still write there); ``prune_pool`` removes it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import secrets
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from .._errors import (
    GitConfigChangedError,
    GitOperationError,
    InvalidMissionError,
    MissionError,
    RefMovedError,
    WorktreeTamperedError,
)
from ..containment import PinnedWorktree, pinned, unpin
from ..containment._folders import (
    check_own_folder,
    folder_anchor,
    open_unfollowed,
    private_folder,
    remove_tree,
)
from ..containment._pids import pid_alive
from ._handover import (
    SavedIndex,
    carry_index,
    index_is_plain,
    restore_index,
    save_index,
    trim_git_dir,
)
from ._repo import PARALLEL_CHECKOUT, GitRepo, WorktreeInfo, ref_moved

__all__ = [
    "DEFAULT_POOL_LIMIT",
    "SHARED_POOL",
    "KeptOutputs",
    "WorktreePool",
    "drop_pooled",
    "held_by",
    "pool_limit",
    "pooled_worktrees",
    "prune_pool",
    "prune_stale",
]

_LOCK_REASON = re.compile(r"^rho-mission \S+ pid (\d+)$")
IDLE_REASON = "rho-pool idle"
SHARED_POOL = "pool"  # the shared pool's folder, in <repo>/.rho/worktrees
# Worktrees a shared pool keeps between missions: one per worker of a usual --workers 4 and as
# many spare (RHO_WORKTREE_POOL=N to change it; 0 keeps none).
DEFAULT_POOL_LIMIT = 8


def pool_limit() -> int:
    """``$RHO_WORKTREE_POOL`` as a count of worktrees, or ``DEFAULT_POOL_LIMIT``.

    Raises:
        InvalidMissionError: the variable is set to anything but a whole number >= 0.
    """
    value = os.environ.get("RHO_WORKTREE_POOL", "").strip()
    if not value:
        return DEFAULT_POOL_LIMIT
    if not value.isdigit() or not value.isascii():
        raise InvalidMissionError(f"RHO_WORKTREE_POOL must be a whole number >= 0, not {value!r}")
    return int(value)


class _Unset:
    """The type of ``_UNSET``: no expected value given."""


# What ``acquire`` asks of a reused worktree before its clean: the paths to spare, and whether
# to clean it whole although it came back spotless (kept outputs that can no longer be trusted).
KeptOutputs = Callable[[Path], tuple[tuple[str, ...], bool]]


def _ignore_pattern(path: str) -> str:
    """*path* (repository-relative) as a gitignore pattern that matches it alone: anchored at
    the top, its wildcard and escape characters escaped."""
    escaped = re.sub(r"([\\*?\[\]])", r"\\\1", path)
    if escaped.endswith(" "):
        escaped = escaped[:-1] + "\\ "
    return "/" + escaped


_UNSET = _Unset()
_MISSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")

# What a worker can leave in a worktree's git dir that a checkout does not clear (an unfinished
# rebase, cherry-pick sequence, bisect, or a git killed mid-write): such a worktree is replaced.
_UNFINISHED = ("rebase-merge", "rebase-apply", "sequencer", "BISECT_LOG", "index.lock")

# The worktrees of every open pool of this process: never stale, whatever their lock says.
_LIVE: set[Path] = set()
_LIVE_GUARD = threading.Lock()


class WorktreePool:
    """The worktrees of one mission, under *folder*, reused from one feature to the next.

    Thread-safe: the engine acquires and releases from several worker threads. With
    ``keep=True`` a released worktree stays on its branch and is never reused, and ``close``
    leaves it in place (unlocked) for the user to inspect.

    *folder* lies outside the work tree, or inside it under an ignored path (the engine uses
    ``<repo>/.rho/worktrees/<mission id>``, with ``.rho/`` excluded).

    Raises:
        InvalidMissionError: *mission_id* is not a plain file name, or *folder* is the work
            tree or holds it. (A folder in the work tree that git does not ignore is refused
            by the first ``acquire``.)
    """

    def __init__(
        self,
        repo: GitRepo,
        folder: str | os.PathLike[str],
        mission_id: str,
        *,
        keep: bool = False,
        shared: bool = False,
        limit: int = DEFAULT_POOL_LIMIT,
    ) -> None:
        if not _MISSION_ID.match(mission_id):
            raise InvalidMissionError(f"invalid mission id {mission_id!r}")
        self.repo = repo
        # Whether the folder is ignored is checked at the first "worktree add": the caller
        # may exclude ".rho/" after creating the pool.
        self.folder = _checked_folder(repo, folder, ignored=False)
        self._folder_checked = False
        self.mission_id = mission_id
        self._keep = keep
        self._shared = shared and not keep  # a kept worktree is the user's to inspect
        self._limit = limit
        # The claim locks this pool holds on shared worktrees: path -> descriptor.
        self._claims: dict[Path, int] = {}
        self._reclaimable = True  # until a look at the pool's folder found none free
        self._state = threading.Lock()
        self._idle: list[Path] = []
        self._busy: set[Path] = set()
        self._kept: list[Path] = []
        # Idle worktrees known to hold nothing but their HEAD's files (no "git clean" needed),
        # and that HEAD's commit when the caller said it (then a move to it writes nothing).
        self._spotless: dict[Path, str | None] = {}
        # The index that rho's last checkout left in each worktree (see _handover).
        self._index_saved: dict[Path, SavedIndex] = {}
        # Worktrees whose last move wrote no index (see index_unwritten).
        self._unwritten: set[Path] = set()
        # Worktrees git had registered when this pool first added one (listed once: later names
        # of this pool are new, see _free_path).
        self._registered: dict[Path, WorktreeInfo] | None = None
        self._next = 1
        # A name of its own for every pool (every run): a process of a crashed run that may still
        # be alive never writes into a worktree of the run that resumes.
        self._run = secrets.token_hex(3)
        self._closed = False

    def __enter__(self) -> WorktreePool:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def worktrees(self) -> list[Path]:
        """Every worktree the pool holds (idle, in use, kept), sorted."""
        with self._state:
            return sorted([*self._idle, *self._busy, *self._kept])

    def acquire(
        self,
        branch: str,
        start_commit: str,
        expected: str | _Unset | None = _UNSET,
        *,
        keep: KeptOutputs | None = None,
    ) -> Path:
        """Return a clean worktree with *branch* checked out, created or reset at *start_commit*.

        The branch moves only if it still holds *expected* (None: if it does not exist; by
        default whatever it holds now), checked by git as it moves. An idle worktree is
        reused when it is healthy; otherwise a new one is added under the pool's folder.
        A full sha is not looked up first: git refuses it where it moves the branch.
        *keep* names, for a reused worktree, the ignored paths its clean spares (a setup's
        outputs, checked by the caller: ``rho_mission.setup``) and whether it must be cleaned
        whole although it came back spotless.

        Raises:
            InvalidMissionError: the pool's folder lies in the work tree but is not ignored.
            UnsafePathError: a symbolic link stands where the pool's folders go.
            UnknownRefError: *start_commit* names no commit.
            RefMovedError: *branch* does not hold *expected*.
            GitOperationError: git refused.
            RuntimeError: the pool is closed.
        """
        start = self.repo.commit_id(start_commit)
        if isinstance(expected, _Unset):
            expected = self.repo.branch_commit(branch)
        path, spotless, head = self._take_idle()
        if path is None and self._shared and self._reclaimable:
            path = self._reclaim()  # one a mission before this gave back: cleaned below
            self._reclaimable = path is not None  # none left: later ones are made new
        if path is not None:
            failed = False
            with self._state:  # its shared index part, if split, is not read again below
                known = self._index_saved.get(path)
            try:
                usable, restored = self._as_new(path) if _reusable(path) else (False, False)
                if usable:
                    spare, doubt = keep(path) if keep is not None else ((), False)
                    dirty = not spotless or restored or doubt
                    # Nothing to write when it already stands at the start: no git process.
                    written = dirty or head == start
                    self._switch(
                        path,
                        branch,
                        start,
                        expected,
                        fill=dirty,
                        clean=dirty,
                        written=written,
                        spare=spare,
                    )
                    self.note_index(path, start, known)
                    self._note_unwritten(path, written and not dirty)
                    return path
            except RefMovedError:
                self._give_back(path)  # healthy: the branch is what was refused
                raise
            except GitOperationError:
                failed = True
            self._discard(path)  # broken by its last worker: replace it with a fresh one
            if failed:  # the branch may have moved before git failed
                expected = self._branch_after_failure(branch, start, expected)
        path = self._create(start)
        try:
            self._switch(path, branch, start, expected, fill=True, clean=False, written=True)
        except BaseException:
            self._discard(path)
            raise
        self.note_index(path, start)
        self._note_unwritten(path, False)
        return path

    def index_unwritten(self, path: Path) -> bool:
        """Whether *path*'s last move by ``acquire`` wrote no index (its HEAD was at the start).

        Then nothing of rho's rewrites that index before the commit step's status, whose
        refresh is worth writing back: entries git deems "racily clean" (files written in the
        same clock tick as the index, as every file of a new worktree is) are read whole at
        every status until an index is written after them; with a move that writes none, that
        would be at every later feature in the worktree (a no-op chain read all 200 files of
        its repository at each feature).
        """
        with self._state:
            return path in self._unwritten

    def _note_unwritten(self, path: Path, unwritten: bool) -> None:
        with self._state:
            (self._unwritten.add if unwritten else self._unwritten.discard)(path)

    def _as_new(self, path: Path) -> tuple[bool, bool]:
        # A reused worktree handed on as new (see _handover): its git dir trimmed to what
        # "worktree add" makes, its index rho's own again. Whether it can be used (not when it
        # came from another mission with a bit a task set in its index, nor when any of this
        # fails: then it is replaced), and whether its index was put back (then every file is
        # checked out again).
        try:
            with self._state:
                saved = self._index_saved.pop(path, None)
            trim_git_dir(path, saved)
            if saved is not None:
                return True, restore_index(path, saved)
            return index_is_plain(self.repo, path, None), False
        except GitConfigChangedError:
            raise  # the repository's, not this worktree's: no git runs at all
        except (OSError, MissionError):
            return False, False

    def own_index(self, path: Path) -> bool:
        """Put back the index rho last left in *path* if something else wrote it since (a
        task's git); whether it did. Before rho stages a task's work: ``git add`` trusts the
        index's stat data, which a task can make lie (see ``_handover``).

        Raises:
            UnsafePathError, WorktreeTamperedError: the worktree is not the one rho made.
            GitOperationError: git could not move the index to the task's HEAD.
            OSError: the index could not be written.
        """
        with self._state:
            saved = self._index_saved.get(path)
        if saved is None or not restore_index(path, saved):
            return False
        carry_index(self.repo, path, saved)
        return True

    def note_index(self, path: Path, commit: str, known: SavedIndex | None = None) -> None:
        """Keep *path*'s index as rho's own, the index of *commit*: right after rho's checkout
        of it or its commit there, from an index that told the truth. *known*: the index saved
        there before, when the pool no longer holds it (a split index's shared part it names
        is taken from it, not read again)."""
        with self._state:
            known = self._index_saved.get(path, known)
        saved = save_index(path, commit, known)
        with self._state:
            if saved is None:
                self._index_saved.pop(path, None)
            else:
                self._index_saved[path] = saved

    def acquire_detached(self, start_commit: str) -> Path:
        """A new worktree with *start_commit* checked out on a detached HEAD: no branch moves.

        For a stage whose work is never committed (the planning stage). ``release`` gives it
        back like any other.

        Raises:
            UnknownRefError: *start_commit* names no commit.
            InvalidMissionError, UnsafePathError, GitOperationError: as ``acquire``.
        """
        start = self.repo.commit_id(start_commit)
        path = self._create(start)
        try:
            args = ("checkout", "--quiet", "--detach", "--force", start)
            self.repo.run(*PARALLEL_CHECKOUT, *args, cwd=path)
        except BaseException:
            self._discard(path)
            raise
        self.note_index(path, start)  # handed on as new later, like any other
        return path

    def release(self, path: Path, *, spotless: bool = False, head: str | None = None) -> None:
        """Give back a worktree that ``acquire`` returned; its branch stays as the worker left it.

        The worktree stays on its branch, without a git process: its next ``acquire`` puts another
        branch there, a retry of its feature in another worktree puts HEAD on the branch there (HEAD
        written as ``symbolic-ref`` writes it, which no other worktree's record stops), and
        ``close`` removes it (while the mission runs, git refuses to check that branch out in
        another work tree unless told so). A kept worktree (``keep=True``) is detached instead: it
        outlives the mission, and its branch must be free to check out, delete or move. Its files
        are cleaned when it is next acquired (a kept worktree is never acquired again: its files
        stay for inspection). *spotless*: the caller saw, after its worker ended, nothing in the
        worktree beyond HEAD's files (``git status`` listed no change, no untracked and no ignored
        file): the next acquire skips ``git clean`` and writes only the files that differ from its
        start. What that leaves: an empty directory (git lists none), and what a process that
        escaped its task's group writes later (it could write at any time anyway). A worktree whose
        git link the worker broke is removed.

        Raises:
            ValueError: *path* was not acquired from this pool, or was released already.
        """
        with self._state:
            if path not in self._busy:
                raise ValueError(f"worktree {path} is not in use from this pool")
            self._busy.remove(path)
        if not _reusable(path):
            self._discard(path)
            return
        if self._keep:
            try:
                with self.repo.locked():
                    # Detach HEAD where it stands; unlike "checkout --detach", no index refresh.
                    self.repo.run("update-ref", "--no-deref", "HEAD", "HEAD", cwd=path)
            except GitOperationError:
                self._discard(path)
                return
        with self._state:
            (self._kept if self._keep else self._idle).append(path)
            if spotless and not self._keep:
                self._spotless[path] = head

    def close(self) -> None:
        """Remove every worktree of the pool (in use or idle) and its folder; idempotent.

        Kept worktrees (``keep=True``) stay, unlocked, and so does the folder holding them.

        Raises:
            GitOperationError: git could not prune its worktree records.
            OSError: a worktree folder could not be deleted.
        """
        with self._state:
            if self._closed:
                return
            self._closed = True
            doomed, kept = [*self._idle, *self._busy], list(self._kept)
            idle = list(self._idle)
            self._idle.clear()
            self._busy.clear()
        try:
            with self.repo.locked():
                given = self._give_to_pool(idle) if self._shared else []
                doomed = [path for path in doomed if path not in given]
                removed = [_remove_worktree(self.repo, path) for path in doomed]
                for path in kept:
                    self.repo.run_status("worktree", "unlock", str(path))
                if not all(removed):  # deleted by hand: git's record is still there
                    self.repo.run("worktree", "prune")
        finally:
            _forget(*doomed, *kept)
            self._drop_claims(*self._claims)
            self.repo.close()  # its branch moves' git process: no further move comes
        if not kept:
            with contextlib.suppress(OSError):  # not empty: someone else's files, left alone
                self.folder.rmdir()

    # -- helpers -----------------------------------------------------------------------------

    def _take_idle(self) -> tuple[Path | None, bool, str | None]:
        # The worktree, whether it came back spotless, and its HEAD's commit if known (the
        # knowledge goes with it).
        with self._state:
            if self._closed:
                raise RuntimeError("worktree pool is closed")
            if not self._idle:
                return None, False, None
            path = self._idle.pop()
            self._busy.add(path)
            spotless = path in self._spotless
            return path, spotless, self._spotless.pop(path, None)

    def _reclaim(self) -> Path | None:
        """A worktree of the shared folder that a mission gave back, claimed and checked; None
        when there is none free."""
        with self.repo.locked():
            for path, reason in _pooled(self.repo, self.folder):
                if reason != IDLE_REASON:
                    continue
                with self._state:
                    if self._closed:
                        raise RuntimeError("worktree pool is closed")
                    if path in self._busy or path in self._idle:
                        continue
                if not self._claim(path):
                    continue  # another mission's now
                if self._adopt(path):
                    return path
        return None

    def _adopt(self, path: Path) -> bool:
        # Checked as strictly as a new worktree, then marked as this process's.
        with self._state:
            self._busy.add(path)
        with _LIVE_GUARD:
            _LIVE.add(path)
        try:
            self.repo.pin_worktree(path)
        except WorktreeTamperedError:  # no git runs on it: its .git may name any repository
            try:
                _drop_unverified(self.repo, path)
            finally:
                self._let_go(path)
            return False
        if not _reusable(path):
            self._discard(path)
            return False
        if _someone_works_in(path):  # a process left behind: its worktree is not for reuse
            self._let_go(path)
            return False
        self._relock(path, self._reason())
        return True

    def _let_go(self, path: Path) -> None:
        # No longer this pool's: neither in use nor pinned nor claimed (the worktree stays).
        with self._state:
            self._busy.discard(path)
        _forget(path)
        self._drop_claims(path)

    def _give_to_pool(self, idle: list[Path]) -> list[Path]:
        """Detach, mark idle and let go of up to the pool's room of *idle*; the ones given."""
        others = [path for path, _ in _pooled(self.repo, self.folder) if path not in self._claims]
        given: list[Path] = []
        for path in idle[: max(0, self._limit - len(others))]:
            try:
                if not _reusable(path) or not self._as_new(path)[0]:
                    continue
                # Detached, so that its last branch can be deleted or checked out elsewhere.
                self.repo.run("update-ref", "--no-deref", "HEAD", "HEAD", cwd=path)
                self._relock(path, IDLE_REASON)
            except (GitOperationError, WorktreeTamperedError):
                continue
            given.append(path)
        _forget(*given)
        self._drop_claims(*given)
        return given

    def _reason(self) -> str:
        return f"rho-mission {self.mission_id} pid {os.getpid()}"

    def _relock(self, path: Path, reason: str) -> None:
        # What "git worktree unlock" then "lock --reason" leave, the file <git dir>/locked: two
        # git processes fewer per worktree at each claim and give-back.
        _write_git_file(path, "locked", reason)

    def _claim(self, path: Path) -> bool:
        """Take *path*'s claim lock, or False when another process holds it."""
        fd = _try_claim(self.repo, path)
        if fd is None:
            return False
        with self._state:
            self._claims[path] = fd
        return True

    def _drop_claims(self, *paths: Path) -> None:
        with self._state:
            fds = [self._claims.pop(path) for path in paths if path in self._claims]
        for fd in fds:
            os.close(fd)  # lets go of the flock

    def _create(self, start: str) -> Path:
        with self.repo.locked():
            if not self._folder_checked:  # under the lock: once, whichever thread comes first
                _checked_folder(self.repo, self.folder)
                self._folder_checked = True
            path, stale = self._free_path()
            if self._shared and not self._claim(path):  # a fresh name: nobody can hold it
                raise InvalidMissionError(f"worktree {path} is claimed by another process")
            in_the_way = stale is not None or path.exists()
            if in_the_way and not _remove_worktree(self.repo, path):
                self.repo.run("worktree", "prune")
            private_folder(self.folder, folder_anchor(self.folder, self.repo.root))
            add = (
                "worktree",
                "add",
                "--detach",
                "--no-checkout",
                "--lock",
                "--reason",
                self._reason(),
            )
            with self._state:
                if self._closed:  # closed by another thread while this one waited for the lock
                    raise RuntimeError("worktree pool is closed")
                self._busy.add(path)
            with _LIVE_GUARD:
                _LIVE.add(path)
            # The busy entry comes first so that a failed add is discarded like any other.
            try:
                self.repo.run(*add, str(path), start)
                path.chmod(0o700)  # git creates it with the default mode; it holds task files
                self.repo.pin_worktree(path)  # before any task runs there
            except BaseException:
                self._discard(path)
                raise
            return path

    def _free_path(self) -> tuple[Path, WorktreeInfo | None]:
        # The first unused name; a live worktree of another process at that path is skipped.
        # git's list is read once per pool: every name holds this pool's own random part and a
        # number it never gives twice, so only a worktree that was there before can be in the way.
        if self._registered is None:
            self._registered = {tree.path.resolve(): tree for tree in self.repo.worktrees()}
        registered = self._registered
        with self._state:
            while True:
                name = "pool" if self._shared else self.mission_id
                path = self.folder / f"{name}-{self._run}-{self._next}"
                self._next += 1
                entry = registered.get(path)
                if entry is None or not _in_use(entry):
                    return path, entry

    def _switch(
        self,
        path: Path,
        branch: str,
        start: str,
        expected: str | None,
        *,
        fill: bool,
        clean: bool,
        written: bool,
        spare: tuple[str, ...] = (),
    ) -> None:
        # The end state of "checkout --force -B <branch> <start>" + "clean -ffdx" (for a spotless
        # worktree: as far as its index tells, see below), but the branch moves by
        # compare-and-swap (made where it must not exist yet; moved, or found where it must
        # already be, when it does), through the repository's one "update-ref --stdin" (no
        # process started: GitRepo.start_branch), then HEAD is put on it. A worktree not known
        # to be spotless is first checked out detached (every file that is not what the index
        # says rewritten, an lstat of each) and cleaned, outside the lock. A spotless one is
        # what its index says (the status after its task found nothing else; the hand-over has
        # put back a task's index): "read-tree -m -u" writes the entries that differ from the
        # start and looks at no other file, where a checkout looks at every one; none at all
        # when the worktree is at the start already (docs/decisions/0603-worktree-handover.md).
        if fill:
            args = ("checkout", "--quiet", "--detach", "--force", start)
            self.repo.run(*PARALLEL_CHECKOUT, *args, cwd=path)
        if clean:
            kept = [arg for name in spare for arg in ("-e", _ignore_pattern(name))]
            self.repo.run("clean", "-ffdxq", *kept, cwd=path)
        # The branch first, so that HEAD never goes on a branch someone else moved; the files
        # that differ are written after, outside the lock, so that other workers do not wait.
        self.repo.start_branch(branch, start, expected)
        if not written:
            self.repo.run(*PARALLEL_CHECKOUT, "read-tree", "-m", "-u", start, cwd=path)
        # HEAD written as "symbolic-ref HEAD" writes it, with no process. No check of other
        # worktrees, as "checkout --ignore-other-worktrees": a stale record of a crashed run's
        # worktree that had the branch checked out must not stop a retry.
        _write_git_file(path, "HEAD", f"ref: refs/heads/{branch}\n")

    def _branch_after_failure(self, branch: str, start: str, expected: str | None) -> str | None:
        # What a retry's move must expect after git failed mid-switch: the start commit if the
        # branch got there (moved by the failed switch), what was expected if it did not.
        found = self.repo.branch_commit(branch)
        if found in (start, expected):
            return found
        raise ref_moved(branch, expected, found)

    def _give_back(self, path: Path) -> None:
        with self._state:
            self._busy.discard(path)
            self._idle.append(path)

    def _discard(self, path: Path) -> None:
        with self._state:
            self._busy.discard(path)
            self._spotless.pop(path, None)
            self._index_saved.pop(path, None)
            with contextlib.suppress(ValueError):
                self._idle.remove(path)
        try:
            with self.repo.locked():
                if not _remove_worktree(self.repo, path):
                    self.repo.run("worktree", "prune")
        finally:
            _forget(path)
            if path in self._claims:
                _drop_lock_file(self.repo, path)
            self._drop_claims(path)


def prune_pool(
    repo: GitRepo, folder: str | os.PathLike[str], *, idle_too: bool = False
) -> list[Path]:
    """Remove the worktrees of the shared pool at *folder* that nobody holds; their paths.

    Those whose holder died without giving them back go (what it started may still write
    there), and so do folders git does not know. Idle ones given back stay unless *idle_too*
    (``rho worktrees prune``). No git runs in any of them.

    Raises:
        InvalidMissionError: *folder* is the work tree, holds it, or lies in it unignored.
        GitOperationError: git could not list, unlock or prune its worktrees.
    """
    root = _checked_folder(repo, folder)
    with repo.locked():
        trees = repo.worktrees()
        pooled = _pooled(repo, root, trees)
        candidates = [path for path, reason in pooled if idle_too or reason != IDLE_REASON]
        removed = drop_pooled(repo, candidates)  # those a live mission holds stay
        registered = {Path(os.path.abspath(t.path)) for t in trees}.difference(removed)
        removed += _remove_unregistered(root, registered)
        if root.is_dir() and not any(root.iterdir()):
            root.rmdir()
    return sorted(removed)


def held_by(repo: GitRepo, folder: Path, mission_id: str) -> list[Path]:
    """The worktrees of the shared pool at *folder* locked for a run of *mission_id*."""
    return sorted(
        path
        for path, reason in _pooled(repo, folder)
        if _LOCK_REASON.match(reason or "") and (reason or "").split()[1] == mission_id
    )


def pooled_worktrees(repo: GitRepo, folder: Path) -> list[tuple[Path, str]]:
    """The worktrees of the shared pool at *folder*, sorted, each with who holds it: ``idle``
    (given back), ``mission <id> (pid <n>)`` for a live mission's, or ``left by mission <id>``
    for one whose holder died (``prune`` removes it)."""
    found = []
    for path, reason in _pooled(repo, folder):
        match = _LOCK_REASON.match(reason or "")
        if reason == IDLE_REASON:
            holder = "idle"
        elif match is None:
            holder = "unknown (not locked by rho)"
        else:
            pid, mission = int(match[1]), (reason or "").split()[1]
            alive = pid == os.getpid() or pid_alive(pid)
            holder = f"mission {mission} (pid {pid})" if alive else f"left by mission {mission}"
        found.append((path, holder))
    return sorted(found)


def _pooled(
    repo: GitRepo, folder: Path, trees: list[WorktreeInfo] | None = None
) -> list[tuple[Path, str | None]]:
    """The registered worktrees right under the pool's *folder* (of *trees*, default git's
    list), each with its lock reason."""
    listed = repo.worktrees() if trees is None else trees
    found = [(Path(os.path.abspath(tree.path)), tree.locked) for tree in listed]
    return [(path, reason) for path, reason in found if path.parent == folder]


def drop_pooled(repo: GitRepo, paths: list[Path]) -> list[Path]:
    """Remove pooled worktrees nobody holds (as ``prune_pool`` does); the ones removed."""
    removed: list[Path] = []
    with repo.locked():
        for path in paths:
            fd = _try_claim(repo, path)
            if fd is None:
                continue  # in use by a live mission
            try:
                _drop_unverified(repo, path)
            finally:
                os.close(fd)
            _drop_lock_file(repo, path)
            removed.append(path)
    return removed


def _claim_path(repo: GitRepo, path: Path) -> Path:
    return repo.common_dir / f"rho-pool-{path.name}.lock"


def _try_claim(repo: GitRepo, path: Path) -> int | None:
    """The descriptor of *path*'s claim lock, now held; None when another process holds it."""
    fd = open_unfollowed(_claim_path(repo, path), os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def _drop_lock_file(repo: GitRepo, path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(_claim_path(repo, path))


def _drop_unverified(repo: GitRepo, path: Path) -> None:
    # Deleted as a tampered worktree is (no git in it), then git's record unlocked and pruned.
    _remove_tampered(path, None)
    repo.run_status("worktree", "unlock", str(path))
    repo.run("worktree", "prune")


def prune_stale(repo: GitRepo, folder: str | os.PathLike[str]) -> list[Path]:
    """Remove the worktrees under *folder* that no live process uses; return their paths.

    For ``rho mission resume`` after a crash: registered worktrees under *folder* whose owner
    is gone (or that no rho process registered), and folders under it that git no longer
    knows, are deleted; git's records are pruned; *folder* goes too once empty. Worktrees of
    open pools in this process and of live ``rho`` processes stay.

    Raises:
        InvalidMissionError: *folder* is the work tree, holds it, or lies in it unignored.
        GitOperationError: git could not list or prune its worktrees.
        OSError: a folder could not be deleted.
    """
    root = _checked_folder(repo, folder)
    removed: list[Path] = []
    with repo.locked():
        trees = repo.worktrees()
        pruned = True
        for tree in trees:
            path = tree.path.resolve()
            if path.is_relative_to(root) and path != root and not _in_use(tree):
                pruned = _remove_worktree(repo, path) and pruned
                removed.append(path)
        if not pruned:  # deleted by hand: git's record is still there
            repo.run("worktree", "prune")
        # What git still knows is what it listed, less what was just removed: the rest is in
        # use (locked), and nobody else adds a worktree while the lock is held.
        registered = {tree.path.resolve() for tree in trees}.difference(removed)
        removed += _remove_unregistered(root, registered)
        if root.is_dir() and not any(root.iterdir()):
            root.rmdir()
    return sorted(removed)


def _checked_folder(repo: GitRepo, folder: str | os.PathLike[str], *, ignored: bool = True) -> Path:
    # Whatever lies under the folder may be deleted, and worktrees in the user's work tree must
    # not show up in their "git status": refuse the work tree itself, or an unignored part, and
    # a symbolic link on the way (its target would be what gets deleted).
    path = Path(os.path.abspath(folder))
    if repo.root.is_relative_to(path):
        raise InvalidMissionError(f"worktree folder {path} holds the repository itself")
    check_own_folder(path, folder_anchor(path, repo.root))
    inside = ignored and path.is_relative_to(repo.root)
    if inside and repo.run_status("check-ignore", "-q", f"{path}/")[0] != 0:
        raise InvalidMissionError(
            f"worktree folder {path} is inside the work tree but not ignored by git"
        )
    return path


def _remove_unregistered(root: Path, registered: set[Path]) -> list[Path]:
    if not root.is_dir():
        return []
    with _LIVE_GUARD:
        keep = registered | _LIVE
    leftovers = [child for child in root.iterdir() if child.resolve() not in keep]
    for child in leftovers:
        remove_tree(child)
    return [child.resolve() for child in leftovers]


def _remove_worktree(repo: GitRepo, path: Path) -> bool:
    # Double --force: the worktree is locked (by us) and may hold changes or untracked files.
    # git also refuses a folder it does not know: that is a leftover, deleted by hand. Returns
    # whether git removed it, record and all (if not, a "worktree prune" is due).
    check_own_folder(
        path.parent, folder_anchor(path.parent, repo.root)
    )  # what holds it is rho's folder
    pin = pinned(path)
    if not _intact(path, pin):
        _remove_tampered(path, pin)
        return False
    status, _, _ = repo.run_status("worktree", "remove", "--force", "--force", str(path))
    if status != 0 and path.exists():
        repo.run_status("worktree", "unlock", str(path))
        remove_tree(path)
    return status == 0


def _intact(path: Path, pin: PinnedWorktree | None) -> bool:
    # The folder rho made (or, unrecorded, a real folder): git may be run on it.
    if pin is None:
        return not os.path.islink(path)
    try:
        pin.check()
    except WorktreeTamperedError:
        return False
    return True


def _remove_tampered(path: Path, pin: PinnedWorktree | None) -> None:
    # What a task left in place of its worktree: a link (removed, never followed) or another
    # folder (deleted: it stands in rho's own folder). No git runs on it. git's record loses
    # its lock, through the git dir only when that is still the one recorded, so that the
    # "worktree prune" due next drops it.
    if pin is not None and pin.git_dir_unchanged():
        with contextlib.suppress(FileNotFoundError):
            os.unlink(pin.git_dir / "locked")
    remove_tree(path)


def _in_use(tree: WorktreeInfo) -> bool:
    with _LIVE_GUARD:
        if tree.path.resolve() in _LIVE:
            return True
    if tree.locked is None:
        return False
    match = _LOCK_REASON.match(tree.locked)
    if match is None:
        return True  # locked by the user or another tool, for its own reasons
    pid = int(match[1])
    # Our own pid with no open pool here means a previous process that had the same pid.
    return pid != os.getpid() and pid_alive(pid)


def _someone_works_in(path: Path) -> bool:
    """Whether a live process holds *path* open: its working folder, an open file or a mapped
    file there (``/proc/<pid>/cwd``, ``fd/``, ``map_files/``).

    A pooled worktree is given back only after its mission ended its processes, and a task
    could forge the ``rho-pool idle`` lock reason; so one that a process still holds (a
    daemon that did ``cd /`` but kept a file of it open) is left alone.
    """
    inside = str(path)
    try:
        entries = [entry.name for entry in os.scandir("/proc") if entry.name.isdigit()]
    except OSError:
        return False  # no /proc: the claim lock and the lock reason are what there is
    return any(_holds(pid, inside) for pid in entries)


def _holds(pid: str, inside: str) -> bool:
    # Another user's (or a vanished) process shows nothing: it is not rho's to find.
    for link in (f"/proc/{pid}/cwd", *_links(f"/proc/{pid}/fd"), *_links(f"/proc/{pid}/map_files")):
        try:
            target = os.readlink(link)
        except OSError:
            continue
        if target == inside or target.startswith(inside + os.sep):
            return True
    return False


def _links(folder: str) -> list[str]:
    try:
        return [f"{folder}/{name}" for name in os.listdir(folder)]
    except OSError:
        return []


def _reusable(path: Path) -> bool:
    # The folder rho made, with its git dir, and no unfinished git operation in it.
    pin = pinned(path)
    if pin is None or not _intact(path, pin):
        return False
    return not any((pin.git_dir / name).exists() for name in _UNFINISHED)


def _write_git_file(path: Path, name: str, text: str) -> None:
    """Write *text* as the file *name* of the git dir of rho's worktree at *path*, by rename in
    the pinned git dir (checked first): a link planted at *name* is replaced, never followed.

    Raises:
        WorktreeTamperedError: *path* is no worktree rho pinned, or no longer the one it pinned.
    """
    pin = pinned(path)
    if pin is None:
        raise WorktreeTamperedError(path, "is no worktree rho made")
    pin.check()
    temp = pin.git_dir / f".{name}.{os.getpid()}.tmp"
    fd = open_unfollowed(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)
    os.replace(temp, pin.git_dir / name)


def _forget(*paths: Path) -> None:
    with _LIVE_GUARD:
        _LIVE.difference_update(paths)
    unpin(*paths)
