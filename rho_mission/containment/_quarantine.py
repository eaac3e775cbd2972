"""A sandboxed task's new objects: a quarantine of its own, checked and moved in after it ends.

Under ``--sandbox`` the repository's object store is read-only to a task: it cannot overwrite
the loose object of a committed file (forged history), delete the packs (destroyed history),
or plant links in ``objects/XX`` for rho's own git to write through. A task still commits (an
agent does): inside its sandbox, ``<common dir>/objects`` is a quarantine folder of its own,
writable, whose ``info/alternates`` names a read-only view of the real store (what
``receive-pack`` does with ``GIT_OBJECT_DIRECTORY``, done with a mount instead of a variable,
so that a ``git clone`` the task runs for its own work is not redirected too).

After the task ends rho reads the quarantine itself, never following a link, and refuses it
whole (the attempt fails: ``QuarantineRefusedError``) unless everything in it is sound:

- a loose object (``XX/<hex>``) is a regular file that inflates, streamed and bounded, to a
  known type, a size written as git writes it, exactly that many bytes and nothing after, and
  hashes to its name;
- a pack (``pack/pack-<hex>.pack``) is a regular file;
- a link, a device or a fifo where an object would be, a folder where a file would be, or
  more than ``QUARANTINE_LIMIT`` bytes in all (on disk, and inflated) refuses it.

Other names (a ``tmp_obj_`` a killed git left, the task's ``.idx`` and ``.keep`` files,
``info/``) are left out. Then git itself admits what passed, as it admits a push: the loose
objects go to ``git unpack-objects --strict`` as one pack rho builds from them (git hashes each
again, checks trees and commits as ``fsck`` does, and writes them as loose objects); each pack
to ``git index-pack --strict --stdin`` (its own index made, the task's never used). Objects git
wrote before it refused a later one are sound ones. The quarantine is then deleted, even one
the task made read-only; one a crashed rho left (its pid in its name, no longer alive) is
deleted by the next that makes one.

Decision: docs/decisions/0705-sandbox.md
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import stat
import struct
import subprocess
import tempfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from .._errors import QuarantineRefusedError
from ._environ import child_environ
from ._folders import open_unfollowed, private_folder, remove_tree
from ._gitconfig import check_config
from ._helpers import OWN_GROUP, run_continued
from ._pids import pid_alive

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
_PACK_TYPES = {b"commit": 1, b"tree": 2, b"blob": 3, b"tag": 4}
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
        if owner.isdigit() and not pid_alive(int(owner)):
            _remove_tree(parent / name)


def _alternates_of(store: Path) -> list[str]:
    try:
        text = (store / "info" / "alternates").read_text(encoding="utf-8")
    except OSError:
        return []
    lines = [line.strip() for line in text.splitlines()]
    return [str(store / line) for line in lines if line and not line.startswith("#")]


def admit(quarantine: Quarantine, common_dir: Path) -> int:
    """Check everything *quarantine* holds and have git admit it into the store; the count of
    loose objects and packs admitted. The quarantine is deleted either way.

    Raises:
        QuarantineRefusedError: something in it is not a sound object.
        GitConfigChangedError: git's configuration changed (no git ran).
    """
    try:
        loose, packs = _checked_contents(quarantine.folder)
        if loose:
            _unpack(quarantine.folder, loose, common_dir)
        for pack in packs:
            _index_pack(pack, common_dir)
        return len(loose) + len(packs)
    except OSError as exc:  # a folder or file the task made unreadable
        raise QuarantineRefusedError(f"it cannot be read: {exc.strerror}") from exc
    finally:
        discard(quarantine)


def discard(quarantine: Quarantine) -> None:
    """Delete *quarantine*, even where the task took the write bit from a folder of it."""
    _remove_tree(quarantine.folder)


def _remove_tree(path: Path) -> None:
    # Links removed, never followed; a folder the task took the write bit from gets it back;
    # a tree of any depth (the one remover of what a task may fill).
    remove_tree(path, writable=True)


class _Budget:
    """What one attempt may still add: bytes on disk and inflated, ``QUARANTINE_LIMIT`` each."""

    def __init__(self) -> None:
        self.stored = QUARANTINE_LIMIT
        self.inflated = QUARANTINE_LIMIT

    def store(self, size: int) -> None:
        self.stored -= size
        if self.stored < 0:
            raise QuarantineRefusedError(f"its objects exceed {QUARANTINE_LIMIT} bytes")

    def inflate(self, size: int) -> None:
        self.inflated -= size
        if self.inflated < 0:
            raise QuarantineRefusedError(f"its objects exceed {QUARANTINE_LIMIT} bytes inflated")


def _checked_contents(folder: Path) -> tuple[list[str], list[Path]]:
    """The names of *folder*'s loose objects, each checked, and its pack files, sorted."""
    loose: list[str] = []
    packs: list[Path] = []
    budget = _Budget()
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


