"""The library as pipelines use it: plain workers, resume_sync, optional and checked waves."""

from __future__ import annotations

import threading
from pathlib import Path

import anyio
import pytest

from rho_mission import Feature, InvalidMissionError, Mission, MissionError, WorkerContext
from support.library import fails, git_out, tracked_files


def _mission(repo: Path, *features: Feature) -> Mission:
    return Mission.new(repo, "pipeline", list(features))


def test_a_plain_worker_runs_in_a_thread_of_its_own(repo_path: Path) -> None:
    threads: list[int] = []

    def worker(ctx: WorkerContext) -> None:  # not async: no await anywhere
        threads.append(threading.get_ident())
        (ctx.worktree / f"{ctx.feature.id}.txt").write_text("plain\n", encoding="utf-8")

    mission = _mission(repo_path, Feature("a"), Feature("b", blocked_by=["a"]))
    mission.run_staged_sync(worker)

    assert mission.status == "completed"
    assert threading.get_ident() not in threads
    assert {"a.txt", "b.txt"} <= set(tracked_files(repo_path, mission.integration_branch))


def test_resume_sync_finishes_what_failed(repo_path: Path) -> None:
    calls: list[str] = []

    def worker(ctx: WorkerContext) -> None:
        calls.append(ctx.feature.id)
        if ctx.feature.id == "b" and calls.count("b") == 1:
            raise OSError("disk on fire")

    mission = _mission(repo_path, Feature("a"), Feature("b", blocked_by=["a"]))
    mission.run_staged_sync(worker)
    assert (mission.status, mission.feature("b").error) == ("partial", "OSError: disk on fire")

    again = Mission.load(mission.dir)
    again.resume_sync(worker)

    assert again.status == "completed"
    assert calls == ["a", "b", "b"]


def test_the_sync_calls_refuse_to_run_inside_an_event_loop(repo_path: Path) -> None:
    mission = _mission(repo_path, Feature("a", command="true"))

    async def inside() -> None:
        with pytest.raises(MissionError, match=r"^run_staged_sync cannot run inside a running"):
            mission.run_staged_sync()
        with pytest.raises(MissionError, match=r"^resume_sync cannot run inside a running"):
            mission.resume_sync()

    anyio.run(inside)
    assert not Path(mission.dir).exists()


def test_waves_come_from_blocked_by_when_not_given(repo_path: Path) -> None:
    mission = _mission(
        repo_path,
        Feature("d", blocked_by=["b", "c"]),
        Feature("c", blocked_by=["a"]),
        Feature("b", blocked_by=["a"]),
        Feature("a"),
    )
    mission.run_staged_sync(lambda ctx: None)

    assert mission.waves == [["a"], ["b", "c"], ["d"]]
    assert [join.feature_ids for join in mission.wave_joins] == mission.waves


@pytest.mark.parametrize(
    ("waves", "message"),
    [
        ([["a", "b"]], 'feature "b" runs in wave 1 but its blocker "a" runs in wave 1'),
        ([["b"], ["a"]], 'feature "b" runs in wave 1 but its blocker "a" runs in wave 2'),
        ([["b"]], 'feature "b" is blocked by "a", which is in no staged wave'),
    ],
)
def test_waves_that_run_a_feature_before_its_blocker_are_refused(
    repo_path: Path, waves: list[list[str]], message: str
) -> None:
    mission = _mission(repo_path, Feature("a"), Feature("b", blocked_by=["a"]))

    with pytest.raises(InvalidMissionError) as refused:
        mission.run_staged_sync(lambda ctx: None, waves=waves)

    assert str(refused.value) == message
    assert not Path(mission.dir).exists()
    assert git_out(repo_path, "branch", "--list", "rho-mission/*") == ""


def test_a_cycle_in_blocked_by_is_refused_with_the_validators_words(repo_path: Path) -> None:
    mission = _mission(repo_path, Feature("a", blocked_by=["b"]), Feature("b", blocked_by=["a"]))

    with pytest.raises(InvalidMissionError) as refused:
        mission.run_staged_sync(fails("never runs"))

    assert str(refused.value) == (
        "invalid feature graph: cycle detected in blocking task dependency graph: a -> b -> a"
    )
