"""The incremental mission files: at every join their bytes are the full dump's.

``save_mission`` writes ``mission-graph.json`` from ``records._graphcache`` (only the fragments that
changed are projected again) and ``mission.json`` from ``records._missionbytes`` (only the features
that changed are dumped again), with the parts of features noted as they ended made before the join;
these tests read both files at every join of real missions, and render after random sequences of
changes to a mission document, and compare them with ``dump_graph(mission_graph(mission))`` and
``mission.model_dump_json(indent=2)``.
"""

from __future__ import annotations

import json
import os
import random
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graph import GraphValidationError, dump_graph
from rho_mission import (
    Feature,
    Handoff,
    Mission,
    MissionConfig,
    MissionDocument,
    WaveJoin,
)
from rho_mission.records import _persist
from rho_mission.records._document import Conflict, FeatureSetup, Verification
from rho_mission.records._graphcache import MissionGraphCache
from rho_mission.records._missionbytes import (
    FeatureKey,
    JoinKey,
    MissionTextCache,
    feature_key,
    join_key,
)
from rho_mission.records._persist import save_mission
from rho_mission.records._projection import mission_graph
from rho_mission.records._usage import AttemptUsage, UsageTotal
from support.library import ScriptedWorker, fails
from taskstore import stage_atomic, write_atomic


class _CompareAtEveryJoin:
    """An observer that checks the file on disk against the full projection at each join."""

    def __init__(self) -> None:
        self.joins = 0

    def feature_changed(self, mission: MissionDocument, feature: Feature) -> None:
        pass

    def wave_joined(self, mission: MissionDocument, join: WaveJoin) -> None:
        on_disk = (Path(mission.dir) / "mission-graph.json").read_bytes()
        assert on_disk == dump_graph(mission_graph(mission)), f"wave {join.wave} differs"
        record = (Path(mission.dir) / "mission.json").read_text()
        assert record == mission.model_dump_json(indent=2) + "\n", f"wave {join.wave} differs"
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
        st.sampled_from(
            [
                "start",
                "finish",
                "fail",
                "join",
                "unjoin",
                "retry",
                "text",
                "note",
                "block",
                "file",
                "revert",
            ]
        ),
        st.integers(0, 7),
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
    elif change == "block":  # changed in place, not by assignment: keys must still tell
        feature.blocked_by.append(f"f{(index + step) % 8}")
    elif change == "file":  # the same, one level down
        if feature.handoff is not None:
            feature.handoff.files_changed.append(f"file{step}")
    elif change == "note":
        pass  # the engine's note of a feature's end: made by the caller (it holds the cache)
    elif change == "unjoin":  # a resume runs the last joined wave again
        if mission.wave_joins:
            mission.wave_joins.pop()
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


def _revert(mission: MissionDocument, rendered: MissionDocument, index: int) -> None:
    """Set every field of feature *index* back to what it was in *rendered* (a copy taken at
    the last render): the parts made for it since (a note) are then not the rendered ones."""
    feature, before = mission.features[index], rendered.features[index]
    for name in Feature.model_fields:
        setattr(feature, name, before.model_copy(deep=True).__dict__[name])


@settings(max_examples=80, deadline=None)
@given(changes=_CHANGES)
def test_any_sequence_of_changes_renders_the_full_projection(
    changes: list[tuple[str, int]],
) -> None:
    mission = _planned()
    graph, text = MissionGraphCache(), MissionTextCache()

    def keys() -> list[FeatureKey]:
        return [feature_key(feature) for feature in mission.features]

    def join_keys() -> list[JoinKey]:
        return [join_key(join) for join in mission.wave_joins]

    assert graph.render(mission) == dump_graph(mission_graph(mission))
    assert (
        text.render(mission, keys(), join_keys())
        == (mission.model_dump_json(indent=2) + "\n").encode()
    )
    rendered = mission.model_copy(deep=True)
    for step, (change, index) in enumerate(changes, start=1):
        if change == "revert":
            _revert(mission, rendered, index)
        else:
            _apply(mission, change, index, step)
        if change == "note":
            _note(graph, text, mission, index)
            continue  # a note is followed by more changes, or by the render of a join
        assert graph.render(mission) == dump_graph(mission_graph(mission)), (step, change)
        full = (mission.model_dump_json(indent=2) + "\n").encode()
        assert text.render(mission, keys(), join_keys()) == full, (step, change)
        rendered = mission.model_copy(deep=True)
    assert graph.render(mission) == dump_graph(mission_graph(mission))
    assert (
        text.render(mission, keys(), join_keys())
        == (mission.model_dump_json(indent=2) + "\n").encode()
    )