def _loose_in(root: int, prefix: str, budget: _Budget) -> list[str]:
    found: list[str] = []
    folder = _open_folder(root, prefix)
    try:
        for name in sorted(os.listdir(folder)):
            if _LOOSE_NAME.match(name):
                shown = f"{prefix}/{name}"
                budget.store(_regular_size(folder, shown))
                with _open_object(folder, name) as handle:
                    digest, _, _ = _inflate(handle, prefix + name, budget)
                if digest != prefix + name:
                    raise QuarantineRefusedError(
                        f"object {prefix + name} is not what its name says (forged)"
                    )
                found.append(prefix + name)
    finally:
        os.close(folder)
    return found


def _packs_in(root: int, path: Path, budget: _Budget) -> list[Path]:
    folder = _open_folder(root, "pack")
    try:
        names = sorted(name for name in os.listdir(folder) if _PACK_NAME.match(name))
        for name in names:
            budget.store(_regular_size(folder, f"pack/{name}"))
    finally:
        os.close(folder)
    return [path / name for name in names]


def _open_folder(root: int, name: str) -> int:
    try:
        return open_unfollowed(name, _DIRECTORY, dir_fd=root)
    except OSError as exc:  # a link (ELOOP) or a file (ENOTDIR) where a folder goes
        raise QuarantineRefusedError(f"{name} is not a folder") from exc


def _regular_size(folder: int, shown: str) -> int:
    found = os.stat(shown.rpartition("/")[2], dir_fd=folder, follow_symlinks=False)
    if not stat.S_ISREG(found.st_mode):
        raise QuarantineRefusedError(f"{shown} is not a regular file")
    return found.st_size


def _open_object(folder: int, name: str) -> IO[bytes]:
    return os.fdopen(open_unfollowed(name, os.O_RDONLY, dir_fd=folder), "rb")


def _inflate(
    handle: IO[bytes],
    name: str,
    budget: _Budget,
    sink: Callable[[bytes], None] | None = None,
    on_header: Callable[[bytes, int], None] | None = None,
) -> tuple[str, bytes, int]:
    """Inflate the loose object in *handle*, bounded and streamed: its hash, its type, its size.

    *on_header* gets its type and size once read; *sink* its content as it comes.

    Raises:
        QuarantineRefusedError: it is no git object as git writes one.
    """
    inflater = zlib.decompressobj()
    digest = hashlib.sha1() if len(name) == 40 else hashlib.sha256()
    header = b""
    kind, size, seen = b"", -1, 0
    try:
        for piece in _pieces(handle, inflater):
            digest.update(piece)
            if size < 0:
                header += piece
                kind, size, piece = _parse_header(header, name)
                if size < 0:
                    continue
                if on_header is not None:
                    on_header(kind, size)
            seen += len(piece)
            budget.inflate(len(piece))
            if seen > size:
                break
            if sink is not None:
                sink(piece)
    except zlib.error as exc:
        raise QuarantineRefusedError(f"object {name} is no git object") from exc
    if size < 0 or seen != size or not inflater.eof or inflater.unused_data or handle.read(1):
        raise QuarantineRefusedError(f"object {name} is not the size its header says")
    return digest.hexdigest(), kind, size


