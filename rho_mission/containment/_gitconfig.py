"""rho's git runs no command a task wrote: the configuration held as it was when a mission began.

git runs commands its configuration names: a ``filter.<x>.clean`` for every file a ``git add``
or ``status`` reads, ``diff``/``merge`` drivers, ``core.sshCommand``, ``core.pager``... A task
(without ``--sandbox``, where ``.git/config`` is read-only) can append one to the repository's
``config`` and name it in a ``.gitattributes``; rho's own git, run after the task ended, would
then run the task's command outside its supervisor, its timeout and its accounting.

So a running mission holds the configuration git reads for its repository (``hold_config``):
the repository's ``config``, every file it includes (``include.path``, ``includeIf.*.path``,
recursively), the user's global files (``$GIT_CONFIG_GLOBAL``, else ``~/.gitconfig`` and
``$XDG_CONFIG_HOME/git/config``) and the system's (``/etc/gitconfig``), each as its identity
(device, inode, size, modification and change times: a write changes the change time, which no
user can set back), with its target's when it is a link, or its absence. Right before every git
call rho makes on that repository, and right after it, ``check_config`` compares them (a few
``stat`` calls, no read): a change raises ``GitConfigChangedError`` naming the file, before git
runs with it.

A change made during a git call of rho's is caught right after it, not before: that window is
the length of one git process, and under ``--sandbox`` (the configuration read-only to tasks) it
does not exist.

Decision: docs/decisions/0703-git-hardening.md
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .._errors import GitConfigChangedError
from ._environ import child_environ
from ._folders import FileIdentity, file_identity
from ._helpers import run_continued

__all__ = ["ConfigSnapshot", "check_config", "config_files", "hold_config"]

# How deep includes are followed: git's own limit (MAX_INCLUDE_DEPTH).
_INCLUDE_DEPTH = 10
_SYSTEM_CONFIG = Path("/etc/gitconfig")

Identity = tuple[FileIdentity | None, FileIdentity | None]

_HELD: dict[Path, list[ConfigSnapshot]] = {}
_GUARD = threading.Lock()


@dataclass(frozen=True, slots=True)
class ConfigSnapshot:
    """The configuration files git reads for one repository, each with its identity."""

    files: tuple[tuple[Path, Identity], ...]

    def changed(self) -> Path | None:
        """The first file whose identity is no longer the one held, or None."""
        for path, identity in self.files:
            if _identity(path) != identity:
                return path
        return None


def _identity(path: Path) -> Identity:
    # The file's own identity and, for a link (a dotfiles manager's ~/.gitconfig), its
    # target's: an edit of either is a change.
    return (_stat_of(path, follow=False), _stat_of(path, follow=True))


def _stat_of(path: Path, *, follow: bool) -> FileIdentity | None:
    try:
        return file_identity(os.stat(path, follow_symlinks=follow))
    except (FileNotFoundError, NotADirectoryError):
        return None


def config_files(common_dir: Path) -> list[Path]:
    """Every configuration file git reads for the repository at *common_dir*, includes too.

    Files that do not exist are listed as well: one that appears later is a change.
    """
    files = [*_user_files(), common_dir / "config"]
    listed: list[Path] = []
    for path in files:
        _add_with_includes(path, listed, depth=0)
    return listed


def _user_files() -> list[Path]:
    files: list[Path] = []
    if os.environ.get("GIT_CONFIG_NOSYSTEM", "") in ("", "0", "false"):
        files.append(Path(os.environ.get("GIT_CONFIG_SYSTEM", _SYSTEM_CONFIG)))
    named = os.environ.get("GIT_CONFIG_GLOBAL")
    if named is not None:
        files.append(Path(named))
        return files
    home = Path(os.path.expanduser("~"))
    xdg = os.environ.get("XDG_CONFIG_HOME") or str(home / ".config")
    return [*files, Path(xdg) / "git" / "config", home / ".gitconfig"]


def _add_with_includes(path: Path, listed: list[Path], *, depth: int) -> None:
    if path in listed or not _watchable(path):
        return
    listed.append(path)
    if depth >= _INCLUDE_DEPTH or not path.is_file():
        return
    for included in _includes(path):
        _add_with_includes(included, listed, depth=depth + 1)


def _watchable(path: Path) -> bool:
    # A device (GIT_CONFIG_GLOBAL=/dev/null) holds no configuration, and its times move with
    # every write to it: it is not watched.
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return True  # absent: watched, so that one made later is a change
    return not (stat.S_ISCHR(mode) or stat.S_ISBLK(mode))


def _includes(path: Path) -> list[Path]:
    """The files *path* includes, resolved as git resolves them (relative to *path*'s folder)."""
    command = [
        "git",
        "config",
        "--file",
        str(path),
        "--null",
        "--get-regexp",
        r"^include(if\..*)?\.path$",
    ]
    _, out, _ = run_continued(command, child_environ({}))  # continued if a task stops it
    found: list[Path] = []
    for entry in out.decode("utf-8", "surrogateescape").split("\0"):
        _, _, value = entry.partition("\n")
        if value:
            included = Path(os.path.expanduser(value))
            found.append(included if included.is_absolute() else path.parent / included)
    return found


def snapshot_config(common_dir: Path) -> ConfigSnapshot:
    """The configuration git reads for *common_dir* as it is now."""
    return ConfigSnapshot(tuple((path, _identity(path)) for path in config_files(common_dir)))


@contextmanager
def hold_config(common_dir: Path) -> Iterator[ConfigSnapshot]:
    """Hold the configuration of *common_dir* as it is now for the ``with`` block: every git
    call of rho's on it checks it first (``check_config``)."""
    snapshot = snapshot_config(common_dir)
    with _GUARD:
        _HELD.setdefault(common_dir, []).append(snapshot)
    try:
        yield snapshot
    finally:
        with _GUARD:
            held = _HELD[common_dir]
            held.remove(snapshot)
            if not held:
                del _HELD[common_dir]


def check_config(common_dir: Path) -> None:
    """Refuse to go on when a configuration file held for *common_dir* has changed.

    No cost but a dictionary look-up when no mission holds it.

    Raises:
        GitConfigChangedError: a held file was written, replaced, made or removed.
    """
    held = _HELD.get(common_dir)
    if not held:
        return
    for snapshot in tuple(held):
        changed = snapshot.changed()
        if changed is not None:
            raise GitConfigChangedError(changed)
