"""The object quarantine of a sandboxed attempt, checked and admitted by rho (no sandbox here:
what a task could leave in it is made by hand, and ``admit`` is called as rho calls it); and
the host mask's kept look at the home folder."""

from __future__ import annotations

import hashlib
import os
import re
import socket
import subprocess
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

from rho_mission._errors import QuarantineRefusedError
from rho_mission.containment._hostmask import host_mask
from rho_mission.containment._quarantine import Quarantine, admit, discard, open_quarantine
from support.repos import run_git


@pytest.fixture
def common(make_repo: Callable[[str, int], Path]) -> Path:
    return make_repo("repo", 2) / ".git"


def _quarantine(common: Path) -> Quarantine:
    return open_quarantine(common / "rho-quarantine", common, common / "objects")


def _loose(body: bytes, kind: bytes = b"blob") -> tuple[str, bytes]:
    raw = kind + b" " + str(len(body)).encode() + b"\0" + body
    return hashlib.sha1(raw).hexdigest(), zlib.compress(raw)


def _put(quarantine: Quarantine, name: str, data: bytes) -> Path:
    folder = quarantine.folder / name[:2]
    folder.mkdir(exist_ok=True)
    path = folder / name[2:]
    path.write_bytes(data)
    return path


def _has(common: Path, name: str) -> bool:
    done = subprocess.run(
        ["git", "--git-dir", str(common), "cat-file", "-e", name], capture_output=True, check=False
    )
    return done.returncode == 0


def test_a_sound_loose_object_is_moved_into_the_store(common: Path) -> None:
    quarantine = _quarantine(common)
    name, data = _loose(b"new work\n")
    _put(quarantine, name, data)
    assert admit(quarantine, common) == 1
    assert _has(common, name)
    assert not quarantine.folder.exists()
    run_git(common.parent, "fsck", "--strict", "--no-dangling")


def test_an_object_whose_hash_is_not_its_name_is_refused_and_nothing_enters(common: Path) -> None:
    quarantine = _quarantine(common)
    good, good_data = _loose(b"fine\n")
    name, _ = _loose(b"line 0\n")  # the name of a committed file's blob
    _put(quarantine, good, good_data)
    _, forged = _loose(b"EVIL\n")
    _put(quarantine, name, forged)
    before = (common / "objects" / name[:2] / name[2:]).read_bytes()
    message = (
        f"the task's new git objects were refused: object {name} is not what its name says (forged)"
    )
    with pytest.raises(QuarantineRefusedError, match=f"^{re.escape(message)}$"):
        admit(quarantine, common)
    assert (common / "objects" / name[:2] / name[2:]).read_bytes() == before
    assert not _has(common, good)
    assert not quarantine.folder.exists()