def _note(
    graph: MissionGraphCache, text: MissionTextCache, mission: MissionDocument, index: int
) -> None:
    """What ``records._persist.note_feature_end`` does for feature *index*."""
    feature = mission.features[index]
    graph.prepare_feature(mission, feature, feature_key(feature))
    text.feature_text(feature, feature_key(feature))


def _render_both(
    graph: MissionGraphCache, text: MissionTextCache, mission: MissionDocument
) -> tuple[bytes, bytes]:
    keys = [feature_key(feature) for feature in mission.features]
    join_keys = [join_key(join) for join in mission.wave_joins]
    return graph.render(mission, keys, join_keys), text.render(mission, keys, join_keys)


def _full(mission: MissionDocument) -> tuple[bytes, bytes]:
    return dump_graph(mission_graph(mission)), (mission.model_dump_json(indent=2) + "\n").encode()


def _rendered_then_finished() -> tuple[
    MissionDocument, MissionGraphCache, MissionTextCache, MissionDocument
]:
    """A mission rendered once by both caches, a copy of it as rendered, then feature 5 ended."""
    mission = _planned()
    graph, text = MissionGraphCache(), MissionTextCache()
    _render_both(graph, text, mission)
    rendered = mission.model_copy(deep=True)
    _apply(mission, "finish", 5, 1)
    return mission, graph, text, rendered


def test_a_feature_noted_then_set_back_as_rendered_is_made_again() -> None:
    # A render looks only at features whose key changed since the last one, and at those whose
    # parts were made since: the note made feature 5's parts for its end, not for its key now.
    mission, graph, text, rendered = _rendered_then_finished()
    _note(graph, text, mission, 5)
    _revert(mission, rendered, 5)
    assert _render_both(graph, text, mission) == _full(mission)


def test_a_render_that_failed_half_way_leaves_no_part_taken_for_rendered() -> None:
    mission, graph, text, rendered = _rendered_then_finished()
    mission.wave_joins.append(_ghost_join())  # made after the features: they are made first
    with pytest.raises((KeyError, GraphValidationError)):
        _render_both(graph, text, mission)
    mission.wave_joins.pop()
    _revert(mission, rendered, 5)
    assert _render_both(graph, text, mission) == _full(mission)


def test_the_graph_goes_back_in_time_when_its_latest_end_goes() -> None:
    # A render takes the features' latest end from the last render's and those that changed,
    # unless a changed one held it: a resume runs the feature that ended last again.
    mission = _planned()
    graph = MissionGraphCache()
    _apply(mission, "finish", 1, 5)
    _apply(mission, "finish", 2, 9)
    assert graph.render(mission) == dump_graph(mission_graph(mission))
    feature = mission.features[2]
    feature.status, feature.completed_at, feature.handoff = "pending", None, None
    rendered = graph.render(mission)
    assert rendered == dump_graph(mission_graph(mission))
    assert json.loads(rendered)["generated_at"] == "2026-11-30T08:00:05.000Z"


def test_text_beyond_ascii_is_written_as_the_full_dump_writes_it() -> None:
    # Each item of mission.json is kept as UTF-8 bytes and the file is one join of them.
    mission = _planned()
    mission.prompt = "répare le café ☕ — vite"
    mission.features[0].subject = "naïve 🙂"
    graph, text = MissionGraphCache(), MissionTextCache()
    assert _render_both(graph, text, mission) == _full(mission)
    mission.features[5].error = "échec: « guillemets » \u2028 ligne"
    mission.features[6].description = "日本語のテキスト"
    assert _render_both(graph, text, mission) == _full(mission)


def test_a_changed_plan_of_waves_makes_every_state_again() -> None:
    mission = _planned()
    graph, text = MissionGraphCache(), MissionTextCache()
    _render_both(graph, text, mission)
    mission.waves = [[f"f{i}" for i in range(8)]]  # no feature changed: each one's wave did
    assert _render_both(graph, text, mission) == _full(mission)


def test_a_feature_added_on_resume_redraws_every_edge() -> None:
    mission = _planned()
    cache = MissionGraphCache()
    cache.render(mission)
    mission.features.append(Feature("f8", "f8", "do 8", blocked_by=["f0", "f9"]))
    assert cache.render(mission) == dump_graph(mission_graph(mission))
    mission.features.append(Feature("f9", "f9", "do 9"))
    assert cache.render(mission) == dump_graph(mission_graph(mission))


