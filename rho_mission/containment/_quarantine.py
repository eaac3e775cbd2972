"""A sandboxed task's new objects: a quarantine of its own, checked and moved in after it ends.

Under ``--sandbox`` the repository's object store is read-only to a task: it cannot overwrite
the loose object of a committed file (forged history), delete the packs (destroyed history),
or plant links in ``objects/XX`` for rho's own git to write through. A task still commits (an
agent does): inside its sandbox, ``<common dir>/objects`` is a quarantine folder of its own,
writable, whose ``info/alternates`` names a read-only view of the real store (what
``receive-pack`` does with ``GIT_OBJECT_DIRECTORY``, done with a mount instead of a variable,
so that a ``git clone`` the task runs for its own work is not redirected too).

After the task ends rho reads the quarantine itself, never following a link, and admits
what it holds only if all of it is sound (``admit``):

- a loose object (``XX/<hex>``, a regular file) is inflated and hashed by rho: its header is a
  known type with the size that follows, and its hash is its name;
- a pack (``pack/pack-<hex>.pack``) is handed to ``git index-pack --stdin``, which re-hashes
  every object it holds and writes the pack and a new index into the store (the task's own
  ``.idx`` is never used);
- a link, a device or a fifo where an object would be, a folder where a file would be, or
  more than ``QUARANTINE_LIMIT`` bytes in all, refuses the whole quarantine (the attempt
  fails: ``QuarantineRefusedError``). Other names (a ``tmp_obj_`` a killed git left, the
  task's ``.idx`` and ``.keep`` files, ``info/``) are left out.

Loose objects are written into the store the way git writes them (a temporary file in the
object's folder, then a link to its name; an object already there is kept), through folder
descriptors opened without following a link. The quarantine is then deleted; one a crashed
rho left (its pid in its name, no longer alive) is deleted by the next that makes one.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import shutil
import stat
import subprocess
import zlib
from dataclasses import dataclass
from pathlib import Path

from .._errors import QuarantineRefusedError
from ._environ import child_environ
from ._folders import open_unfollowed, private_folder
from ._gitconfig import check_config

__all__ = [
    "QUARANTINE_LIMIT",
    "STORE_VIEW",
    "Quarantine",
    "admit",
    "discard",
    "open_quarantine",
]

# What one attempt may add to the store: far above any real commit, below a disk filled.
QUARANTINE_LIMIT = 4 << 30
# Where the sandbox shows the real object store, read-only (in its private /tmp).
STORE_VIEW = Path("/tmp/.rho-objects")
_LOOSE_FOLDER = re.compile(r"^[0-9a-f]{2}$")
_LOOSE_NAME = re.compile(r"^(?:[0-9a-f]{38}|[0-9a-f]{62})$")
_PACK_NAME = re.compile(r"^pack-(?:[0-9a-f]{40}|[0-9a-f]{64})\.pack$")
_TYPES = (b"blob", b"tree", b"commit", b"tag")
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY
_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class Quarantine:
    """One attempt's quarantine: its ``folder`` (mounted on ``store`` inside the sandbox)."""

    folder: Path
    store: Path


def open_quarantine(parent: Path, anchor: Path, store: Path) -> Quarantine:
    """Make a new, empty quarantine in *parent* (made 0700 from *anchor*) for the object
    *store*: its ``info/alternates`` names the sandbox's view of the store first, then the
    store's own alternates made absolute."""
    _sweep(private_folder(parent, anchor))  # a real folder: the sweep follows no link
    folder = private_folder(parent / f"q-{os.getpid()}-{secrets.token_hex(6)}", anchor)
    os.mkdir(folder / "info", 0o700)
    lines = [str(STORE_VIEW), *_alternates_of(store)]
    (folder / "info" / "alternates").write_text("".join(f"{line}\n" for line in lines))
    return Quarantine(folder, store)


