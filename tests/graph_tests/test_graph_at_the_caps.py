"""A mission graph at the caps: exported whole, refused by Rho Cloud in one line, summarized.

The mission is the benchmark's (``bench/bench_join_persist.build_mission``): 1,000 completed
features in 10 waves, written by ``save_mission`` as the engine writes it at its last join.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer

from graph import load_mission_graph, validate_graph
from graph.cloud import (
    MAX_EDGES,
    MAX_EVENTS,
    MAX_FACTS,
    MAX_NODES,
    prepare_for_cloud,
    summarize_mission_graph,
)
from rho_mission.records._document import MissionDocument, WaveJoin
from rho_mission.records._persist import prepare_mission_dir, save_mission
from support.repos import init_home_repo as init_repo
from support.rho import run_rho

_BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_join_persist.py"
SYNC_PATH = "/v1/graph/sync"
ANSWER = {"accepted": True, "duplicate": False, "graphDigest": "d", "facts": 12}


def _build_mission(folder: Path, features: int, waves: int) -> MissionDocument:
    spec = importlib.util.spec_from_file_location("bench_join_persist", _BENCH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_join_persist", module)
    spec.loader.exec_module(module)
    mission: MissionDocument = module.build_mission(folder, features, waves)
    return mission


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of a saved 1,000-feature mission (in a git repository named ``app``)."""
    home = tmp_path_factory.mktemp("home")
    repo = init_repo(tmp_path_factory.mktemp("caps") / "app", home)
    folder = repo / ".rho" / "missions" / "0badc0de"
    prepare_mission_dir(folder, repo)
    mission = _build_mission(folder, 1000, 10)
    mission.repo = str(repo)
    mission.status = "completed"
    save_mission(mission)
    return folder


def test_a_mission_graph_of_1000_features_exports_whole(big: Path, tmp_path: Path) -> None:
    assert (big / "mission-graph.json").stat().st_size > 1024 * 1024  # over Rho Cloud's body
    result = run_rho("graph", "export", "--mission-dir", str(big), cwd=big, home=tmp_path)
    assert result.code == 0, result.stderr
    exported = validate_graph(result.json())
    assert len(exported.nodes) == 1 + 1000 + 10


def test_a_feature_node_carries_one_digest_per_value(big: Path) -> None:
    graph = load_mission_graph(big)
    for node in graph.nodes:
        digests = [v for k, v in node.attributes.items() if k.endswith("_sha256")]
        assert len(digests) == len(set(digests)), node.id


def test_a_sync_over_the_cloud_limits_names_the_limit_and_the_count(
    big: Path, tmp_path: Path, httpserver: HTTPServer
) -> None:
    args = ("cloud", "graph", "sync", "--mission-dir", str(big), "--project", "p1")
    result = run_rho(*args, "--endpoint", httpserver.url_for("/"), cwd=big, home=tmp_path,
                     env={"RHO_CLOUD_TOKEN": "t0ken-for-tests"})  # fmt: skip
    assert (result.code, result.stderr_lines) == (
        2,
        [
            "error: graph has 1011 nodes; Rho Cloud accepts at most 250",
            "hint: --summary uploads the mission and its wave joins only, which always fits",
        ],
    )
    assert httpserver.log == []


def test_a_summary_sync_uploads_the_mission_and_its_wave_joins(
    big: Path, tmp_path: Path, httpserver: HTTPServer
) -> None:
    httpserver.expect_request(SYNC_PATH, method="POST").respond_with_json(ANSWER)
    args = ("cloud", "graph", "sync", "--mission-dir", str(big), "--project", "p1", "--summary")
    result = run_rho(*args, "--endpoint", httpserver.url_for("/"), cwd=big, home=tmp_path,
                     env={"RHO_CLOUD_TOKEN": "t0ken-for-tests"})  # fmt: skip
    assert result.code == 0, result.stderr
    body = json.loads(httpserver.log[0][0].get_data())
    kinds = sorted(n["attributes"]["entity_type"] for n in body["graph"]["nodes"])
    assert kinds == ["mission"] + ["wave_join"] * 10
    counts = [int(n["attributes"].get("feature_count", 0)) for n in body["graph"]["nodes"]]
    assert sum(counts) == 1000 + 1000  # the mission's own count, then the waves'


def test_a_summary_needs_a_mission(tmp_path: Path) -> None:
    result = run_rho("cloud", "graph", "sync", "--store", "x.json", "--summary", cwd=tmp_path,
                     home=tmp_path)  # fmt: skip
    assert result.code == 2
    assert (
        result.stderr_lines[0] == "error: --summary needs --mission-dir (it summarizes a mission)"
    )


def _chain(folder: Path, waves: int) -> MissionDocument:
    mission = _build_mission(folder, 3 * waves, waves)  # three features a wave
    stamp = "2026-11-29T09:00:00.250Z"
    # One wave failed: a range holding it must say so.
    failed = mission.wave_joins[waves // 2]
    mission.wave_joins[waves // 2] = WaveJoin(**{
        **failed.model_dump(), "completed_ids": [], "failed_ids": failed.feature_ids,
        "completed_at": stamp,
    })  # fmt: skip
    return mission


def test_a_summary_of_1000_waves_folds_waves_into_ranges_that_fit(tmp_path: Path) -> None:
    from rho_mission.records._projection import mission_graph

    summary = summarize_mission_graph(mission_graph(_chain(tmp_path / "m", 1000)))
    assert len(summary.nodes) <= MAX_NODES
    assert len(summary.edges) <= MAX_EDGES
    assert len(summary.events) <= MAX_EVENTS
    assert summary.fact_count <= MAX_FACTS
    prepare_for_cloud(summary)  # every other bound of Rho Cloud holds too
    ranges = [n for n in summary.nodes if n.attributes.get("entity_type") == "wave_join"]
    attributes: list[dict[str, Any]] = [dict(n.attributes) for n in ranges]
    assert sum(int(a["feature_count"]) for a in attributes) == 3000
    assert [a["status"] for a in attributes].count("partial") == 1  # its other waves completed
    assert int(attributes[0]["wave"]) == 1
    assert max(int(a["last_wave"]) for a in attributes) == 1000


def test_a_summary_of_a_task_store_graph_is_refused(tmp_path: Path) -> None:
    from graph import GraphValidationError
    from rho_mission import task_store_graph

    with pytest.raises(GraphValidationError, match=r"^a summary needs a mission graph"):
        summarize_mission_graph(task_store_graph([]))
