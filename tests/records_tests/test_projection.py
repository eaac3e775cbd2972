"""The projections onto the portable graph: task stores and missions."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import graph
from rho_mission import Feature, Handoff, WaveJoin, mission_graph, task_store_graph
from rho_mission.records._document import MissionDocument
from support.library import sha256
from taskstore import Dependency, Task, TaskStore

M = "0123abcd"
T0 = "2026-01-02T03:04:00Z"


def at(minute: int) -> str:
    return f"2026-01-02T03:{minute:02d}:00Z"


# -- the task store ------------------------------------------------------------------------------


def _task(task_id: str, subject: str, *links: tuple[str, str], **extra: str) -> Task:
    dependencies = [Dependency(target_id=target, type=kind) for kind, target in links]
    return Task(
        id=task_id,
        subject=subject,
        status=extra.get("status", "pending"),
        dependencies=dependencies,
        created_at=T0,
        updated_at=extra.get("updated_at", T0),
    )


def _tasks() -> list[Task]:
    return [
        _task("t1", "Subject SecretOne", status="completed", updated_at=at(9)),
        _task(
            "t2",
            "two",
            ("blocks", "t1"),
            ("related", "t3"),
            ("related", "ghost"),
            ("blocks", "gone"),
            ("related", "t2"),
        ),
        _task("t1.1", "child", ("parent-child", "t1")),
        _task("t3", "three"),
    ]


def test_tasks_become_metadata_only_nodes() -> None:
    doc = task_store_graph(_tasks())

    assert [(n.id, n.kind) for n in doc.nodes] == [
        (f"rho/task/{i}", "execution") for i in ("t1", "t1.1", "t2", "t3")
    ]
    first = doc.nodes[0].attributes
    assert first == {
        "entity_type": "task",
        "status": "completed",
        "attempts": "0",
        "dependency_count": "0",
        "blocker_count": "0",
        "subject_sha256": sha256("Subject SecretOne"),
        "description_sha256": sha256(""),
        "data_classification": "metadata_only",
    }
    assert all(n.attributes["data_classification"] == "metadata_only" for n in doc.nodes)
    assert b"SecretOne" not in graph.dump_graph(doc)
    assert {(e.id, e.type, e.subject.id) for e in doc.events} == {
        (f"rho/event/task/{i}/created", "created", f"rho/task/{i}")
        for i in ("t1", "t1.1", "t2", "t3")
    } | {("rho/event/task/t1/transitioned", "transitioned", "rho/task/t1")}
    assert doc.generated_at == at(9)


def test_task_links_become_typed_edges_and_missing_targets_are_skipped() -> None:
    doc = task_store_graph(_tasks())

    edges = {(e.kind, e.source.id, e.target.id, e.attributes["dependency_type"]) for e in doc.edges}
    assert edges == {
        ("depends_on", "rho/task/t2", "rho/task/t1", "blocks"),
        ("references", "rho/task/t2", "rho/task/t3", "related"),
        ("contains", "rho/task/t1", "rho/task/t1.1", "parent-child"),
    }
    assert len(doc.edges) == 3


def test_the_task_graph_validates_and_is_reproducible(tmp_path: Path) -> None:
    store = TaskStore(tmp_path / "tasks.json")
    first = store.add("first")
    store.add("second", blocked_by=[first.id], related=[first.id])
    store.add("child", parent=first.id)

    once = graph.dump_graph(task_store_graph(store.tasks()))
    assert graph.dump_graph(task_store_graph(store.tasks())) == once
    assert graph.dump_graph(task_store_graph(store.tasks()[::-1])) == once
    assert graph.validate_graph(task_store_graph(store.tasks())).fact_count == 3 + 3 + 3


def test_an_empty_store_projects_to_an_empty_graph() -> None:
    doc = task_store_graph([])
    assert (doc.nodes, doc.edges, doc.events) == ([], [], [])
    assert doc.generated_at == "1970-01-01T00:00:00Z"


# -- the mission ---------------------------------------------------------------------------------


def _feature(feature_id: str, status: str, **data: object) -> Feature:
    feature = Feature(feature_id, f"do {feature_id}", branch=f"rho-mission/{M}/{feature_id}")
    feature.status = status  # type: ignore[assignment]
    for key, value in data.items():
        setattr(feature, key, value)
    return feature


def _mission() -> MissionDocument:
    handoff = Handoff(commit_id="c" * 40, files_changed=["a.txt"], summary="1 file(s) changed")
    features = [
        _feature(
            "a", "completed", attempts=1, handoff=handoff, started_at=at(5), completed_at=at(6)
        ),
        _feature("b", "failed", attempts=2, error="boom", command="make b", completed_at=at(7)),
        _feature("c", "pending", blocked_by=["a", "b"]),
    ]
    join = WaveJoin(
        wave=1,
        feature_ids=["a", "b"],
        completed_ids=["a"],
        failed_ids=["b"],
        blocked_ids=["c"],
        started_at=at(5),
        completed_at=at(8),
        summary="wave 1 joined 2 feature(s), 1 completed, 1 failed, 1 downstream blocked",
    )
    return MissionDocument(
        id=M,
        prompt="the prompt",
        dir=f"/somewhere/.rho/missions/{M}",
        repo="/somewhere",
        base_commit="b" * 40,
        integration_branch=f"rho-mission/{M}/integration",
        features=features,
        waves=[["a", "b"], ["c"]],
        wave_joins=[join],
        status="partial",
        started_at=T0,
        completed_at=at(9),
    )


def test_the_mission_graph_has_the_ids_of_design_section_4() -> None:
    doc = mission_graph(_mission())

    feature = f"rho/mission-feature/{M}"
    assert [(n.id, n.kind) for n in doc.nodes] == [
        (f"rho/mission-feature/{M}/a", "execution"),
        (f"rho/mission-feature/{M}/b", "execution"),
        (f"rho/mission-feature/{M}/c", "execution"),
        (f"rho/mission-wave/{M}/1", "operations"),
        (f"rho/mission/{M}", "execution"),
    ]
    edges = {(e.id, e.kind, e.source.id, e.target.id) for e in doc.edges}
    assert {e for e in edges if e[1] != "depends_on"} == {
        (f"rho/edge/mission/{M}/contains/{f}", "contains", f"rho/mission/{M}", f"{feature}/{f}")
        for f in "abc"
    } | {
        (
            f"rho/edge/mission/{M}/produced-wave/1",
            "produced",
            f"rho/mission/{M}",
            f"rho/mission-wave/{M}/1",
        ),
    } | {
        (
            f"rho/edge/mission-wave/{M}/1/contains/{f}",
            "contains",
            f"rho/mission-wave/{M}/1",
            f"{feature}/{f}",
        )
        for f in "ab"
    }
    depends = {(e[2], e[3]) for e in edges if e[1] == "depends_on"}
    assert depends == {(f"{feature}/c", f"{feature}/a"), (f"{feature}/c", f"{feature}/b")}
    assert all(
        e.attributes == {"dependency_type": "blocks"} for e in doc.edges if e.kind == "depends_on"
    )


def test_the_mission_graph_events_follow_the_run() -> None:
    doc = mission_graph(_mission())

    created = f"rho/event/mission/{M}/created"
    events = [(e.id, e.type, e.subject.id, e.occurred_at, e.causation_id) for e in doc.events]
    assert events == [
        (
            f"rho/event/mission-feature/{M}/a/transitioned",
            "transitioned",
            f"rho/mission-feature/{M}/a",
            at(6),
            created,
        ),
        (
            f"rho/event/mission-feature/{M}/b/transitioned",
            "transitioned",
            f"rho/mission-feature/{M}/b",
            at(7),
            created,
        ),
        (
            f"rho/event/mission-wave/{M}/1/observed",
            "observed",
            f"rho/mission-wave/{M}/1",
            at(8),
            created,
        ),
        (created, "created", f"rho/mission/{M}", T0, None),
        (f"rho/event/mission/{M}/transitioned", "transitioned", f"rho/mission/{M}", at(9), created),
    ]
    assert {e.correlation_id for e in doc.events} == {M}
    assert doc.generated_at == at(9)


def test_mission_graph_attributes_are_counts_statuses_and_digests() -> None:
    mission = _mission()
    nodes = {n.id: n.attributes for n in mission_graph(mission).nodes}

    assert nodes[f"rho/mission/{M}"] == {
        "entity_type": "mission",
        "status": "partial",
        "feature_count": "3",
        "completed_count": "1",
        "failed_count": "1",
        "wave_count": "1",
        "planned_wave_count": "2",
        "max_workers": "4",
        "prompt_sha256": sha256("the prompt"),
        "base_commit_sha256": sha256("b" * 40),
        "integration_branch_sha256": sha256(f"rho-mission/{M}/integration"),
        "data_classification": "metadata_only",
    }
    assert nodes[f"rho/mission-feature/{M}/b"] == {
        "entity_type": "mission_feature",
        "status": "failed",
        "attempts": "2",
        "wave": "1",
        "blocker_count": "0",
        "description_sha256": sha256("do b"),  # expected behaviour: the same text, not repeated
        "branch_sha256": sha256(f"rho-mission/{M}/b"),
        "command_sha256": sha256("make b"),
        "error_sha256": sha256("boom"),
        "data_classification": "metadata_only",
    }
    a = nodes[f"rho/mission-feature/{M}/a"]
    assert (a["commit_sha256"], a["files_changed_count"]) == (sha256("c" * 40), "1")
    assert nodes[f"rho/mission-feature/{M}/c"]["wave"] == "2"
    assert nodes[f"rho/mission-wave/{M}/1"] == {
        "entity_type": "wave_join",
        "status": "partial",
        "wave": "1",
        "feature_count": "2",
        "completed_count": "1",
        "failed_count": "1",
        "cancelled_count": "0",
        "blocked_count": "1",
        "data_classification": "metadata_only",
    }


@pytest.mark.parametrize("clear", ["the prompt", "/somewhere", "make b", "boom", "do a", "b" * 40])
def test_the_mission_graph_never_holds_text_in_clear(clear: str) -> None:
    assert clear.encode() not in graph.dump_graph(mission_graph(_mission()))


def test_the_same_mission_projects_to_the_same_bytes() -> None:
    mission = _mission()
    once = graph.dump_graph(mission_graph(mission))
    assert graph.dump_graph(mission_graph(mission)) == once
    assert graph.dump_graph(mission_graph(mission.model_copy(deep=True))) == once
    reread = MissionDocument.model_validate_json(mission.model_dump_json())
    assert graph.dump_graph(mission_graph(reread)) == once


def test_a_planned_mission_projects_without_waves_or_transitions() -> None:
    mission = _mission()
    mission.wave_joins = []
    mission.status = "planning"
    mission.started_at = mission.completed_at = None
    for feature in mission.features:
        feature.status, feature.started_at, feature.completed_at = "pending", None, None
        feature.handoff = None
    doc = mission_graph(mission)

    assert doc.generated_at == "1970-01-01T00:00:00Z"
    assert [e.type for e in doc.events] == ["created"]
    assert not any(n.kind == "operations" for n in doc.nodes)


# -- as Rho builds them: entity types, join statuses, transitions, tests_passed -------------------


def test_every_node_names_its_entity_type() -> None:
    mission_nodes = mission_graph(_mission()).nodes
    task_nodes = task_store_graph(_tasks()).nodes
    assert {n.id: n.attributes["entity_type"] for n in mission_nodes} == {
        f"rho/mission/{M}": "mission",
        f"rho/mission-feature/{M}/a": "mission_feature",
        f"rho/mission-feature/{M}/b": "mission_feature",
        f"rho/mission-feature/{M}/c": "mission_feature",
        f"rho/mission-wave/{M}/1": "wave_join",
    }
    assert {n.attributes["entity_type"] for n in task_nodes} == {"task"}


@pytest.mark.parametrize(
    ("completed", "failed", "cancelled", "status"),
    [
        (["a", "b"], [], [], "completed"),
        ([], [], [], "completed"),
        (["a"], ["b"], [], "partial"),
        (["a"], [], ["b"], "partial"),
        ([], ["a", "b"], [], "failed"),
        ([], ["a"], ["b"], "failed"),
        ([], [], ["a", "b"], "failed"),
    ],
)
def test_a_wave_join_is_completed_partial_or_failed(
    completed: list[str], failed: list[str], cancelled: list[str], status: str
) -> None:
    mission = _mission()
    join = mission.wave_joins[0]
    join.completed_ids, join.failed_ids, join.cancelled_ids = completed, failed, cancelled
    nodes = {n.id: n.attributes for n in mission_graph(mission).nodes}
    assert nodes[f"rho/mission-wave/{M}/1"]["status"] == status


def test_wave_count_is_the_joins_recorded_and_planned_wave_count_the_plan() -> None:
    mission = _mission()
    mission.waves = [["a"], ["b"], ["c"]]
    mission.wave_joins = []
    root = {n.id: n.attributes for n in mission_graph(mission).nodes}[f"rho/mission/{M}"]
    assert (root["wave_count"], root["planned_wave_count"]) == ("0", "3")
    assert "joined_wave_count" not in root


@pytest.mark.parametrize(
    ("status", "ends"),
    [
        ("planning", False),
        ("executing", False),
        ("completed", True),
        ("failed", True),
        ("partial", True),
        ("cancelled", True),
    ],
)
def test_a_mission_transitions_when_it_ends(status: str, ends: bool) -> None:
    mission = _mission()
    mission.status = status  # type: ignore[assignment]
    events = {e.id: e for e in mission_graph(mission).events}
    ended = events.get(f"rho/event/mission/{M}/transitioned")
    if not ends:
        assert ended is None
        return
    assert ended is not None
    assert (ended.type, ended.subject.id, ended.occurred_at) == (
        "transitioned",
        f"rho/mission/{M}",
        at(9),
    )
    assert (ended.correlation_id, ended.causation_id) == (M, f"rho/event/mission/{M}/created")


@pytest.mark.parametrize(("passed", "expected"), [(True, "true"), (False, "false"), (None, None)])
def test_a_feature_carries_tests_passed_when_known(
    passed: bool | None, expected: str | None
) -> None:
    mission = _mission()
    handoff = mission.features[0].handoff
    assert handoff is not None
    handoff.tests_passed = passed
    nodes = {n.id: n.attributes for n in mission_graph(mission).nodes}
    assert nodes[f"rho/mission-feature/{M}/a"].get("tests_passed") == expected
    assert "tests_passed" not in nodes[f"rho/mission-feature/{M}/b"]  # no handoff at all


@pytest.mark.parametrize(
    ("created", "updated", "transitioned"),
    [
        (T0, T0, False),
        (T0, at(9), True),
        (at(9), T0, False),  # a clock that went back: no transition
        (T0, "2026-01-02T04:04:00+01:00", False),  # the same instant, spelled otherwise
        ("2026-01-02T03:04:00Z", "2026-01-02T03:04:00.5Z", True),  # later, though "." < "Z"
        (T0, "not a time", False),
    ],
)
def test_a_store_task_transitions_when_updated_after_created(
    created: str, updated: str, transitioned: bool
) -> None:
    task = _task("t1", "one", updated_at=updated).model_copy(update={"created_at": created})
    events = {e.id: e for e in task_store_graph([task]).events}
    event = events.get("rho/event/task/t1/transitioned")
    assert (event is not None) is transitioned
    if event is not None:
        assert (event.type, event.occurred_at, event.causation_id) == (
            "transitioned",
            updated,
            "rho/event/task/t1/created",
        )


def test_generated_at_is_the_latest_instant_not_the_latest_spelling() -> None:
    tasks = [
        _task("t1", "one", updated_at="2026-01-02T03:04:00.5Z"),
        _task("t2", "two", updated_at="2026-01-02T03:04:00Z"),
    ]
    assert task_store_graph(tasks).generated_at == "2026-01-02T03:04:00.5Z"
    assert task_store_graph(tasks[::-1]).generated_at == "2026-01-02T03:04:00.5Z"


def test_a_blocker_listed_twice_is_one_edge() -> None:
    mission = _mission()
    mission.features[2].blocked_by = ["a", "b", "a"]
    doc = mission_graph(mission)
    assert len([e for e in doc.edges if e.kind == "depends_on"]) == 2
    node = {n.id: n.attributes for n in doc.nodes}[f"rho/mission-feature/{M}/c"]
    assert node["blocker_count"] == "2"


@settings(max_examples=30, deadline=None)
@given(st.randoms(use_true_random=False))
def test_the_same_data_in_any_order_projects_to_the_same_bytes(rng: random.Random) -> None:
    mission = _mission()
    expected = graph.dump_graph(mission_graph(mission))
    features = list(mission.features)
    rng.shuffle(features)
    mission.features = features
    assert graph.dump_graph(mission_graph(mission)) == expected
    tasks = _tasks()
    expected_tasks = graph.dump_graph(task_store_graph(tasks, repository_id="r"))
    rng.shuffle(tasks)
    assert graph.dump_graph(task_store_graph(tasks, repository_id="r")) == expected_tasks


# -- repository scope ----------------------------------------------------------------------------


def _scopes(doc: graph.GraphDocument) -> set[str | None]:
    facts: list[graph.Node | graph.Edge | graph.Event] = [*doc.nodes, *doc.edges, *doc.events]
    return {doc.scope.repository_id} | {fact.scope.repository_id for fact in facts}


def test_a_mission_graph_is_scoped_to_its_repository_folder_by_default() -> None:
    assert _scopes(mission_graph(_mission())) == {"somewhere"}
    assert _scopes(mission_graph(_mission(), repository_id="acme/app")) == {"acme/app"}


def test_a_store_graph_is_scoped_only_when_asked() -> None:
    assert _scopes(task_store_graph(_tasks())) == {None}
    scoped = task_store_graph(_tasks(), repository_id="app")
    assert _scopes(scoped) == {"app"}
    # Scoping the unscoped file afterwards gives the same bytes as projecting with the scope.
    unscoped = json.loads(graph.dump_graph(task_store_graph(_tasks())))
    rescoped = graph.with_repository_id(unscoped, "app")
    assert graph.dump_graph(rescoped) == graph.dump_graph(scoped)


@pytest.mark.parametrize("repo", ["/", "/work/bad\nname", "/work/" + "x" * 256])
def test_a_repository_folder_whose_name_cannot_be_an_id_scopes_nothing(repo: str) -> None:
    mission = _mission()
    mission.repo = repo
    assert _scopes(mission_graph(mission)) == {None}


@pytest.mark.parametrize(
    ("repository_id", "message"),
    [
        (" ", "repository id is blank"),
        ("a\nb", "repository id holds a control character (U+000A)"),
        ("x" * 256, "repository id is 256 characters; the limit is 255"),
    ],
)
def test_an_unusable_repository_id_is_refused(repository_id: str, message: str) -> None:
    with pytest.raises(graph.GraphValidationError, match=rf"^{re.escape(message)}$"):
        mission_graph(_mission(), repository_id=repository_id)
    with pytest.raises(graph.GraphValidationError, match=rf"^{re.escape(message)}$"):
        task_store_graph(_tasks(), repository_id=repository_id)