def _pieces(handle: IO[bytes], inflater: zlib._Decompress) -> Iterator[bytes]:
    # The inflated bytes in pieces of at most _CHUNK, the input read _CHUNK at a time: no
    # piece of input is copied more than once (unconsumed_tail stays below _CHUNK).
    while not inflater.eof:
        data = handle.read(_CHUNK)
        if not data:
            return
        while data and not inflater.eof:
            piece = inflater.decompress(data, _CHUNK)
            data = inflater.unconsumed_tail
            if piece:
                yield piece
        if inflater.eof and data:
            return  # what follows the stream: unused_data, refused by the caller


def _parse_header(header: bytes, name: str) -> tuple[bytes, int, bytes]:
    """(type, size, the content after the header) once *header* holds its NUL; size -1 before."""
    head, nul, rest = header.partition(b"\0")
    if not nul:
        if len(head) > 32:
            raise QuarantineRefusedError(f"object {name} is no git object")
        return b"", -1, b""
    kind, _, size_text = head.partition(b" ")
    canonical = size_text.isdigit() and (size_text == b"0" or not size_text.startswith(b"0"))
    if kind not in _TYPES or not canonical:
        raise QuarantineRefusedError(f"object {name} is no git object")
    size = int(size_text)
    if size > QUARANTINE_LIMIT:
        raise QuarantineRefusedError(f"object {name} says it exceeds {QUARANTINE_LIMIT} bytes")
    return kind, size, rest


def _unpack(folder: Path, names: list[str], common_dir: Path) -> None:
    """Give the checked loose objects *names* to ``git unpack-objects --strict`` as one pack."""
    check_config(common_dir)
    command = ["git", "--git-dir", str(common_dir), "unpack-objects", "-q", "--strict"]
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=errors,
            env=child_environ({}),
            process_group=OWN_GROUP,
        )
        assert process.stdin is not None
        try:
            _write_pack(folder, names, process.stdin)
        except BrokenPipeError:
            pass  # git refused before the end: its words follow
        finally:
            process.stdin.close()
        code = process.wait()
        errors.seek(0)
        said = errors.read().decode("utf-8", "replace").strip().splitlines()
    check_config(common_dir)
    if code != 0:
        raise QuarantineRefusedError(f"git refused its objects: {said[-1] if said else ''}")


def _write_pack(folder: Path, names: list[str], out: IO[bytes]) -> None:
    # Pack version 2: a header, each object as its type and size then its deflated content,
    # and the SHA-1 of all of it.
    trailer = hashlib.sha1()

    def write(data: bytes) -> None:
        trailer.update(data)
        out.write(data)

    write(b"PACK" + struct.pack(">II", 2, len(names)))
    budget = _Budget()
    for name in names:
        sub = open_unfollowed(folder / name[:2], _DIRECTORY)
        try:
            with _open_object(sub, name[2:]) as handle:
                _write_entry(handle, name, budget, write)
        finally:
            os.close(sub)
    out.write(trailer.digest())


def _write_entry(
    handle: IO[bytes], name: str, budget: _Budget, write: Callable[[bytes], None]
) -> None:
    # The object's header opens its pack entry; its content follows, deflated again.
    deflater = zlib.compressobj(1)

    def opening(kind: bytes, size: int) -> None:
        write(_entry_header(_PACK_TYPES[kind], size))

    _inflate(
        handle, name, budget, sink=lambda piece: write(deflater.compress(piece)), on_header=opening
    )
    write(deflater.flush())


def _entry_header(kind: int, size: int) -> bytes:
    first = (kind << 4) | (size & 0x0F)
    size >>= 4
    out = bytearray()
    while size:
        out.append(first | 0x80)
        first = size & 0x7F
        size >>= 7
    out.append(first)
    return bytes(out)


def _index_pack(pack: Path, common_dir: Path) -> None:
    # git re-hashes and checks every object of the pack and writes it, with an index of its
    # own making, into the store; the pack is read through a descriptor opened without a link.
    check_config(common_dir)
    fd = open_unfollowed(pack, os.O_RDONLY)
    with os.fdopen(fd, "rb") as source:
        command = ["git", "--git-dir", str(common_dir), "index-pack", "--strict", "--stdin"]
        code, _, err = run_continued(command, child_environ({}), source)
    check_config(common_dir)
    if code != 0:
        said = err.decode("utf-8", "replace").strip().splitlines()
        raise QuarantineRefusedError(f"{pack.name} was refused by git: {said[-1] if said else ''}")
