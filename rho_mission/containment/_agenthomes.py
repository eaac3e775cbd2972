"""Agents' own folders in the sandbox: a private writable copy for each task, never the user's.

The sandbox shows the home read-only, and an agent's program writes its config and session
folder at every start (codex: ``Read-only file system``; gemini: ``EROFS ...projects.json``).
Bound writable, the user's own folder would let one task change the settings, sign-in or
memory the next task (and the user) starts from. So each profile the mission names declares
its folders (``agents.AgentHome``); for each, rho makes a private folder holding only the
files the profile copies (its settings and sign-in: the only secrets of it the task reads;
other projects' sessions and logs stay out) and binds it over the folder's path for the
task's run; it is removed after. A folder the user does not have yet is made empty (0700) in
the home first, as the agent's own first run would: a mount needs its mount point, and the
sandbox's home is read-only. ``--sandbox-allow-write PATH`` binds a real path writable
instead: changes there stay.

Decision: docs/decisions/0511-agent-profiles.md
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ._folders import remove_tree

__all__ = ["AgentFolder", "HomeCopy", "copy_agent_homes", "remove_agent_homes"]

_PRIVATE = 0o700


class AgentFolder(Protocol):
    """What a profile declares of one folder (``agents.AgentHome``)."""

    @property
    def path(self) -> str: ...
    @property
    def variable(self) -> str | None: ...
    @property
    def copied(self) -> tuple[str, ...]: ...
    @property
    def beside(self) -> tuple[str, ...]: ...


@dataclass(frozen=True, slots=True)
class HomeCopy:
    """A private copy (``copy``, rho's) seen by the task at ``path``."""

    copy: Path
    path: Path


def copy_agent_homes(
    declared: Sequence[AgentFolder], env: Mapping[str, str], folder: Path
) -> list[HomeCopy]:
    """A private copy under *folder* (made 0700, emptied first; its parent must be rho's) of
    each *declared* folder, as the task's environment *env* places it (its ``HOME``, or the
    folder's variable).

    A folder whose place is unknown (no ``HOME``, a relative path) is left out; one missing
    is made empty in the user's home, unless its parent is missing too.
    """
    remove_tree(folder)  # what a crashed run of the same task left (a task filled it)
    folder.mkdir(mode=_PRIVATE)
    copies: list[HomeCopy] = []
    for index, entry in enumerate(declared):
        where, moved = _place(entry, env)
        if where is None or any(made.path == where for made in copies):
            continue
        if not _mount_point(where):
            continue
        copy = folder / f"{index}{where.name}"
        copy.mkdir(mode=_PRIVATE)
        for name in entry.copied:
            _copy(where / name, copy / name)
        home = env.get("HOME")
        if not moved and home:
            for name in entry.beside:
                _copy(Path(home, name), copy / Path(name).name)
        copies.append(HomeCopy(copy, where))
    return copies


def remove_agent_homes(folder: Path) -> None:
    """Remove the private copies under *folder* (what the task wrote there goes with them: a
    tree of any depth, links unlinked, never followed). One a task made unremovable stays in
    the mission folder, for ``rho mission clean``."""
    with contextlib.suppress(OSError):
        remove_tree(folder)


def _place(entry: AgentFolder, env: Mapping[str, str]) -> tuple[Path | None, bool]:
    # Where the task's program looks for it, and whether its variable moved it there.
    moved = env.get(entry.variable) if entry.variable else None
    base = moved or (os.path.join(env["HOME"], entry.path) if env.get("HOME") else None)
    if base is None or not os.path.isabs(base):
        return None, False
    return Path(os.path.normpath(base)), bool(moved)


def _mount_point(where: Path) -> bool:
    # The folder the copy is mounted on; made (as the agent's first run would) when missing.
    if os.path.isdir(where):
        return True
    if os.path.lexists(where) or not os.path.isdir(where.parent):
        return False
    try:
        os.mkdir(where, _PRIVATE)
    except FileExistsError:
        pass
    except OSError:
        return False
    return os.path.isdir(where) and not os.path.islink(where)


def _copy(source: Path, target: Path) -> None:
    # A link is copied as a link: in the sandbox it leads where the user's does, a dotfiles
    # folder read-only, a secret (~/.ssh/...) hidden; followed here it would hand the task a
    # copy of what the sandbox hides. A folder (claude's agents/) whole, links kept as links.
    try:
        if source.is_symlink():
            os.symlink(os.readlink(source), target)
        elif source.is_dir():
            shutil.copytree(source, target, symlinks=True)
        elif source.is_file():
            shutil.copyfile(source, target, follow_symlinks=False)
            os.chmod(target, 0o600)
    except OSError:
        pass  # unreadable to the user: the task cannot have it either
