"""The two ways rho opens its own files: never through a link, never inherited by a child.

``open_private`` (below ``.rho``: every component checked, missing folders made 0700) and
``open_unfollowed`` (a file whose folder rho trusts: only its own name may be a planted link).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from rho_mission import UnsafePathError
from rho_mission.containment._folders import open_private, open_unfollowed


def test_open_unfollowed_refuses_a_link_at_the_name(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("the user's file")
    (tmp_path / "lock").symlink_to(target)
    with pytest.raises(OSError, match="Too many levels of symbolic links") as caught:
        open_unfollowed(tmp_path / "lock", os.O_RDWR | os.O_CREAT)
    assert caught.value.errno == errno.ELOOP
    assert target.read_text() == "the user's file"


def test_open_unfollowed_makes_a_private_descriptor_no_child_inherits(tmp_path: Path) -> None:
    fd = open_unfollowed(tmp_path / "lock", os.O_RDWR | os.O_CREAT)
    try:
        assert not os.get_inheritable(fd)
        assert stat.S_IMODE(os.fstat(fd).st_mode) == 0o600 & ~_umask()
    finally:
        os.close(fd)


def test_open_unfollowed_opens_relative_to_a_folder(tmp_path: Path) -> None:
    (tmp_path / "plan.json").write_text("{}")
    folder = open_unfollowed(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fd = open_unfollowed("plan.json", os.O_RDONLY, dir_fd=folder)
        assert os.read(fd, 10) == b"{}"
        os.close(fd)
    finally:
        os.close(folder)


def test_open_private_refuses_a_swapped_folder_below_rho(tmp_path: Path) -> None:
    elsewhere = tmp_path / "checkout"
    elsewhere.mkdir()
    mission = tmp_path / ".rho" / "missions" / "m1"
    mission.mkdir(parents=True)
    (mission / "logs").symlink_to(elsewhere)
    with pytest.raises(UnsafePathError, match="symbolic link"):
        open_private(mission / "logs" / "a.log", os.O_WRONLY | os.O_CREAT)
    assert list(elsewhere.iterdir()) == []


def _append(path: Path, text: str) -> None:
    fd = open_private(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def test_open_private_refuses_a_folder_swapped_after_an_earlier_open(tmp_path: Path) -> None:
    # The first open holds the folder (no walk per log line); a swap made after it
    # is still refused, and nothing is written through the link or into the moved folder.
    elsewhere = tmp_path / "checkout"
    elsewhere.mkdir()
    logs = tmp_path / ".rho" / "missions" / "m1" / "logs"
    _append(logs / "a.log", "one\n")
    _append(logs / "a.log", "two\n")  # through the held folder
    assert (logs / "a.log").read_text() == "one\ntwo\n"
    logs.rename(logs.with_name("moved"))
    logs.symlink_to(elsewhere)
    with pytest.raises(UnsafePathError, match="symbolic link"):
        _append(logs / "a.log", "three\n")
    assert list(elsewhere.iterdir()) == []
    assert (logs.with_name("moved") / "a.log").read_text() == "one\ntwo\n"
    # A real folder made in its place is rho's again: the next line goes there.
    logs.unlink()
    logs.mkdir()
    _append(logs / "a.log", "four\n")
    assert (logs / "a.log").read_text() == "four\n"
    assert (logs.with_name("moved") / "a.log").read_text() == "one\ntwo\n"
    # A link planted at the file's own name is refused too, the held folder or not.
    (logs / "b.log").symlink_to(elsewhere / "target")
    with pytest.raises(UnsafePathError):
        _append(logs / "b.log", "five\n")
    assert not (elsewhere / "target").exists()


def test_open_private_makes_missing_folders_0700_and_the_file_0600(tmp_path: Path) -> None:
    path = tmp_path / ".rho" / "missions" / "m1" / "logs" / "a.log"
    fd = open_private(path, os.O_WRONLY | os.O_CREAT)
    try:
        assert not os.get_inheritable(fd)
    finally:
        os.close(fd)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
