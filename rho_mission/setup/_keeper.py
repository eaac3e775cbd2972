"""``WorktreeSetup``: whether a pooled worktree's setup still stands, and what it keeps.

Per attempt, the executor asks, in this order:

1. ``key_for(start, identity)``: the setup key at the feature's start commit (one ``git
   ls-tree`` per start commit and setup, then kept);
2. ``check(key)``, given to ``WorktreePool.acquire``: for a reused worktree, the outputs its
   clean spares: those of its last setup when that setup had this key, may serve this mission
   and its manifest is unchanged; otherwise none, and the worktree is cleaned whole (outputs
   and all);
3. ``write_copies``, then ``kept(worktree, key)``: the state that lets the setup be skipped,
   or None: the setup runs, and ``record`` keeps what it left (or ``forget`` after a failure);
4. ``spared(worktree)``: the paths rho's commit leaves out (kept outputs and copies).

A setup serves later missions only when it ran on the mission's start commit and that commit
is the user's own (``_trust``); one made on a commit holding tasks' work (a later wave's start,
a check's merged head, any commit of a mission started from rho's branch) serves its own
mission alone: another mission that gets the worktree cleans its outputs and sets it up again.

Decision: docs/decisions/0604-setup-and-copy.md
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

from taskstore import ensure_private_dir, write_atomic

from .._errors import FeatureFailedError
from ..git._commit import listed_entries, spared_by
from ..records._clock import now_rfc3339_millis
from ._inputs import CopiedFile
from ._key import setup_key
from ._manifest import take_manifest
from ._state import SetupState, drop_state, folder_identity, read_state, write_state
from ._trust import users_own

if TYPE_CHECKING:
    from ..git._pool import KeptOutputs
    from ..git._repo import GitRepo

__all__ = ["SetupLeftFilesError", "WorktreeSetup"]

_NAMED = 3  # paths named in the error about files the setup left


class SetupLeftFilesError(FeatureFailedError):
    """The setup left files git does not ignore: they would be committed as the task's work."""


