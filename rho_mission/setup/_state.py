"""Each pooled worktree's last setup: ``<repo>/.rho/worktrees/setup/<worktree name>.json``.

Written (atomically, 0600) when a setup ends well, removed when it is no longer true (a new
key, a failed setup, kept outputs that changed, a setup of another mission's). A mission reads
it for a worktree a mission before it gave back to the pool; within a mission the state held
in memory is what counts (a task, even unsandboxed, cannot rewrite it there). The state names
the worktree's folder by device and inode too: a folder made again under the same name is not
the one set up. It names the commit the setup ran on and, when that commit holds tasks' work
(``_trust``), the one mission that may reuse it. A state of an older schema is not read: that
worktree is set up again.

Decision: docs/decisions/0604-setup-and-copy.md
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from taskstore import open_folder, write_atomic

from ..containment._folders import check_own_folder, open_private, private_folder
from ..records._places import setup_states_folder

__all__ = ["SetupState", "drop_orphan_states", "drop_state", "read_state", "write_state"]

_LIMIT = 256 * 1024  # a state lists output paths only: far below this


class SetupState(BaseModel):
    """What a worktree's last setup left: its key, outputs and their manifest."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal["rho.setup/v2"] = "rho.setup/v2"
    key: str = Field(pattern=r"^[0-9a-f]{64}$")
    made_on: str = Field(pattern=r"^[0-9a-f]{40}([0-9a-f]{24})?$")  # the commit it ran on
    # The mission whose tasks' work that commit holds: only it may reuse the setup. None: the
    # commit is the user's own, and the setup is kept across missions while its key holds.
    mission_only: str | None = Field(pattern=r"^[0-9a-f]{8}$")
    outputs: tuple[str, ...]
    manifest_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    entries: int = Field(ge=0)
    bytes: int = Field(ge=0)
    folder: tuple[int, int]  # the worktree folder's device and inode
    set_up_at: str


def folder_identity(worktree: Path) -> tuple[int, int]:
    """The device and inode of *worktree*'s folder (not followed if a link)."""
    found = os.lstat(worktree)
    return (found.st_dev, found.st_ino)


def _state_path(root: Path, worktree: Path) -> Path:
    return setup_states_folder(root) / f"{worktree.name}.json"


def read_state(root: Path, worktree: Path) -> SetupState | None:
    """The state kept for *worktree* of the repository at *root*, or None (none, unreadable,
    or for another folder of that name)."""
    try:
        fd = open_private(_state_path(root, worktree), os.O_RDONLY)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(_LIMIT + 1)
    try:
        state = SetupState.model_validate_json(data)
    except ValidationError:
        return None
    try:
        same = state.folder == folder_identity(worktree)
    except OSError:
        return None
    return state if same else None


def write_state(root: Path, worktree: Path, state: SetupState) -> None:
    """Keep *state* for *worktree*, durably (temp file, fsync, rename, fsync of the folder).

    Raises:
        UnsafePathError: a link stands on the way to the state folder.
        OSError: it could not be written.
    """
    folder = private_folder(setup_states_folder(root), root)
    write_atomic(folder / f"{worktree.name}.json", state.model_dump_json().encode())


def drop_state(root: Path, worktree: Path) -> None:
    """Forget *worktree*'s setup (nothing when none is kept). The state folder is reached
    without following a link: one planted there is left alone, and nothing through it goes
    (a later read refuses it too)."""
    try:
        folder = open_folder(setup_states_folder(root))
    except OSError:
        return  # no folder, or a link where it should be
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{worktree.name}.json", dir_fd=folder)
    finally:
        os.close(folder)


def drop_orphan_states(root: Path, worktrees: set[str]) -> None:
    """Remove the states of worktrees not named in *worktrees* (gone from the pool)."""
    folder = setup_states_folder(root)
    if not check_own_folder(folder, root):  # a link on the way is refused, never listed
        return
    try:
        names = os.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return
    for name in names:
        if name.endswith(".json") and name.removesuffix(".json") not in worktrees:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(folder / name)
