"""Rho Cloud's allow-list (``graph/cloud/_vocabulary.py``) against what rho really writes.

Every attribute of rho's own graphs (a mission with a failed feature, a handoff that reports
its tests and a verified join; the task store with every kind of link) keeps its value under
the allow-list: preparing them with it and without it gives the same bytes. A graph edited to
carry text in clear uploads digests of it only.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from graph import load_mission_graph, sha256_hex
from graph.cloud import SensitiveKeyCollisionError, prepare_for_cloud
from rho_mission import Feature, Handoff, Mission, MissionConfig, WorkerContext
from rho_mission.records._projection import task_store_graph
from taskstore import TaskStore


def _worker(ctx: WorkerContext) -> Handoff | None:
    if ctx.feature.id == "b":
        raise RuntimeError("b breaks")
    (ctx.worktree / f"{ctx.feature.id}.txt").write_text("done\n")
    return Handoff(summary="tested", tests_passed=True) if ctx.feature.id == "c" else None


def _mission_folder(repo: Path) -> Path:
    features = [Feature("a", "one"), Feature("b", "two"), Feature("c", "three", blocked_by=["a"])]
    config = MissionConfig(verify_command="true", keep_going=True)
    mission = Mission.new(repo, "cover every attribute", features, config)
    mission.run_staged_sync(_worker, waves=[["a", "b"], ["c"]])
    assert [f.status for f in mission.features] == ["completed", "failed", "completed"]
    return Path(mission.dir)


def test_every_attribute_of_a_mission_graph_is_rhos_own(repo_path: Path) -> None:
    graph = load_mission_graph(_mission_folder(repo_path))
    kinds = {node.attributes.get("entity_type") for node in graph.nodes}
    assert kinds == {"mission", "mission_feature", "wave_join", "verification"}
    with_list = prepare_for_cloud(graph)
    assert with_list.body == prepare_for_cloud(graph, rho_only=False).body


def _append(ctx: WorkerContext) -> Handoff | None:
    with (ctx.worktree / "registry.txt").open("a") as handle:
        handle.write(f"{ctx.feature.id}\n")
    return None


def _keep_both(ctx: WorkerContext) -> None:
    """A library resolver: keeps both sides' lines (the conflict is an append)."""
    target = ctx.worktree / "registry.txt"
    kept = [line for line in target.read_text().splitlines(keepends=True) if line[:7] not in _MARKS]
    target.write_text("".join(kept))
    subprocess.run(["git", "add", "registry.txt"], cwd=ctx.worktree, check=True)


_MARKS = ("<<<<<<<", "=======", ">>>>>>>")


@pytest.mark.parametrize("way", ["resolved", "replayed", "failed"])
def test_every_attribute_of_a_conflicted_join_is_rhos_own(repo_path: Path, way: str) -> None:
    replays = 1 if way == "replayed" else 0
    config = MissionConfig(replay_conflicts=replays)
    mission = Mission.new(repo_path, "overlap", [Feature("a", "one"), Feature("b", "two")], config)
    resolver = _keep_both if way == "resolved" else None
    mission.run_staged_sync(_append, waves=[["a", "b"]], resolve=resolver)
    conflict = mission.feature("b").conflict
    assert conflict is not None
    assert conflict.outcome == way
    graph = load_mission_graph(Path(mission.dir))
    assert prepare_for_cloud(graph).body == prepare_for_cloud(graph, rho_only=False).body


def test_every_attribute_of_a_task_store_graph_is_rhos_own(tmp_path: Path) -> None:
    store = TaskStore(tmp_path / "tasks.json")
    first = store.add("first")
    second = store.add("second", blocked_by=[first.id])
    store.add("child", parent=second.id, related=[first.id])
    graph = task_store_graph(store.tasks())
    assert {edge.kind for edge in graph.edges} == {"depends_on", "contains", "references"}
    assert prepare_for_cloud(graph).body == prepare_for_cloud(graph, rho_only=False).body


def test_text_added_to_a_mission_graph_by_hand_leaves_as_digests(repo_path: Path) -> None:
    folder = _mission_folder(repo_path)
    document = json.loads((folder / "mission-graph.json").read_text())
    feature = next(n for n in document["nodes"] if n["id"].endswith("/a"))
    feature["attributes"].update(notes="ask Ada", owner="ada@example.com", status="a sentence")
    prepared = prepare_for_cloud(document)
    body = prepared.body.decode()
    for clear in ("ask Ada", "ada@example.com", "a sentence"):
        assert clear not in body
    sent = next(n for n in prepared.document.nodes if n.id == feature["id"]).attributes
    assert sent["notes_sha256"] == sha256_hex("ask Ada")
    assert sent["owner_sha256"] == sha256_hex("ada@example.com")
    assert sent["status_sha256"] == sha256_hex("a sentence")
    assert "status" not in sent


def test_a_clear_twin_of_a_digest_rho_writes_is_refused(repo_path: Path) -> None:
    document = json.loads((_mission_folder(repo_path) / "mission-graph.json").read_text())
    feature = next(n for n in document["nodes"] if n["id"].endswith("/a"))
    feature["attributes"]["description"] = "Fix the login form"
    with pytest.raises(SensitiveKeyCollisionError):
        prepare_for_cloud(document)
