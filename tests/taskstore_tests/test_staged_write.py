"""`stage_atomic` and `StagedFile`: the two halves of `write_atomic`, on a real folder; and
`commit_in_order`, several staged files put in place with one fsync per folder."""

from __future__ import annotations

import errno
import stat
from pathlib import Path
from typing import NoReturn

import pytest

import taskstore._atomic as taskstore_atomic
from taskstore import commit_in_order, stage_atomic, write_atomic


def _names(folder: Path) -> set[str]:
    return {path.name for path in folder.iterdir()}


def test_staged_contents_are_beside_the_file_until_committed(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    write_atomic(target, b"old\n")
    staged = stage_atomic(target, b"new\n")
    assert target.read_bytes() == b"old\n"
    (temp,) = _names(tmp_path) - {"state.json"}
    assert temp.startswith(".state.json.")
    assert temp.endswith(".tmp")
    assert stat.S_IMODE((tmp_path / temp).stat().st_mode) == 0o600
    staged.commit()
    assert target.read_bytes() == b"new\n"
    assert _names(tmp_path) == {"state.json"}
    staged.discard()  # after a commit: nothing to remove
    assert target.read_bytes() == b"new\n"


def test_discarded_contents_leave_the_file_and_no_trace(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    write_atomic(target, b"old\n")
    stage_atomic(target, b"new\n").discard()
    assert target.read_bytes() == b"old\n"
    assert _names(tmp_path) == {"state.json"}


def test_a_staged_file_is_committed_once(tmp_path: Path) -> None:
    staged = stage_atomic(tmp_path / "state.json", b"one\n")
    staged.commit()
    with pytest.raises(RuntimeError, match="committed or discarded already"):
        staged.commit()


def test_a_refused_rename_removes_the_staged_contents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fault injection: os.replace in taskstore._atomic raises ENOSPC."""
    target = tmp_path / "state.json"
    write_atomic(target, b"old\n")
    staged = stage_atomic(target, b"new\n")

    def no_space(*args: object, **kwargs: object) -> NoReturn:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("taskstore._atomic.os.replace", no_space)
    with pytest.raises(OSError, match="No space left"):
        staged.commit()
    assert target.read_bytes() == b"old\n"
    assert _names(tmp_path) == {"state.json"}


def test_a_folder_that_is_missing_stages_nothing(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        stage_atomic(tmp_path / "gone" / "state.json", b"x")
    assert _names(tmp_path) == set()


def test_files_committed_in_order_share_one_fsync_per_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A spy on taskstore._atomic._fsync_dir (the real one still runs) records, at each folder
    fsync, what the files hold: every rename is done before the first one."""
    other = tmp_path / "other"
    other.mkdir()
    targets = [tmp_path / "a.json", tmp_path / "b.json", other / "c.json"]
    for target in targets:
        write_atomic(target, b"old\n")
    staged = [stage_atomic(target, b"new\n") for target in targets]
    flushed: list[tuple[Path, list[bytes]]] = []
    real = taskstore_atomic._fsync_dir

    def spy(folder: Path, fd: int) -> None:
        flushed.append((folder, [target.read_bytes() for target in targets]))
        real(folder, fd)

    monkeypatch.setattr(taskstore_atomic, "_fsync_dir", spy)
    commit_in_order(staged)
    assert [folder for folder, _ in flushed] == [tmp_path, other]
    assert all(held == [b"new\n"] * 3 for _, held in flushed)
    assert _names(tmp_path) == {"a.json", "b.json", "other"}
    assert _names(other) == {"c.json"}


def test_a_refused_rename_in_order_leaves_that_file_and_later_ones(tmp_path: Path) -> None:
    first, second, third = (tmp_path / name for name in ("a.json", "b", "c.json"))
    write_atomic(first, b"old\n")
    write_atomic(third, b"old\n")
    second.mkdir()
    (second / "in the way").touch()  # a folder with a file: no rename over it
    staged = [
        stage_atomic(first, b"new\n"),
        stage_atomic(second, b"x"),
        stage_atomic(third, b"new\n"),
    ]
    with pytest.raises(IsADirectoryError):
        commit_in_order(staged)
    assert first.read_bytes() == b"new\n"  # renamed before the refusal, and flushed
    assert third.read_bytes() == b"old\n"
    assert _names(tmp_path) == {"a.json", "b", "c.json"}  # no staged contents left
