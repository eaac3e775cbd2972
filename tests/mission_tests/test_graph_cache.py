"""The incremental mission graph: at every join its bytes are the full projection's.

``save_mission`` writes ``mission-graph.json`` from ``_graphcache`` (only the fragments that
changed are projected again); these tests read the file at every join of real missions, and
after random sequences of changes to a mission document, and compare it with
``dump_graph(mission_graph(mission))``.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graph import GraphValidationError, dump_graph
from rho_mission import Feature, Handoff, Mission, MissionConfig, MissionDocument, WaveJoin
from rho_mission._graphcache import MissionGraphCache
from rho_mission._projection import mission_graph

from ._helpers import ScriptedWorker, fails


class _CompareAtEveryJoin:
    """An observer that checks the file on disk against the full projection at each join."""

    def __init__(self) -> None:
        self.joins = 0

    def feature_changed(self, mission: MissionDocument, feature: Feature) -> None:
        pass

    def wave_joined(self, mission: MissionDocument, join: WaveJoin) -> None:
        on_disk = (Path(mission.dir) / "mission-graph.json").read_bytes()
        assert on_disk == dump_graph(mission_graph(mission)), f"wave {join.wave} differs"
        self.joins += 1


def _features(count: int, seed: int) -> list[Feature]:
    rng = random.Random(seed)
    features: list[Feature] = []
    for index in range(count):
        earlier = [f.id for f in features]
        blockers = rng.sample(earlier, min(len(earlier), rng.randint(0, 2)))
        features.append(
            Feature(f"f{index:02d}", f"f{index:02d}", f"do f{index:02d}", blocked_by=blockers)
        )
    return features


def test_the_graph_of_every_join_is_the_full_projection(
    repo_path: Path,
) -> None:
    mission = Mission.new(repo_path, "cache", _features(12, seed=3), MissionConfig(max_workers=3))
    watch = _CompareAtEveryJoin()
    mission.run_staged_sync(ScriptedWorker(), observer=watch)
    assert mission.status == "completed"
    assert watch.joins == len(mission.waves) >= 3


def test_failures_retries_and_a_resume_keep_the_bytes_of_the_full_projection(
    repo_path: Path,
) -> None:
    features = _features(10, seed=5)
    config = MissionConfig(max_workers=2, retries=1, keep_going=True)
    mission = Mission.new(repo_path, "cache", features, config)
    broken = {features[3].id: fails("broken"), features[6].id: fails("also broken")}
    watch = _CompareAtEveryJoin()
    mission.run_staged_sync(ScriptedWorker(broken), observer=watch)
    assert mission.status == "partial"
    resumed = Mission.load(mission.dir)  # a new process would start with an empty cache
    resumed.resume_sync(ScriptedWorker(), observer=watch)
    assert resumed.status == "completed"
    on_disk = (Path(resumed.dir) / "mission-graph.json").read_bytes()
    assert on_disk == dump_graph(mission_graph(resumed))


_CHANGES = st.lists(
    st.tuples(
        st.sampled_from(["start", "finish", "fail", "join", "retry", "text"]), st.integers(0, 7)
    ),
    max_size=25,
)


def _planned() -> MissionDocument:
    mission = MissionDocument(
        id="0badc0de",
        prompt="cache",
        dir="/nowhere/.rho/missions/0badc0de",
        repo="/nowhere",
        base_commit="a" * 40,
        integration_branch="rho-mission/0badc0de/integration",
        waves=[[f"f{i}" for i in range(4)], [f"f{i}" for i in range(4, 8)]],
        status="executing",
        started_at="2026-11-30T08:00:00.000Z",
    )
    for index in range(8):
        blockers = [f"f{index - 4}"] if index >= 4 else []
        mission.features.append(
            Feature(
                f"f{index}",
                f"f{index}",
                f"do {index}",
                blocked_by=blockers,
                branch=f"rho-mission/0badc0de/f{index}",
            )
        )
    return mission


def _apply(mission: MissionDocument, change: str, index: int, step: int) -> None:
    feature = mission.features[index]
    stamp = f"2026-11-30T08:{step // 60:02d}:{step % 60:02d}.000Z"
    if change == "start":
        feature.status, feature.started_at, feature.attempts = "in_progress", stamp, 1
    elif change == "finish":
        feature.status, feature.completed_at = "completed", stamp
        feature.handoff = Handoff(commit_id=f"{step:040x}", files_changed=["x"], summary="1")
    elif change == "fail":
        feature.status, feature.completed_at, feature.error = "failed", stamp, f"boom {step}"
    elif change == "retry":
        feature.attempts += 1
    elif change == "text":
        feature.command = f"make {step}"
    else:
        number = len(mission.wave_joins) + 1
        if number <= len(mission.waves):
            ids = sorted(mission.waves[number - 1])
            mission.wave_joins.append(
                WaveJoin(
                    wave=number,
                    feature_ids=ids,
                    completed_ids=ids[:2],
                    blocked_ids=[],
                    failed_ids=ids[2:],
                    started_at=stamp,
                    completed_at=stamp,
                    summary=f"wave {number}",
                )
            )


@settings(max_examples=60, deadline=None)
@given(changes=_CHANGES)
def test_any_sequence_of_changes_renders_the_full_projection(
    changes: list[tuple[str, int]],
) -> None:
    mission = _planned()
    cache = MissionGraphCache()
    assert cache.render(mission) == dump_graph(mission_graph(mission))
    for step, (change, index) in enumerate(changes, start=1):
        _apply(mission, change, index, step)
        assert cache.render(mission) == dump_graph(mission_graph(mission)), (step, change)


def test_a_feature_added_on_resume_redraws_every_edge() -> None:
    mission = _planned()
    cache = MissionGraphCache()
    cache.render(mission)
    mission.features.append(Feature("f8", "f8", "do 8", blocked_by=["f0", "f9"]))
    assert cache.render(mission) == dump_graph(mission_graph(mission))
    mission.features.append(Feature("f9", "f9", "do 9"))
    assert cache.render(mission) == dump_graph(mission_graph(mission))


def test_a_join_naming_an_unknown_feature_is_refused_as_the_full_projection_refuses() -> None:
    mission = _planned()
    stamp = "2026-11-30T08:05:00.000Z"
    mission.wave_joins.append(
        WaveJoin(
            wave=1,
            feature_ids=["ghost"],
            completed_ids=[],
            failed_ids=[],
            blocked_ids=[],
            started_at=stamp,
            completed_at=stamp,
            summary="",
        )
    )
    with pytest.raises(KeyError):
        mission_graph(mission)
    with pytest.raises((KeyError, GraphValidationError)):
        MissionGraphCache().render(mission)
