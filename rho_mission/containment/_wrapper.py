"""What a task's shell runs under: its supervisor, and inside it the sandbox when asked.

Decision: docs/decisions/0704-supervisor.md, docs/decisions/0705-sandbox.md
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ._agenthomes import HomeCopy
from ._hostmask import host_mask
from ._pins import require_pinned
from ._sandbox import SandboxSpec, bwrap_argv

__all__ = ["TaskPlace", "supervisor_args", "task_wrapper"]


@dataclass(frozen=True, slots=True)
class TaskPlace:
    """Where a task runs and what it may read: its worktree, its repository, its mission's
    folders, its prompt.

    ``hidden`` are the folders a sandbox hides (the repository's ``.rho`` and the mission
    folder, which may lie elsewhere); ``readable`` the files it shows again inside them.
    """

    worktree: Path
    repo: Path
    hidden: list[Path]
    readable: list[Path]
    # The task's home folder (its secrets and sockets covered), the paths shown again.
    home: Path | None = None
    allowed: tuple[Path, ...] = ()
    # Folders of rho's the task may write even inside the hidden ones (its usage folder).
    writable: tuple[Path, ...] = ()
    # Paths the user binds writable (``--sandbox-allow-write``); agents' private folders.
    allowed_write: tuple[Path, ...] = ()
    homes: tuple[HomeCopy, ...] = ()


def supervisor_args(grace: float, log_limit: int, cgroup: Path | None = None) -> list[str]:
    """``GRACE LOG_LIMIT CGROUP``: the arguments of a task's supervisor (``_reaper``), which
    the zygote forks (``_zygote``): the reaper of everything a task starts, and the keeper of
    its log (at most *log_limit* bytes: its head and its tail); it ends the task when rho dies,
    and runs in *cgroup* ("-": none), forked there by the zygote."""
    return [f"{grace:g}", str(log_limit), "-" if cgroup is None else str(cgroup)]


def task_wrapper(
    place: TaskPlace,
    *,
    grace: float,
    log_limit: int,
    sandbox: bool,
    network: bool,
    quarantine: Path | None = None,
    cgroup: Path | None = None,
) -> tuple[list[str], list[str]]:
    """A task's supervisor's arguments (``supervisor_args``), and the start of its command
    line: the sandbox if asked (else nothing).

    The supervisor leads either way: it keeps the log within its limit, and without a sandbox
    it is what ends the task's daemons (in the sandbox, the PID namespace ends them too). In
    the sandbox the object store is read-only; *quarantine* (``_quarantine``) is where the
    task's new objects go (without one, it can make none). *cgroup* (``_cgroup``) is where
    the supervisor puts itself and so the task.

    Raises:
        UnsafePathError: the worktree is not one rho made (no record of its git dir).
    """
    supervisor = supervisor_args(grace, log_limit, cgroup)
    if not sandbox:
        return supervisor, []
    return supervisor, bwrap_argv(_spec(place, network, quarantine))


def _spec(place: TaskPlace, network: bool, quarantine: Path | None) -> SandboxSpec:
    pin = require_pinned(place.worktree)
    # HEAD, index and logs go to the worktree's own git dir; the objects of its commits to
    # its quarantine (mounted on the object store, which it reads but cannot write). Refs,
    # config and hooks stay read-only.
    writable = [pin.path, pin.git_dir, *place.writable]
    visible = [place.repo, pin.common_dir]
    store = pin.common_dir / "objects"
    objects = (quarantine, store) if quarantine is not None else None
    mask = host_mask(place.home, place.allowed, place.allowed_write)
    return SandboxSpec(
        writable, visible, place.hidden, place.readable, network, objects, mask, place.homes
    )
