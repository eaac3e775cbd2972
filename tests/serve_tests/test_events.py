"""The event stream's reader on real mission folders: what it sends, when it ends."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import anyio
import pytest

from rho_mission._errors import UnsafePathError
from rho_mission.serve._events import MissionFollower, event_stream, sse_frame

from ._world import World


@pytest.fixture
def folder(world: World, tmp_path: Path) -> Path:
    """A copy of the world's finished mission folder, free to change."""
    copy = tmp_path / world.mission_id
    shutil.copytree(world.mission_dir, copy)
    return copy


def _kinds(frames: list[str]) -> list[str]:
    return [frame.split("event: ", 1)[1].split("\n", 1)[0] for frame in frames]


def test_a_frame_is_an_id_an_event_and_one_data_line() -> None:
    assert sse_frame("journal", '{"seq":3}', 3) == 'id: 3\nevent: journal\ndata: {"seq":3}\n\n'
    assert sse_frame("end", "{}") == "event: end\ndata: {}\n\n"


def test_a_finished_mission_is_sent_whole_then_ends(folder: Path) -> None:
    follower = MissionFollower(folder)
    frames = follower.look()
    lines = (folder / "journal.jsonl").read_text().splitlines()
    assert _kinds(frames) == ["journal"] * len(lines) + ["mission"]
    assert follower.ended
    assert follower.look() == []  # nothing changed
    assert follower.final_frames() == [sse_frame("end", json.dumps({"status": "partial"}))]


def test_a_reconnection_goes_on_after_the_last_event_id(folder: Path) -> None:
    frames = MissionFollower(folder, after=3).look()
    assert frames[0].startswith("id: 4\nevent: journal\n")


def test_a_mission_event_comes_after_every_journal_record_written_before_it(
    folder: Path,
) -> None:
    # Before the fix: under load the final "mission" event (completed) arrived before the last
    # feature's "finish" record, and a client that stopped there missed that feature.
    record = json.loads((folder / "mission.json").read_text())
    record["status"] = "executing"
    (folder / "mission.json").write_text(json.dumps(record))
    follower = MissionFollower(folder)
    follower.look()
    with (folder / "journal.jsonl").open("a") as handle:  # the engine: the end, then the file
        handle.write('{"at": "2026-01-01T00:00:00Z", "event": "finish", "seq": 90}\n')
    record["status"] = "completed"
    replacement = folder / "mission.json.new"
    replacement.write_text(json.dumps(record))
    os.replace(replacement, folder / "mission.json")

    frames = follower.look()

    assert _kinds(frames) == ["journal", "mission"]
    assert json.loads(frames[0].split("data: ", 1)[1])["event"] == "finish"


def test_a_torn_line_waits_for_its_end(folder: Path) -> None:
    journal = folder / "journal.jsonl"
    follower = MissionFollower(folder)
    follower.look()
    with journal.open("a") as handle:
        handle.write('{"at": "2026-01-01T00:00:00Z", "event": "no')
    assert follower.look() == []
    with journal.open("a") as handle:
        handle.write('te", "seq": 99}\n')
    (frame,) = follower.look()
    assert json.loads(frame.split("data: ", 1)[1])["event"] == "note"


def test_a_replaced_mission_json_is_sent_again(folder: Path) -> None:
    follower = MissionFollower(folder)
    follower.look()
    record = json.loads((folder / "mission.json").read_text())
    record["status"] = "executing"
    replacement = folder / "mission.json.new"
    replacement.write_text(json.dumps(record, indent=2))
    os.replace(replacement, folder / "mission.json")
    assert _kinds(follower.look()) == ["mission"]
    assert follower.status == "executing"
    assert not follower.ended


def _without_the_journals_end(folder: Path) -> None:
    journal = folder / "journal.jsonl"
    lines = journal.read_text().splitlines()
    journal.write_text("\n".join(line for line in lines if '"event": "mission"' not in line) + "\n")


def test_a_final_record_whose_journal_never_says_so_ends_when_quiet(folder: Path) -> None:
    _without_the_journals_end(folder)
    old = time.time() - 60  # a copy, an old folder: no run writes there
    os.utime(folder / "mission.json", (old, old))
    follower = MissionFollower(folder)
    follower.look()
    assert not follower.ended
    for _ in range(5):
        follower.look()
    assert follower.ended


def test_a_fresh_final_record_waits_for_the_journals_end_however_quiet(folder: Path) -> None:
    # A loaded machine may write the journal's last records a while after mission.json: the
    # stream must not end before they are sent.
    _without_the_journals_end(folder)
    os.utime(folder / "mission.json")  # written just now (the copy kept the old time)
    follower = MissionFollower(folder)
    for _ in range(10):
        follower.look()
    assert not follower.ended
    with (folder / "journal.jsonl").open("a") as journal:
        journal.write(json.dumps({"seq": 99, "event": "finish", "feature_id": "late"}) + "\n")
        journal.write(json.dumps({"seq": 100, "event": "mission", "status": "partial"}) + "\n")
    frames = follower.look()
    assert _kinds(frames) == ["journal", "journal"]
    assert follower.ended


def test_a_removed_folder_ends_the_stream(folder: Path) -> None:
    follower = MissionFollower(folder)
    record = json.loads((folder / "mission.json").read_text())
    record["status"] = "executing"
    (folder / "mission.json").write_text(json.dumps(record))
    follower.look()
    assert not follower.ended
    shutil.rmtree(folder)
    assert follower.look() == []
    assert follower.ended


def test_a_journal_that_is_a_link_is_refused(folder: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_text('{"event": "dispatch", "seq": 1}\n')
    (folder / "journal.jsonl").unlink()
    os.symlink(elsewhere, folder / "journal.jsonl")
    with pytest.raises(UnsafePathError, match=r"journal\.jsonl: it is a symbolic link"):
        MissionFollower(folder).look()


def test_a_link_planted_at_mission_json_ends_the_stream_with_an_error_event(
    folder: Path, tmp_path: Path
) -> None:
    record = json.loads((folder / "mission.json").read_text())
    record["status"] = "executing"
    (folder / "mission.json").write_text(json.dumps(record))
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps(record))

    async def follow() -> list[str]:
        frames: list[str] = []
        async for frame in event_stream(folder, poll=0.01, keepalive=60):
            frames.append(frame)
            if len(frames) == 1:  # mission.json was sent: now a link takes its place
                (folder / "mission.json").unlink()
                (folder / "mission.json").symlink_to(elsewhere)
        return frames

    frames = anyio.run(follow)
    assert _kinds(frames[-2:]) == ["error", "end"]
    error = json.loads(frames[-2].split("data: ", 1)[1])
    assert "is a symbolic link" in error["error"]
    assert json.loads(frames[-1].split("data: ", 1)[1]) == {"status": "executing"}
