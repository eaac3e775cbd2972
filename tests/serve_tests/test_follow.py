"""Both SDK clients follow a mission that runs in another process, from its start to its end."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from rho_mission.client import AsyncClient, Client, MissionEvent
from support.repos import init_home_repo as make_repo
from support.rho import WAIT, gate_cmd, wait_until
from support.stores import import_tasks, mission_ids
from support.stores import spec as task

from ._world import Server, end_mission, running_server, start_mission

Seen = Callable[[MissionEvent], None]


def _follow_sync(server: Server, mission_id: str, seen: Seen) -> list[MissionEvent]:
    events = []
    with Client(server.url, server.token or "") as client:
        for event in client.follow(mission_id):
            events.append(event)
            seen(event)
    return events


def _follow_async(server: Server, mission_id: str, seen: Seen) -> list[MissionEvent]:
    async def main() -> list[MissionEvent]:
        events = []
        async with AsyncClient(server.url, server.token or "") as client:
            async for event in client.follow(mission_id):
                events.append(event)
                seen(event)
        return events

    return anyio.run(main)


def _in_thread(
    name: str, results: dict[str, Any], follow: Callable[[], list[MissionEvent]]
) -> threading.Thread:
    def target() -> None:
        try:
            results[name] = follow()
        except BaseException as exc:  # handed to the test's thread, which raises it
            results[name] = exc

    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    return thread


def _waiting_for(feature: str, event: str) -> tuple[threading.Event, Seen]:
    """An event set when a journal record *event* of *feature* arrives, and its callback."""
    arrived = threading.Event()

    def seen(item: MissionEvent) -> None:
        if item.kind == "journal" and (item.data["event"], item.data.get("feature_id")) == (
            event,
            feature,
        ):
            arrived.set()

    return arrived, seen


def test_both_clients_follow_a_running_mission_to_its_end(tmp_path: Path, home: Path) -> None:
    repo = make_repo(tmp_path / "repo", home)
    gate = tmp_path / "gate"
    import_tasks(
        repo,
        [task("task_1", gate_cmd(gate, "echo one > one.txt")), task("task_2", "true", "task_1")],
        home=home,
    )
    results: dict[str, Any] = {}
    with running_server(repo, home) as server:
        mission = start_mission(repo, home)
        try:
            wait_until(lambda: bool(mission_ids(repo)), "the mission's record")
            (mission_id,) = mission_ids(repo)
            sync_live, sync_seen = _waiting_for("task_1", "dispatch")
            async_live, async_seen = _waiting_for("task_1", "dispatch")
            threads = [
                _in_thread("sync", results, lambda: _follow_sync(server, mission_id, sync_seen)),
                _in_thread("async", results, lambda: _follow_async(server, mission_id, async_seen)),
            ]
            # Both follow while task_1 runs (it waits for the gate): what comes next is live.
            assert sync_live.wait(WAIT)
            assert async_live.wait(WAIT)
            assert mission.poll() is None
            gate.touch()
            for thread in threads:
                thread.join(WAIT)
            assert mission.wait(WAIT) == 0
        finally:
            end_mission(mission)
    assert not any(thread.is_alive() for thread in threads)
    for events in results.values():
        if isinstance(events, BaseException):
            raise events
    _check_story(results["sync"])
    _check_story(results["async"])
    assert _journal(results["sync"]) == _journal(results["async"])


def _journal(events: list[MissionEvent]) -> list[dict[str, Any]]:
    return [event.data for event in events if event.kind == "journal"]


def _check_story(events: list[MissionEvent]) -> None:
    """A snapshot first; dispatch and finish of each task in order; the end, completed, last."""
    assert events[0].kind == "mission"
    assert events[-1] == MissionEvent("end", {"status": "completed"})
    ids = [event.id or 0 for event in events if event.kind == "journal"]
    assert ids == sorted(ids)
    assert len(ids) == len(set(ids))
    steps = [
        (data["event"], data.get("feature_id"), data.get("status"))
        for data in _journal(events)
        if data["event"] in ("dispatch", "finish")
    ]
    assert steps == [
        ("dispatch", "task_1", None),
        ("finish", "task_1", "completed"),
        ("dispatch", "task_2", None),
        ("finish", "task_2", "completed"),
    ]
    last = [event.data for event in events if event.kind == "mission"][-1]
    assert last["status"] == "completed"
    assert {f["id"]: f["status"] for f in last["features"]} == {
        "task_1": "completed",
        "task_2": "completed",
    }


def _until_it_says_it_ended(server: Server, mission_id: str) -> set[str]:
    """The natural loop of a client: follow until a ``mission`` event says the run ended;
    the features whose ``finish`` it saw by then."""
    finished: set[str] = set()
    with Client(server.url, server.token or "") as client:
        for event in client.follow(mission_id):
            if event.kind == "journal" and event.data["event"] == "finish":
                finished.add(event.data["feature_id"])
            if event.kind == "mission" and event.data["status"] == "completed":
                break
    return finished


def test_a_client_that_stops_on_the_final_status_has_seen_every_finish_under_load(
    tmp_path: Path, home: Path
) -> None:
    # Before the fix: with two other missions running, the final mission event came before the
    # last feature's finish record in 2 of 2 runs.
    busy = "timeout 6 sh -c 'while :; do :; done'; true"
    others = []
    for n in (1, 2):
        busy_repo = make_repo(tmp_path / f"busy{n}", home)
        import_tasks(busy_repo, [task(f"b{i}", busy) for i in range(2)], home=home)
        others.append(start_mission(busy_repo, home))
    repo = make_repo(tmp_path / "repo", home)
    chain = [task("sdk-a", "true")]
    chain += [task(f"sdk-{c}", "true", f"sdk-{p}") for p, c in ("ab", "bc", "cd")]
    import_tasks(repo, chain, home=home)
    try:
        with running_server(repo, home) as server:
            mission = start_mission(repo, home)
            try:
                wait_until(lambda: bool(mission_ids(repo)), "the mission's record")
                (mission_id,) = mission_ids(repo)
                seen = _until_it_says_it_ended(server, mission_id)
                assert mission.wait(WAIT) == 0
            finally:
                end_mission(mission)
    finally:
        for other in others:
            end_mission(other)
    assert seen == {"sdk-a", "sdk-b", "sdk-c", "sdk-d"}
