"""What of the host a sandboxed task never sees by default: its sockets and the home's secrets.

The sandbox shows the whole system read-only (a build needs its compilers, libraries and
caches). Read-only is not out of reach for two kinds of file:

- a UNIX socket is connected to, not written: a listener on ``/run/docker.sock``, an
  ssh-agent, a D-Bus session bus answers a task whatever the mount says, and that is the road
  to a root shell, the user's keys, the desktop. So ``/run`` (and ``/var/run`` where it is a
  folder of its own) is a private empty folder in the sandbox, and every socket found in the
  home folder and the folders right below it is covered by ``/dev/null``;
- a secret file is read, and with the network kept (agents call model APIs) it can leave. So
  ``SECRETS`` below the home folder are hidden: a folder becomes an empty read-only one, a file
  reads as empty.

What a build needs from ``/run`` is shown again: the file ``/etc/resolv.conf`` leads to there
(``systemd-resolved``), without which no name resolves. ``--sandbox-allow PATH`` shows one
more path read-only, for the user who knows (an ``~/.npmrc`` with a registry's token);
``--sandbox-allow-write PATH`` binds one writable (a cache shared by the tasks: the real
path, whose changes stay).

Left as they are, and said in the README: abstract UNIX sockets (they live in the network
namespace, which the sandbox shares unless ``--sandbox-no-network``), and secrets outside the
home folder, which rho cannot tell from other files.

Decision: docs/decisions/0705-sandbox.md
"""

from __future__ import annotations

import os
import stat
import threading
from dataclasses import dataclass
from pathlib import Path

__all__ = ["SECRETS", "HostMask", "host_mask"]

# Below the home folder: credentials of git, ssh, gpg, the clouds, clusters and registries.
SECRETS = (
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".kube",
    ".netrc",
    ".git-credentials",
    ".docker/config.json",
    ".config/gh",
    ".config/gcloud",
    ".config/git/credentials",
    ".pypirc",
    ".npmrc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".local/share/keyrings",
    ".password-store",
    # The agents' sign-in: a task whose mission names the agent gets it in its private copy
    # of the agent's folder (``_agenthomes``), no other task.
    ".claude/.credentials.json",
    ".codex/auth.json",
    ".gemini/oauth_creds.json",
    ".gemini/google_accounts.json",
    ".aider/oauth-keys.env",
)
# Folders of sockets and daemons' state; private and empty in the sandbox.
RUNTIME = ("/run", "/var/run")
_RESOLV = Path("/etc/resolv.conf")


@dataclass(frozen=True, slots=True)
class HostMask:
    """What a sandbox covers: ``folders`` made private (empty, writable tmpfs: ``/run``),
    ``hidden`` folders (empty, read-only), ``files`` read as ``/dev/null``, ``shown`` again
    read-only on top of all that, and ``writable`` bound read-write on top."""

    folders: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()
    files: tuple[Path, ...] = ()
    shown: tuple[Path, ...] = ()
    writable: tuple[Path, ...] = ()


def host_mask(
    home: Path | None, allowed: tuple[Path, ...] = (), writable: tuple[Path, ...] = ()
) -> HostMask:
    """The mask for a task whose home folder is *home* (None: no home to cover), with the
    *allowed* paths shown read-only again and the *writable* ones bound read-write (those
    that exist)."""
    folders = tuple(Path(path) for path in RUNTIME if _real_folder(Path(path)))
    hidden: list[Path] = []
    files: list[Path] = []
    if home is not None and _real_folder(home):
        for name in SECRETS:
            # A link (a dotfiles manager's ~/.ssh) is covered where it leads; a dangling one
            # leads nowhere to read.
            path = Path(os.path.realpath(home / name))
            if os.path.isdir(path):
                hidden.append(path)
            elif os.path.isfile(path):
                files.append(path)
        files += _sockets_near(home)
    shown = [*_needed_from(folders), *(path for path in allowed if os.path.exists(path))]
    bound = tuple(path for path in writable if os.path.exists(path))
    return HostMask(folders, tuple(hidden), tuple(sorted(set(files))), tuple(shown), bound)


def _real_folder(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


# The last look at a home folder: the folders looked in with their modification times, and
# the sockets found. A socket made (or removed) in a folder changes the folder's time.
_LOOKED: dict[Path, tuple[tuple[tuple[str, int], ...], list[Path]]] = {}
_LOOKED_GUARD = threading.Lock()


def _sockets_near(home: Path) -> list[Path]:
    """The sockets in *home* and in the folders right below it (links not followed); looked
    for again only when one of those folders changed since the last look (a few ``stat``
    calls, not a listing of each)."""
    with _LOOKED_GUARD:
        last = _LOOKED.get(home)
    if last is not None and all(_mtime(folder) == when for folder, when in last[0]):
        return list(last[1])
    folders = [(str(home), _mtime(str(home)))]
    found: list[Path] = []
    for entry in _entries(home):
        if _is_socket(entry):
            found.append(Path(entry.path))
        elif entry.is_dir(follow_symlinks=False):
            folders.append((entry.path, _mtime(entry.path)))
            found += [Path(inner.path) for inner in _entries(Path(entry.path)) if _is_socket(inner)]
    with _LOOKED_GUARD:
        _LOOKED[home] = (tuple(folders), found)
    return list(found)


def _mtime(folder: str) -> int:
    try:
        return os.lstat(folder).st_mtime_ns
    except OSError:
        return -1


def _entries(folder: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as listing:
            return list(listing)
    except OSError:
        return []


def _is_socket(entry: os.DirEntry[str]) -> bool:
    try:
        return stat.S_ISSOCK(entry.stat(follow_symlinks=False).st_mode)
    except OSError:
        return False


def _needed_from(folders: tuple[Path, ...]) -> list[Path]:
    # /etc/resolv.conf may be a link into /run (systemd-resolved): its target stays readable.
    target = Path(os.path.realpath(_RESOLV))
    if any(target.is_relative_to(folder) for folder in folders) and target.is_file():
        return [target]
    return []