def _ghost_join() -> WaveJoin:
    """A wave join naming a feature the mission does not have."""
    stamp = "2026-11-30T08:05:00.000Z"
    return WaveJoin(
        wave=1,
        feature_ids=["ghost"],
        completed_ids=[],
        failed_ids=[],
        blocked_ids=[],
        started_at=stamp,
        completed_at=stamp,
        summary="",
    )


def test_a_join_naming_an_unknown_feature_is_refused_as_the_full_projection_refuses() -> None:
    mission = _planned()
    mission.wave_joins.append(_ghost_join())
    with pytest.raises(KeyError):
        mission_graph(mission)
    with pytest.raises((KeyError, GraphValidationError)):
        MissionGraphCache().render(mission)


@pytest.mark.parametrize(
    "edit",
    [
        lambda f: f.blocked_by.append("f1"),
        lambda f: f.handoff.files_changed.append("y"),
        lambda f: setattr(f.handoff, "summary", "edited in place"),
        lambda f: setattr(f.handoff, "tests_passed", True),
    ],
    ids=["blockers", "files changed", "handoff summary", "handoff tests"],
)
def test_a_feature_changed_in_place_is_dumped_and_projected_again(
    edit: Callable[[Feature], None],
) -> None:
    mission = _planned()
    graph, text = MissionGraphCache(), MissionTextCache()
    _apply(mission, "finish", 5, 1)
    graph.render(mission)
    text.render(mission, [feature_key(f) for f in mission.features], [])
    edit(mission.features[5])  # the same list, the same handoff object: only its content moved
    assert graph.render(mission) == dump_graph(mission_graph(mission))
    full = (mission.model_dump_json(indent=2) + "\n").encode()
    assert text.render(mission, [feature_key(f) for f in mission.features], []) == full


def test_every_field_of_a_feature_is_in_its_key() -> None:
    base = _planned().features[4]
    base.handoff = Handoff(commit_id="c" * 40, files_changed=["x"], summary="1")
    changed = {
        "id": "other",
        "subject": "other",
        "description": "other",
        "command": "other",
        "blocked_by": ["f0", "f1"],
        "priority": 0,
        "branch": "rho-mission/0badc0de/other",
        "status": "failed",
        "attempts": 7,
        "error": "other",
        "handoff": None,
        "started_at": "2026-11-30T09:00:00.000Z",
        "completed_at": "2026-11-30T09:00:00.000Z",
        "log": "logs/other.log",
        "conflict": Conflict(paths=["x"], with_=["f1"]),
        "usage": UsageTotal(cost_usd=0.5, attempts=1),
        "attempt_usage": [AttemptUsage(attempt=1, source="usage_file", cost_usd=0.5)],
        "setup": FeatureSetup(worktree="pool-abc123-1", outcome="reused", key="0" * 16),
        "culprit_replays": 2,
    }
    assert sorted(changed) == sorted(Feature.model_fields), "a new field: add it here"
    for name, value in changed.items():
        other = base.model_copy(update={name: value})
        assert feature_key(other) != feature_key(base), name


def test_usage_recorded_in_place_changes_the_key() -> None:
    # The engine records an attempt's usage into the feature's list as the attempt ends.
    feature = _planned().features[4]
    kept = feature_key(feature)
    feature.attempt_usage.append(AttemptUsage(attempt=1, problem="unread"))
    assert feature_key(feature) != kept
    kept = feature_key(feature)
    feature.record_usage(AttemptUsage(attempt=1, source="agent", agent="codex", input_tokens=3))
    assert feature_key(feature) != kept


def test_a_conflict_changed_in_place_changes_the_key() -> None:
    # The engine fills a feature's conflict in as the ladder goes (outcome, reason, counts).
    feature = _planned().features[4]
    feature.conflict = Conflict(paths=["x"], with_=["f1"])
    kept = feature_key(feature)
    for change in (
        lambda c: setattr(c, "outcome", "resolved"),
        lambda c: setattr(c, "reason", "why"),
        lambda c: setattr(c, "replays", 1),
        lambda c: c.paths.append("y"),
        lambda c: c.with_.append("f2"),
    ):
        assert feature.conflict is not None
        change(feature.conflict)
        assert feature_key(feature) != kept
        kept = feature_key(feature)


