"""journal.jsonl's appends: opened once without following a link, then held. A task
that plants a link at the journal, or at its mission folder, never gets rho's lines written
where the link points. Real files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rho_mission._errors import UnsafePathError
from rho_mission.records._journal import Journal


def _mission_folder(root: Path) -> Path:
    folder = root / ".rho" / "missions" / "m1"
    folder.mkdir(parents=True)
    return folder


def _events(path: Path) -> list[tuple[int, str]]:
    return [(line["seq"], line["event"]) for line in map(json.loads, path.read_text().splitlines())]


@pytest.mark.parametrize("planted_at", ["journal.jsonl", "the mission folder"])
def test_appends_after_a_link_is_planted_go_to_the_file_rho_made(
    tmp_path: Path, planted_at: str
) -> None:
    folder = _mission_folder(tmp_path / "repo")
    path = folder / "journal.jsonl"
    journal = Journal(path)
    journal.record("mission", "2026-12-03T00:00:00Z")
    kept = tmp_path / "kept.jsonl"
    os.link(path, kept)  # the file rho made, whatever happens to its name
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = elsewhere / "journal.jsonl"
    target.write_text("")
    if planted_at == "journal.jsonl":
        path.unlink()
        path.symlink_to(target)
    else:
        os.rename(folder, tmp_path / "moved")
        folder.symlink_to(elsewhere)
    journal.record("dispatch", "2026-12-03T00:00:01Z", durable=True)
    assert target.read_text() == ""
    assert _events(kept) == [(1, "mission"), (2, "dispatch")]


def test_a_link_planted_before_the_first_append_is_refused_and_followed_nowhere(
    tmp_path: Path,
) -> None:
    folder = _mission_folder(tmp_path / "repo")
    target = tmp_path / "target.jsonl"
    target.write_text("")
    (folder / "journal.jsonl").symlink_to(target)
    with pytest.raises(UnsafePathError):
        Journal(folder / "journal.jsonl").record("mission", "2026-12-03T00:00:00Z")
    assert target.read_text() == ""


def test_a_journal_opened_again_goes_on_counting_after_the_lines_there(tmp_path: Path) -> None:
    # A resume appends after what the interrupted run wrote, through a descriptor of its own.
    path = _mission_folder(tmp_path / "repo") / "journal.jsonl"
    first = Journal(path)
    first.record("mission", "2026-12-03T00:00:00Z")
    first.record("dispatch", "2026-12-03T00:00:01Z")
    del first
    Journal(path).record("resume", "2026-12-03T00:00:02Z")
    assert _events(path) == [(1, "mission"), (2, "dispatch"), (3, "resume")]