def _sweep(parent: Path) -> None:
    # The quarantines of processes that died (a crash, kill -9) before deleting theirs.
    try:
        names = os.listdir(parent)
    except FileNotFoundError:
        return
    for name in names:
        owner = name.split("-")[1] if name.startswith("q-") and name.count("-") == 2 else ""
        if owner.isdigit() and not _alive(int(owner)):
            shutil.rmtree(parent / name, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _alternates_of(store: Path) -> list[str]:
    try:
        text = (store / "info" / "alternates").read_text(encoding="utf-8")
    except OSError:
        return []
    lines = [line.strip() for line in text.splitlines()]
    return [str(store / line) for line in lines if line and not line.startswith("#")]


def admit(quarantine: Quarantine, common_dir: Path) -> int:
    """Check everything *quarantine* holds and move it into the store; the count of objects
    admitted (packs count their objects as one each). The quarantine is deleted either way.

    Raises:
        QuarantineRefusedError: something in it is not a sound object (nothing was admitted).
        GitConfigChangedError: git's configuration changed (no git ran for the packs).
    """
    try:
        loose, packs = _checked_contents(quarantine.folder)
        for pack in packs:
            _index_pack(pack, common_dir)
        for name, data in loose:
            _store_loose(quarantine.store, name, data)
        return len(loose) + len(packs)
    finally:
        discard(quarantine)


def discard(quarantine: Quarantine) -> None:
    """Delete *quarantine* (``rmtree`` removes links, never follows them)."""
    shutil.rmtree(quarantine.folder, ignore_errors=True)


def _checked_contents(folder: Path) -> tuple[list[tuple[str, bytes]], list[Path]]:
    """The loose objects of *folder*, checked (name, compressed bytes), and its pack files."""
    loose: list[tuple[str, bytes]] = []
    packs: list[Path] = []
    budget = [QUARANTINE_LIMIT]
    root = open_unfollowed(folder, _DIRECTORY)
    try:
        for entry in sorted(os.listdir(root)):
            if _LOOSE_FOLDER.match(entry):
                loose += _loose_in(root, entry, budget)
            elif entry == "pack":
                packs += _packs_in(root, folder / "pack", budget)
    finally:
        os.close(root)
    return loose, packs


def _loose_in(root: int, prefix: str, budget: list[int]) -> list[tuple[str, bytes]]:
    found: list[tuple[str, bytes]] = []
    folder = _open_folder(root, prefix)
    try:
        for name in sorted(os.listdir(folder)):
            if _LOOSE_NAME.match(name):
                data = _read_regular(folder, f"{prefix}/{name}", budget)
                _require_named_by_hash(prefix + name, data)
                found.append((prefix + name, data))
    finally:
        os.close(folder)
    return found


def _packs_in(root: int, path: Path, budget: list[int]) -> list[Path]:
    folder = _open_folder(root, "pack")
    try:
        names = sorted(name for name in os.listdir(folder) if _PACK_NAME.match(name))
        for name in names:
            _require_regular(folder, f"pack/{name}", budget)
    finally:
        os.close(folder)
    return [path / name for name in names]


def _open_folder(root: int, name: str) -> int:
    try:
        return open_unfollowed(name, _DIRECTORY, dir_fd=root)
    except OSError as exc:  # a link (ELOOP) or a file (ENOTDIR) where a folder goes
        raise QuarantineRefusedError(f"{name} is not a folder") from exc


def _require_regular(folder: int, shown: str, budget: list[int]) -> int:
    found = os.stat(shown.rpartition("/")[2], dir_fd=folder, follow_symlinks=False)
    if not stat.S_ISREG(found.st_mode):
        raise QuarantineRefusedError(f"{shown} is not a regular file")
    budget[0] -= found.st_size
    if budget[0] < 0:
        raise QuarantineRefusedError(f"its objects exceed {QUARANTINE_LIMIT} bytes")
    return found.st_size


def _read_regular(folder: int, shown: str, budget: list[int]) -> bytes:
    _require_regular(folder, shown, budget)
    fd = open_unfollowed(shown.rpartition("/")[2], os.O_RDONLY, dir_fd=folder)
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def _require_named_by_hash(name: str, data: bytes) -> None:
    """Refuse a loose object whose content is not a git object, or hashes to another name."""
    inflater = zlib.decompressobj()
    try:
        head = inflater.decompress(data, 64)
        kind, _, rest = head.partition(b" ")
        size_text, nul, _ = rest.partition(b"\0")
        if kind not in _TYPES or not nul or not size_text.isdigit():
            raise QuarantineRefusedError(f"object {name} is no git object")
        if int(size_text) > QUARANTINE_LIMIT:
            raise QuarantineRefusedError(f"object {name} says it exceeds {QUARANTINE_LIMIT} bytes")
        # sha1 names git objects here (sha256 only in repositories made for it).
        digest = hashlib.sha1() if len(name) == 40 else hashlib.sha256()
        digest.update(head)
        length = len(head)
        expected = len(kind) + 1 + len(size_text) + 1 + int(size_text)
        while not inflater.eof and length <= expected:
            chunk = inflater.decompress(inflater.unconsumed_tail, _CHUNK)
            if not chunk and not inflater.unconsumed_tail:
                break  # the data ends before its stream does
            digest.update(chunk)
            length += len(chunk)
    except zlib.error as exc:
        raise QuarantineRefusedError(f"object {name} is no git object") from exc
    if length != expected or not inflater.eof:
        raise QuarantineRefusedError(f"object {name} is not the size its header says")
    if digest.hexdigest() != name:
        raise QuarantineRefusedError(f"object {name} is not what its name says (forged)")


def _index_pack(pack: Path, common_dir: Path) -> None:
    # git re-hashes every object of the pack and writes it, with an index of its own making,
    # into the store; the pack is read through a descriptor rho opened without a link.
    check_config(common_dir)
    fd = open_unfollowed(pack, os.O_RDONLY)
    with os.fdopen(fd, "rb") as source:
        done = subprocess.run(
            ["git", "--git-dir", str(common_dir), "index-pack", "--stdin"],
            stdin=source,
            env=child_environ({}),
            capture_output=True,
            check=False,
        )
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise QuarantineRefusedError(f"{pack.name} was refused by git: {said[-1] if said else ''}")


def _store_loose(store: Path, name: str, data: bytes) -> None:
    """Write the loose object *name* into *store* as git does, following no link."""
    root = open_unfollowed(store, _DIRECTORY)
    try:
        with contextlib.suppress(FileExistsError):
            os.mkdir(name[:2], 0o755, dir_fd=root)
        folder = open_unfollowed(name[:2], _DIRECTORY, dir_fd=root)
    finally:
        os.close(root)
    try:
        temporary = f"tmp_obj_rho_{secrets.token_hex(6)}"
        fd = open_unfollowed(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444, dir_fd=folder)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(temporary, name[2:], src_dir_fd=folder, dst_dir_fd=folder)
        except FileExistsError:
            pass  # content-addressed: the one there is the same object
        finally:
            os.unlink(temporary, dir_fd=folder)
        os.fsync(folder)
    finally:
        os.close(folder)