def _saved_here(folder: Path) -> MissionDocument:
    mission = _planned()
    mission.dir = str(folder)
    folder.mkdir(parents=True)
    return mission


def _drain_the_writer() -> None:
    _persist._writer().submit(int).result()  # after what was queued before: the unlink


def test_the_replaced_graph_goes_once_the_save_is_done(tmp_path: Path) -> None:
    mission = _saved_here(tmp_path / "m")
    save_mission(mission)
    _apply(mission, "finish", 1, 1)
    save_mission(mission)
    _drain_the_writer()
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == [
        "mission-graph.json",
        "mission.json",
    ]
    on_disk = (tmp_path / "m" / "mission-graph.json").read_bytes()
    assert on_disk == dump_graph(mission_graph(mission))


def test_both_replaced_files_keep_a_second_name_until_the_writer_unlinks_them(
    tmp_path: Path,
) -> None:
    # Their blocks are freed by the writer thread after the save, not inside its renames.
    folder = tmp_path / "m"
    folder.mkdir()
    names = ("mission.json", "mission-graph.json")
    for name in names:
        write_atomic(folder / name, b"before\n")
    release = threading.Event()
    held = _persist._writer().submit(release.wait)
    try:
        _persist._commit_in_order([stage_atomic(folder / name, b"after\n") for name in names])
        for name in names:
            assert (folder / name).read_bytes() == b"after\n"
            assert (folder / f".{name}.replaced").read_bytes() == b"before\n"
    finally:
        release.set()
        held.result()
    _drain_the_writer()
    assert sorted(p.name for p in folder.iterdir()) == sorted(names)


def test_a_second_name_left_by_a_crash_is_removed_by_the_next_save(tmp_path: Path) -> None:
    mission = _saved_here(tmp_path / "m")
    save_mission(mission)
    leftover = tmp_path / "m" / ".mission-graph.json.replaced"
    leftover.write_bytes(b"the graph before a kill -9")
    save_mission(mission)
    _drain_the_writer()
    assert not leftover.exists()
    on_disk = (tmp_path / "m" / "mission-graph.json").read_bytes()
    assert on_disk == dump_graph(mission_graph(mission))


def test_a_failed_write_of_mission_json_leaves_the_graph_as_it_was(tmp_path: Path) -> None:
    mission = _saved_here(tmp_path / "m")
    save_mission(mission)
    before = (tmp_path / "m" / "mission-graph.json").read_bytes()
    record = tmp_path / "m" / "mission.json"
    record.unlink()
    (record / "in the way").mkdir(parents=True)  # a folder with files: no rename over it
    _apply(mission, "finish", 2, 1)
    with pytest.raises(IsADirectoryError):
        save_mission(mission)
    assert (tmp_path / "m" / "mission-graph.json").read_bytes() == before
    _drain_the_writer()
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == [
        "mission-graph.json",
        "mission.json",
    ]  # no temporary file left behind


@pytest.mark.parametrize(
    "edit",
    [
        lambda j: j.completed_ids.append("f9"),
        lambda j: setattr(j, "summary", "edited in place"),
        lambda j: setattr(j.verification, "status", "failed"),
        lambda j: setattr(j.verification, "fix_attempts", 2),
    ],
    ids=["completed ids", "summary", "verification status", "fix attempts"],
)
def test_a_wave_join_changed_in_place_is_dumped_and_projected_again(
    edit: Callable[[WaveJoin], None],
) -> None:
    mission = _planned()
    graph, text = MissionGraphCache(), MissionTextCache()
    _apply(mission, "join", 0, 1)
    _apply(mission, "join", 0, 2)

    def render() -> bytes:
        keys = [feature_key(f) for f in mission.features]
        return text.render(mission, keys, [join_key(j) for j in mission.wave_joins])

    graph.render(mission)
    render()
    edit(mission.wave_joins[0])  # the same join object: only its content moved
    assert graph.render(mission) == dump_graph(mission_graph(mission))
    assert render() == (mission.model_dump_json(indent=2) + "\n").encode()


