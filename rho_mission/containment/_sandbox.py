"""``--sandbox``: each task under bubblewrap, so the OS keeps it out of what rho checks cannot.

Without the OS a task running as the user can edit ``.rho/tasks.json``, the user's checkout or
``.git`` directly. Under ``bwrap`` (Debian's ``bubblewrap``) a task sees:

============================================  ===============================================
path                                          in the sandbox
============================================  ===============================================
its worktree                                  writable
its worktree's git dir (``.git/worktrees/X``)  writable: HEAD, index and logs of its commits
``.git/objects``                              its own quarantine, writable, over a read-only
                                              view of the store (``_quarantine``): new objects
                                              are checked and moved in after the task
``/tmp``, ``/var/tmp``                        private, empty, writable (gone after the task);
                                              a repository inside is shown as elsewhere
``/run`` (sockets, daemons' state)            private, empty (``_hostmask``)
the home's secrets (``~/.ssh``, ``~/.aws``...)  hidden; its sockets read as ``/dev/null``
``--sandbox-allow PATH``                      read-only, over all of the above
``--sandbox-allow-write PATH``                writable (the real one: changes stay), over all
                                              of the above
its agents' config folders (``~/.codex``...)  a private writable copy for this task
                                              (``_agenthomes``), removed after it
its prompt file (and a fix's failed log)      read-only
the repository's ``.rho/``, the mission       hidden: an empty read-only folder (the store,
folder                                        mission records, logs, tokens, other worktrees)
the rest of ``.git`` (config, refs, hooks)    read-only
the user's checkout, home, the whole system   read-only
``/dev``, ``/proc``                           a minimal ``/dev``; ``/proc`` of its namespace
============================================  ===============================================

It runs in its own PID namespace (when the task's command exits, the kernel ends every process
it started), with every capability dropped (as root, a capability would let it remount the
read-only views), and with the network of the host unless asked otherwise (agents call model
APIs). Its HEAD is detached before it starts (``refs/`` is read-only: a commit moves HEAD
only); rho moves the feature branch to what it left, as for any worker.

Decision: docs/decisions/0705-sandbox.md
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .._errors import InvalidMissionError
from ._agenthomes import HomeCopy
from ._helpers import OWN_GROUP
from ._hostmask import HostMask
from ._quarantine import STORE_VIEW

__all__ = ["SandboxSpec", "bwrap_argv", "require_bwrap"]

_BWRAP = "bwrap"
# Folders the sandbox replaces with private empty ones.
_PRIVATE = ("/tmp", "/var/tmp")
_PACKAGE_HINT = "install the 'bubblewrap' package (Debian: apt-get install bubblewrap)"


@dataclass(frozen=True, slots=True)
class SandboxSpec:
    """What one task's sandbox shows: its writable folders, the hidden ones, the readable files.

    ``writable`` are bound read-write (the worktree, its git dir, the object store);
    ``visible`` are shown read-only even inside the private ``/tmp`` (a repository there);
    ``hidden`` get an empty read-only folder over them, mounted before the writable ones so
    that a worktree inside a hidden folder is still there; ``readable`` files are bound read-only on
    top (the prompt file inside the hidden mission folder).
    """

    writable: Sequence[Path]
    visible: Sequence[Path] = ()
    hidden: Sequence[Path] = ()
    readable: Sequence[Path] = ()
    network: bool = True
    # (quarantine folder, object store): the quarantine is mounted on the store, which is
    # shown read-only at _quarantine.STORE_VIEW (see _quarantine).
    objects: tuple[Path, Path] | None = None
    # The host's sockets and the home's secrets covered, what is shown again (``_hostmask``).
    mask: HostMask = field(default_factory=HostMask)
    # Agents' config folders: each private copy bound writable at the folder's path.
    homes: Sequence[HomeCopy] = ()


def bwrap_argv(spec: SandboxSpec) -> list[str]:
    """The ``bwrap ... --`` prefix of a task's command line for *spec*.

    Mounts are made in this order, each later one on top: the whole system read-only, the
    private folders (``/tmp``, ``/run``...), what is visible inside them; the home's secret
    folders hidden, ``/dev/null`` on its secret files and sockets, the paths shown again
    (``--sandbox-allow``) and bound writable (``--sandbox-allow-write``), those hidden
    folders made read-only; then rho's own: the hidden folders, the writable ones, the
    agents' private config folders, the object quarantine on the store, the readable files,
    and last rho's hidden folders made read-only (their mount points made).
    """
    mask = spec.mask
    hidden = [folder for folder in spec.hidden if os.path.isdir(folder)]
    private = [*_PRIVATE, *map(str, mask.folders)]
    argv = [_BWRAP, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for folder in private:
        argv += ["--tmpfs", folder]
    argv += _mounts("--ro-bind", [path for path in spec.visible if _under(path, private)])
    argv += _mask_mounts(mask)
    argv += _mounts("--tmpfs", hidden, twice=False)
    argv += _mounts("--bind", spec.writable)
    for home in spec.homes:
        argv += ["--bind", str(home.copy), str(home.path)]
    if spec.objects is not None:
        quarantine, store = spec.objects
        argv += ["--ro-bind", str(store), str(STORE_VIEW), "--bind", str(quarantine), str(store)]
    argv += _mounts("--ro-bind", [path for path in spec.readable if os.path.exists(path)])
    argv += _mounts("--remount-ro", hidden, twice=False)
    argv += ["--unshare-pid", "--unshare-ipc", "--die-with-parent", "--cap-drop", "ALL"]
    if not spec.network:
        argv.append("--unshare-net")
    argv.append("--")
    return argv


def _mask_mounts(mask: HostMask) -> list[str]:
    # Before rho's own mounts, so that a path shown again (--sandbox-allow ~/src, a parent of
    # the repository) never lies over the worktree, the quarantine or the hidden .rho.
    argv = _mounts("--tmpfs", mask.hidden, twice=False)
    for file in mask.files:
        argv += ["--ro-bind", os.devnull, str(file)]
    argv += _mounts("--ro-bind", mask.shown)
    argv += _mounts("--bind", mask.writable)
    return argv + _mounts("--remount-ro", mask.hidden, twice=False)


def _mounts(option: str, paths: Sequence[Path], *, twice: bool = True) -> list[str]:
    # A bind names its source and its destination (the same path here); the others, one path.
    argv: list[str] = []
    for path in paths:
        argv += [option, str(path), str(path)] if twice else [option, str(path)]
    return argv


def _under(path: Path, folders: Sequence[str]) -> bool:
    return any(Path(path).is_relative_to(folder) for folder in folders)


def require_bwrap() -> None:
    """Refuse ``--sandbox`` where bubblewrap is missing or cannot start a sandbox here.

    Raises:
        InvalidMissionError: ``bwrap`` is not on PATH, or its trial run failed (its words).
    """
    problem = _bwrap_problem()
    if problem:
        raise InvalidMissionError(problem)


@functools.cache
def _bwrap_problem() -> str:
    # Once per process: a trial sandbox costs a few milliseconds and its answer does not change.
    if shutil.which(_BWRAP) is None:
        return f"--sandbox needs bubblewrap, and no 'bwrap' is on PATH: {_PACKAGE_HINT}"
    spec = SandboxSpec(writable=())
    try:
        done = subprocess.run(
            [*bwrap_argv(spec), "/bin/true"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            check=False,
            timeout=30,
            process_group=OWN_GROUP,  # a signal to rho's group is rho's (_helpers)
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"--sandbox: bwrap could not start: {exc}"
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"--sandbox: bwrap cannot make a sandbox here: {said[-1] if said else 'failed'}"
    return ""