class WorktreeSetup:
    """The setups of one mission's pooled worktrees (thread-safe).

    *copies* are written into every worktree before its setup (``--copy``); *key_paths* go
    into every key (``--setup-key``). *mission* is the mission's id, *base* its start commit.
    """

    def __init__(
        self,
        repo: GitRepo,
        key_paths: tuple[str, ...],
        copies: tuple[CopiedFile, ...],
        *,
        mission: str,
        base: str,
    ) -> None:
        self.repo = repo
        self.key_paths = key_paths
        self.copies = copies
        self.mission = mission
        self.base = base
        self._base_is_users: bool | None = None  # asked of git once, at the first setup on it
        self._copied = tuple(copy.path for copy in copies)
        self._guard = threading.Lock()
        self._keys: dict[tuple[str, str], str] = {}
        # The state of each worktree seen in this mission (None: it has none): read from disk
        # once, for a worktree an earlier mission gave back; kept in memory from then on.
        self._states: dict[Path, SetupState | None] = {}

    def key_for(self, start: str, identity: str) -> str:
        """The setup key of *identity* at commit *start*.

        Raises:
            GitOperationError: git could not read the commit's tree.
        """
        with self._guard:
            known = self._keys.get((start, identity))
        if known is not None:
            return known
        key = setup_key(self.repo, start, identity, self.key_paths)
        with self._guard:
            self._keys[(start, identity)] = key
        return key

    def check(self, key: str) -> KeptOutputs:
        """The ``keep`` of ``WorktreePool.acquire`` for a feature whose setup key is *key*."""

        def spare(worktree: Path) -> tuple[tuple[str, ...], bool]:
            state = self._state_of(worktree)
            if state is None:
                return (), False
            if self._serves(state, key) and _intact(worktree, state):
                return state.outputs, False
            # A new key, another mission's tasks' setup, or outputs a task changed: set up again.
            self.forget(worktree)
            return (), True

        return spare

    def kept(self, worktree: Path, key: str) -> SetupState | None:
        """The state that spares *worktree* its setup for *key* (checked by ``check``), or None."""
        state = self._state_of(worktree)
        return state if state is not None and self._serves(state, key) else None

    def spared(self, worktree: Path) -> tuple[str, ...]:
        """What rho's commit in *worktree* never stages: its kept outputs and the copies."""
        with self._guard:
            state = self._states.get(worktree)
        outputs = state.outputs if state is not None else ()
        return tuple(sorted({*outputs, *self._copied}))

    def write_copies(self, worktree: Path) -> None:
        """Write the ``--copy`` files into *worktree*, each with its mode, replacing what stands
        there (a link a task planted is replaced, never followed: every folder on the way is
        reached without following one).

        Raises:
            OSError: a file could not be written (``ELOOP``: a link on the way).
        """
        for copy in self.copies:
            target = worktree / copy.path
            ensure_private_dir(target.parent)  # a missing folder on the way is made 0700
            write_atomic(target, copy.data, copy.mode)

    def record(self, worktree: Path, key: str, made_on: str) -> SetupState:
        """Keep what the setup just left in *worktree*, at commit *made_on*: the paths git
        ignores are its outputs. Unless *made_on* is the mission's start commit and the user's
        own, they are kept for this mission alone.

        Raises:
            SetupLeftFilesError: it changed a tracked file or left one git does not ignore.
            GitOperationError: git could not list the worktree, or walk the history.
            OSError: the state could not be written.
        """
        entries = listed_entries(self.repo, worktree)
        mine = [(kind, path) for kind, path in entries if not spared_by(path, self._copied)]
        left = sorted(path for kind, path in mine if kind != "!")
        if left:
            more = f" and {len(left) - _NAMED} more" if len(left) > _NAMED else ""
            raise SetupLeftFilesError(
                f"the setup left files git does not ignore: {', '.join(left[:_NAMED])}{more} "
                "(they would be committed as each task's work: make git ignore them, or keep "
                "the setup from writing them)"
            )
        outputs = tuple(sorted(path.rstrip("/") for _, path in mine))
        manifest = take_manifest(worktree, outputs)
        state = SetupState(
            key=key,
            made_on=made_on,
            mission_only=None if self._users_own(made_on) else self.mission,
            outputs=outputs,
            manifest_sha256=manifest.digest,
            entries=manifest.entries,
            bytes=manifest.size,
            folder=folder_identity(worktree),
            set_up_at=now_rfc3339_millis(),
        )
        write_state(self.repo.root, worktree, state)
        with self._guard:
            self._states[worktree] = state
        return state

    def forget(self, worktree: Path) -> None:
        """*worktree* has no setup (any more): its outputs are cleaned with the rest."""
        with self._guard:
            self._states[worktree] = None
        drop_state(self.repo.root, worktree)

    def _serves(self, state: SetupState, key: str) -> bool:
        # Its key, and a tree of the user's own or of this mission's tasks.
        return state.key == key and state.mission_only in (None, self.mission)

    def _users_own(self, commit: str) -> bool:
        """Whether a setup made on *commit* may serve later missions (see the module)."""
        if commit != self.base:
            return False  # a wave's start after a join, a check's head: tasks' work
        with self._guard:
            known = self._base_is_users
        if known is None:
            known = users_own(self.repo, commit)
            with self._guard:
                self._base_is_users = known
        return known

    def _state_of(self, worktree: Path) -> SetupState | None:
        with self._guard:
            if worktree in self._states:
                return self._states[worktree]
        state = read_state(self.repo.root, worktree)
        with self._guard:
            return self._states.setdefault(worktree, state)


def _intact(worktree: Path, state: SetupState) -> bool:
    # The folder set up, its outputs as the setup left them.
    try:
        if folder_identity(worktree) != state.folder:
            return False
        return take_manifest(worktree, state.outputs).digest == state.manifest_sha256
    except OSError:
        return False