@pytest.mark.parametrize(
    ("plant", "problem"),
    [
        (lambda q, out: (q.folder / "ab").symlink_to(out), "ab is not a folder"),
        (
            lambda q, out: os.mkfifo(q.folder / "ab" / ("c" * 38)),
            f"ab/{'c' * 38} is not a regular file",
        ),
        (
            lambda q, out: (q.folder / "ab" / ("d" * 38)).symlink_to(out / "x"),
            f"ab/{'d' * 38} is not a regular file",
        ),
        (
            lambda q, out: (q.folder / "ab" / ("e" * 38)).write_bytes(b"junk"),
            f"object ab{'e' * 38} is no git object",
        ),
    ],
)
def test_what_is_no_object_refuses_the_whole_quarantine(
    common: Path,
    tmp_path: Path,
    plant: Callable[[Quarantine, Path], None],
    problem: str,
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    quarantine = _quarantine(common)
    if not problem.startswith("ab is"):
        (quarantine.folder / "ab").mkdir()
    plant(quarantine, outside)
    with pytest.raises(QuarantineRefusedError, match=re.escape(problem)):
        admit(quarantine, common)
    assert list(outside.iterdir()) == []


def test_a_pack_is_admitted_through_git_and_a_corrupt_one_refused(
    common: Path, tmp_path: Path
) -> None:
    work = tmp_path / "other"
    run_git(tmp_path, "init", "--quiet", str(work))
    (work / "f.txt").write_text("packed\n")
    run_git(work, "add", "f.txt")
    run_git(work, "commit", "--quiet", "--message=other")
    run_git(work, "repack", "-a", "-d", "-q")
    [pack] = (work / ".git" / "objects" / "pack").glob("*.pack")
    commit = run_git(work, "rev-parse", "HEAD").strip()
    quarantine = _quarantine(common)
    (quarantine.folder / "pack").mkdir()
    (quarantine.folder / "pack" / pack.name).write_bytes(pack.read_bytes())
    assert admit(quarantine, common) == 1
    assert _has(common, commit)
    broken = _quarantine(common)
    (broken.folder / "pack").mkdir()
    data = bytearray(pack.read_bytes())
    data[len(data) // 2] ^= 0xFF
    (broken.folder / "pack" / pack.name).write_bytes(bytes(data))
    with pytest.raises(QuarantineRefusedError, match="was refused by git"):
        admit(broken, common)


def test_the_quarantine_of_a_dead_process_is_swept(common: Path) -> None:
    # No process has pid 999999999 (above Linux's largest pid_max, 2**22).
    dead = common / "rho-quarantine" / "q-999999999-abcdef"
    dead.mkdir(parents=True)
    live = _quarantine(common)
    assert not dead.exists()
    assert live.folder.exists()


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (zlib.compress(b"blob 3\0hi\n") + b"junk", "is not the size its header says"),
        (zlib.compress(b"blob 03\0hi\n"), "is no git object"),
        (zlib.compress(b"blob 4\0hi\n"), "is not the size its header says"),
        (zlib.compress(b"blob 2\0hi\n"), "is not the size its header says"),
        (zlib.compress(b"blob 3\0hi\n")[:-3], "is not the size its header says"),
        (zlib.compress(b"blob 3 hi\n" + b"x" * 40), "is no git object"),
    ],
    ids=["data after the stream", "a size git never writes", "short", "long", "cut", "no NUL"],
)
def test_an_object_git_would_not_read_is_refused(common: Path, data: bytes, problem: str) -> None:
    quarantine = _quarantine(common)
    name = hashlib.sha1(zlib.decompressobj().decompress(data)).hexdigest()
    _put(quarantine, name, data)
    with pytest.raises(QuarantineRefusedError, match=re.escape(problem)):
        admit(quarantine, common)
    assert not _has(common, name)


def test_a_malformed_tree_is_refused_by_git(common: Path) -> None:
    quarantine = _quarantine(common)
    name, data = _loose(b"100644 f\0" + b"\x01" * 5, kind=b"tree")  # an id of 5 bytes, not 20
    _put(quarantine, name, data)
    with pytest.raises(
        QuarantineRefusedError, match=r"^the task's new git objects were refused: git refused"
    ):
        admit(quarantine, common)


def test_a_large_object_is_checked_in_one_pass(common: Path) -> None:
    body = os.urandom(8 << 20)  # incompressible: what made an unbounded inflate quadratic
    quarantine = _quarantine(common)
    name, data = _loose(body)
    _put(quarantine, name, data)
    assert admit(quarantine, common) == 1
    assert _has(common, name)


def test_a_quarantine_the_task_made_read_only_is_still_deleted(common: Path) -> None:
    quarantine = _quarantine(common)
    name, data = _loose(b"kept?\n")
    path = _put(quarantine, name, data)
    path.parent.chmod(0o500)
    quarantine.folder.chmod(0o500)
    assert admit(quarantine, common) == 1
    assert not quarantine.folder.exists()


def test_a_quarantine_thousands_of_folders_deep_and_read_only_is_deleted(common: Path) -> None:
    # A task's objects folder filled with a deep tree whose folders lost their write bit:
    # removed by descriptor without recursion (rmtree raised RecursionError), write bits back.
    quarantine = _quarantine(common)
    here = os.open(quarantine.folder, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(3000):
        os.mkdir("d", dir_fd=here)
        below = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=here)
        os.fchmod(here, 0o500)
        os.close(here)
        here = below
    os.close(here)
    discard(quarantine)
    assert not quarantine.folder.exists()


def test_the_host_mask_sees_a_socket_made_after_its_last_look(tmp_path: Path) -> None:
    # The look is kept while the folders it listed are unchanged; a new socket changes one.
    home = tmp_path / "home"
    (home / ".agent").mkdir(parents=True)
    assert host_mask(home).files == ()
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(home / ".agent" / "agent.sock"))
        assert host_mask(home).files == (home / ".agent" / "agent.sock",)
    finally:
        server.close()
