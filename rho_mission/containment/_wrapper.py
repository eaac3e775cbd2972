"""What a task's shell runs under: its supervisor, or its sandbox (which supervises too)."""

from __future__ import annotations

import sys
from pathlib import Path

from ._pins import pinned
from ._sandbox import SandboxSpec, bwrap_argv

__all__ = ["TaskPlace", "supervisor_argv", "task_wrapper"]

_REAPER = Path(__file__).with_name("_reaper.py")


class TaskPlace:
    """Where a task runs and what it may read: its worktree, its repository, its mission's
    folders, its prompt.

    ``hidden`` are the folders a sandbox hides (the repository's ``.rho`` and the mission
    folder, which may lie elsewhere); ``readable`` the files it shows again inside them.
    """

    def __init__(
        self, worktree: Path, repo: Path, hidden: list[Path], readable: list[Path]
    ) -> None:
        self.worktree = worktree
        self.repo = repo
        self.hidden = hidden
        self.readable = readable


def supervisor_argv(grace: float) -> list[str]:
    """``python -I -S _reaper.py GRACE``: the reaper of everything a task starts."""
    return [sys.executable, "-I", "-S", str(_REAPER), f"{grace:g}"]


def task_wrapper(place: TaskPlace, *, grace: float, sandbox: bool, network: bool) -> list[str]:
    """The start of a task's command line: the sandbox when asked, else the supervisor.

    bubblewrap's PID namespace does the supervisor's work (the kernel ends every process of
    the namespace when the task's command exits), so a sandboxed task has no supervisor.

    Raises:
        UnsafePathError: the worktree is not one rho made (no record of its git dir).
    """
    if not sandbox:
        return supervisor_argv(grace)
    return bwrap_argv(_spec(place, network))


def _spec(place: TaskPlace, network: bool) -> SandboxSpec:
    from .._errors import UnsafePathError

    pin = pinned(place.worktree)
    if pin is None:
        raise UnsafePathError(place.worktree, "is no worktree rho made")
    # The objects of its commits go to the shared object store; HEAD, index and logs to the
    # worktree's own git dir. Refs, config and hooks stay read-only.
    writable = [pin.path, pin.git_dir, pin.common_dir / "objects"]
    visible = [place.repo, pin.common_dir]
    return SandboxSpec(writable, visible, place.hidden, place.readable, network)
