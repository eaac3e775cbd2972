"""`stage_atomic` and `StagedFile`: the two halves of `write_atomic`, on a real folder."""

from __future__ import annotations

import errno
import stat
from pathlib import Path
from typing import NoReturn

import pytest

from taskstore import stage_atomic, write_atomic


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

    def no_space(*args: object) -> NoReturn:
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