def test_every_field_of_a_wave_join_is_in_its_key() -> None:
    mission = _planned()
    _apply(mission, "join", 0, 1)
    base = mission.wave_joins[0]
    changed = {
        "wave": 7,
        "feature_ids": ["f9"],
        "completed_ids": ["f9"],
        "failed_ids": ["f9"],
        "cancelled_ids": ["f9"],
        "blocked_ids": ["f9"],
        "not_run_ids": ["f9"],
        "conflicted_ids": ["f9"],
        "started_at": "2026-11-30T09:00:00.000Z",
        "completed_at": "2026-11-30T09:00:00.000Z",
        "summary": "other",
        "verification": Verification(status="failed"),
        "usage": UsageTotal(cost_usd=1.5, attempts=2, unknown=1),
    }
    assert sorted(changed) == sorted(WaveJoin.model_fields), "a new field: add it here"
    for name, value in changed.items():
        assert join_key(base.model_copy(update={name: value})) != join_key(base), name
    # The verification's fields are copied one level deep (its lists into tuples): a list
    # changed in place leaves a key already kept as it was.
    for name, field in Verification.model_fields.items():
        assert str(field.annotation) == "list[str]" or "list" not in str(field.annotation), name
    culprits = base.model_copy(deep=True)
    kept = join_key(culprits)
    culprits.verification.culprit_ids.append("f9")
    assert join_key(culprits) != kept


def test_a_forked_child_saves_with_a_writer_of_its_own(tmp_path: Path) -> None:
    mission = _saved_here(tmp_path / "m")
    save_mission(mission)  # the parent's writer thread exists now
    pid = os.fork()
    if pid == 0:  # the child: its copy of the writer has no thread behind it
        code = 1
        try:
            _apply(mission, "finish", 3, 1)
            save_mission(mission)
            on_disk = (tmp_path / "m" / "mission-graph.json").read_bytes()
            code = 0 if on_disk == dump_graph(mission_graph(mission)) else 1
        finally:
            os._exit(code)
    deadline = time.monotonic() + 60
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    if done[0] == 0:  # a save waiting on a thread the fork did not copy: it never ends
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        pytest.fail("the child's save hung")
    assert os.waitstatus_to_exitcode(done[1]) == 0


def test_a_join_whose_files_cannot_be_made_raises_as_save_mission_does(tmp_path: Path) -> None:
    mission = _saved_here(tmp_path / "m")
    save_mission(mission)
    before = {p.name: p.read_bytes() for p in (tmp_path / "m").iterdir()}
    mission.wave_joins.append(_ghost_join())  # no graph can be made of it
    written: list[str] = []

    async def store_write() -> None:
        await anyio.sleep(0.2)
        written.append("store")

    with pytest.raises((KeyError, GraphValidationError)):  # bare, not in an exception group
        anyio.run(_persist.save_mission_after, mission, store_write)
    assert written == ["store"]  # the store's write was not cut short
    assert {p.name: p.read_bytes() for p in (tmp_path / "m").iterdir()} == before


def test_a_join_puts_its_files_in_place_only_once_the_store_is_written(tmp_path: Path) -> None:
    mission = _saved_here(tmp_path / "m")
    save_mission(mission)
    folder = tmp_path / "m"
    before = {name: (folder / name).read_bytes() for name in ("mission.json", "mission-graph.json")}
    _apply(mission, "finish", 2, 1)
    seen_by_the_store: list[dict[str, bytes]] = []

    async def store_write() -> None:
        await anyio.sleep(0.3)  # the files are made and staged meanwhile
        seen_by_the_store.append({name: (folder / name).read_bytes() for name in before})

    anyio.run(_persist.save_mission_after, mission, store_write)
    assert seen_by_the_store == [before]  # neither file was in place before the store
    assert _full(mission) == (
        (folder / "mission-graph.json").read_bytes(),
        (folder / "mission.json").read_bytes(),
    )
    _drain_the_writer()
    assert sorted(p.name for p in folder.iterdir()) == ["mission-graph.json", "mission.json"]


def test_a_join_whose_store_write_failed_leaves_its_files_and_nothing_staged(
    tmp_path: Path,
) -> None:
    mission = _saved_here(tmp_path / "m")
    save_mission(mission)
    _drain_the_writer()
    before = {p.name: p.read_bytes() for p in (tmp_path / "m").iterdir()}
    _apply(mission, "finish", 2, 1)

    async def store_write() -> None:
        await anyio.sleep(0.3)  # the files are staged by now
        raise OSError("the store could not be written")

    with pytest.raises(Exception, match="the store could not be written"):
        anyio.run(_persist.save_mission_after, mission, store_write)
    assert {p.name: p.read_bytes() for p in (tmp_path / "m").iterdir()} == before
