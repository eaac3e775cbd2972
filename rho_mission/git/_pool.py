"""A pool of linked worktrees for one mission: a feature borrows one and gives it back.

Reusing an idle worktree is cheaper than a fresh ``git worktree add``, which checks out every
file and registers a new worktree (``bench/bench_worktrees.py``): check the start commit out over
it, clean it, and point its branch there. So a feature borrows a worktree with ``acquire`` and
gives it back with ``release``; ``close`` removes them all at the end of the mission, or, for a
shared pool, gives the healthy idle ones back to the repository's pool (``_shared_pool``).

A feature whose worktree comes back spotless (``release(..., spotless=True)``: its last ``git
status`` listed nothing, not even an ignored file) is not cleaned again at its next ``acquire``:
a no-op feature costs one git process (its commit step's ``status``; its branch is made by
the repository's one ``update-ref --stdin``, ``GitRepo.start_branch``): a released worktree
stays on its branch until the next ``acquire`` puts another one there.

Each worktree is registered locked with its mission's reason (``_leftovers``), so that a crash's
leftovers can be told from worktrees in use. A reused worktree is handed on as new
(``_handover``); one that fails its checks is replaced, never repaired.

Decision: docs/decisions/0601-worktree-pool.md, docs/decisions/0603-worktree-handover.md
"""

from __future__ import annotations

import contextlib
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
from ..containment import pinned
from ..containment._folders import folder_anchor, private_folder, replace_unfollowed
from ._handover import (
    SavedIndex,
    carry_index,
    index_is_plain,
    restore_index,
    save_index,
    trim_git_dir,
)
from ._leftovers import (
    checked_folder,
    forget,
    in_use,
    intact,
    mark_live,
    mission_lock_reason,
    remove_worktree,
)
from ._repo import PARALLEL_CHECKOUT, GitRepo, WorktreeInfo, ref_moved
from ._shared_pool import (
    DEFAULT_POOL_LIMIT,
    IDLE_REASON,
    Claims,
    drop_lock_file,
    drop_unverified,
    pooled,
    someone_works_in,
)

__all__ = ["KeptOutputs", "WorktreePool"]


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
        self.folder = checked_folder(repo, folder, ignored=False)
        self._folder_checked = False
        self.mission_id = mission_id
        self._keep = keep
        self._shared = shared and not keep  # a kept worktree is the user's to inspect
        self._limit = limit
        # The claim locks this pool holds on shared worktrees.
        self._claims = Claims(repo)
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
                removed = [remove_worktree(self.repo, path) for path in doomed]
                for path in kept:
                    self.repo.run_status("worktree", "unlock", str(path))
                if not all(removed):  # deleted by hand: git's record is still there
                    self.repo.run("worktree", "prune")
        finally:
            forget(*doomed, *kept)
            self._claims.drop(*self._claims.held())
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
            for path, reason in pooled(self.repo, self.folder):
                if reason != IDLE_REASON:
                    continue
                with self._state:
                    if self._closed:
                        raise RuntimeError("worktree pool is closed")
                    if path in self._busy or path in self._idle:
                        continue
                if not self._claims.take(path):
                    continue  # another mission's now
                if self._adopt(path):
                    return path
        return None

    def _adopt(self, path: Path) -> bool:
        # Checked as strictly as a new worktree, then marked as this process's.
        with self._state:
            self._busy.add(path)
        mark_live(path)
        try:
            self.repo.pin_worktree(path)
        except WorktreeTamperedError:  # no git runs on it: its .git may name any repository
            try:
                drop_unverified(self.repo, path)
            finally:
                self._let_go(path)
            return False
        if not _reusable(path):
            self._discard(path)
            return False
        if someone_works_in(path):  # a process left behind: its worktree is not for reuse
            self._let_go(path)
            return False
        self._relock(path, mission_lock_reason(self.mission_id))
        return True

    def _let_go(self, path: Path) -> None:
        # No longer this pool's: neither in use nor pinned nor claimed (the worktree stays).
        with self._state:
            self._busy.discard(path)
        forget(path)
        self._claims.drop(path)

    def _give_to_pool(self, idle: list[Path]) -> list[Path]:
        """Detach, mark idle and let go of up to the pool's room of *idle*; the ones given."""
        others = [path for path, _ in pooled(self.repo, self.folder) if path not in self._claims]
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
        forget(*given)
        self._claims.drop(*given)
        return given

    def _relock(self, path: Path, reason: str) -> None:
        # What "git worktree unlock" then "lock --reason" leave, the file <git dir>/locked: two
        # git processes fewer per worktree at each claim and give-back.
        _write_git_file(path, "locked", reason)

    def _create(self, start: str) -> Path:
        with self.repo.locked():
            if not self._folder_checked:  # under the lock: once, whichever thread comes first
                checked_folder(self.repo, self.folder)
                self._folder_checked = True
            path, stale = self._free_path()
            if self._shared and not self._claims.take(path):  # a fresh name: nobody can hold it
                raise InvalidMissionError(f"worktree {path} is claimed by another process")
            in_the_way = stale is not None or path.exists()
            if in_the_way and not remove_worktree(self.repo, path):
                self.repo.run("worktree", "prune")
            private_folder(self.folder, folder_anchor(self.folder, self.repo.root))
            add = (
                "worktree",
                "add",
                "--detach",
                "--no-checkout",
                "--lock",
                "--reason",
                mission_lock_reason(self.mission_id),
            )
            with self._state:
                if self._closed:  # closed by another thread while this one waited for the lock
                    raise RuntimeError("worktree pool is closed")
                self._busy.add(path)
            mark_live(path)
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
                if entry is None or not in_use(entry):
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
                if not remove_worktree(self.repo, path):
                    self.repo.run("worktree", "prune")
        finally:
            forget(path)
            if path in self._claims:
                drop_lock_file(self.repo, path)
            self._claims.drop(path)


def _reusable(path: Path) -> bool:
    # The folder rho made, with its git dir, and no unfinished git operation in it.
    pin = pinned(path)
    if pin is None or not intact(path, pin):
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
    replace_unfollowed(pin.git_dir, name, text.encode())
