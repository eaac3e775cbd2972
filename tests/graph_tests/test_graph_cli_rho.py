"""The graph as Rho has it, from the command line: repository scope, Rho's attributes and events
on a real mission, events without an idempotency key, and digests that are not digests.

Real ``rho`` subprocesses, a real mission run through the library in a temporary git
repository, and uploads to a real local HTTP server (pytest-httpserver).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer

from graph import MISSION_GRAPH_FILENAME, validate_graph
from support.environ import rho_env as child_env
from support.repos import init_home_repo as init_repo
from support.rho import Result, run_rho
from support.stores import write_store

from ._docs import document, edge, event, node

TOKEN = "rho-scope-token-0c3a"
SYNC_PATH = "/v1/graph/sync"
ANSWER = {"accepted": True, "duplicate": False, "graphDigest": "d", "facts": 1}
# A mission run through the library (argv: repository): a and d complete in wave 1 (a's tests
# passed, d's failed), b fails in wave 2, and c, blocked by a and b, never runs.
_MISSION = """
import sys
from rho_mission import Feature, Handoff, Mission

def worker(ctx):
    if ctx.feature.id == "b":
        raise RuntimeError("b went wrong")
    return Handoff(tests_passed=ctx.feature.id == "a")

features = [
    Feature("a", "A"), Feature("b", "B"), Feature("c", "C", blocked_by=["a", "b"]),
    Feature("d", "D"),
]
mission = Mission.new(sys.argv[1], "the prompt", features)
mission.run_staged_sync(worker, waves=[["a", "d"], ["b"], ["c"]])
print(mission.status, mission.dir)
"""


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Repo:
    """A repository named ``shop`` with a store and one finished mission."""

    root: Path
    home: Path
    mission_dir: Path

    def rho(self, *args: str, env: dict[str, str] | None = None) -> Result:
        return run_rho(*args, cwd=self.root, home=self.home, env=env)

    @property
    def mission_id(self) -> str:
        return self.mission_dir.name


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    home = tmp_path_factory.mktemp("home")
    root = init_repo(tmp_path_factory.mktemp("scope") / "shop", home)
    tasks = [
        {"id": "task_1", "subject": "one", "status": "completed"}
        | {"createdAt": "2024-05-01T10:00:00Z", "updatedAt": "2024-05-01T11:00:00Z"},
        {"id": "task_2", "subject": "two", "status": "pending"}
        | {"createdAt": "2024-05-01T10:00:00Z", "updatedAt": "2024-05-01T10:00:00Z"},
    ]
    write_store(root / ".rho" / "tasks.json", tasks)
    script = [sys.executable, "-c", _MISSION, str(root)]
    done = subprocess.run(script, env=child_env(home), capture_output=True, text=True, timeout=60)
    status, _, folder = done.stdout.strip().partition(" ")
    assert (done.returncode, status) == (0, "partial"), done.stderr
    return Repo(root, home, Path(folder))


def _facts(data: dict[str, Any]) -> list[dict[str, Any]]:
    facts: list[dict[str, Any]] = data["nodes"] + data["edges"] + data["events"]
    return facts


def _repository_ids(data: dict[str, Any]) -> set[str | None]:
    scopes = [data["scope"], *(fact["scope"] for fact in _facts(data))]
    return {scope.get("repository_id") for scope in scopes}


def _ok(result: Result) -> Result:
    assert (result.code, result.stderr) == (0, ""), result.stderr
    return result


# -- the mission as Rho builds it ----------------------------------------------------------------


def test_a_real_mission_graph_has_rhos_attributes_and_events(repo: Repo) -> None:
    exported = _ok(repo.rho("graph", "export", "--mission-dir", str(repo.mission_dir))).json()
    nodes = {n["id"]: n["attributes"] for n in exported["nodes"]}
    m = repo.mission_id
    assert {k: nodes[f"rho/mission/{m}"][k] for k in ("entity_type", "status")} == {
        "entity_type": "mission",
        "status": "partial",
    }
    assert (
        nodes[f"rho/mission/{m}"]["wave_count"],
        nodes[f"rho/mission/{m}"]["planned_wave_count"],
    ) == (
        "2",
        "3",
    )
    assert {n: nodes[f"rho/mission-wave/{m}/{n}"]["status"] for n in (1, 2)} == {
        1: "completed",
        2: "failed",
    }
    assert {n: nodes[f"rho/mission-wave/{m}/{n}"]["entity_type"] for n in (1, 2)} == {
        1: "wave_join",
        2: "wave_join",
    }
    features = {f: nodes[f"rho/mission-feature/{m}/{f}"] for f in "abcd"}
    assert {f: a["entity_type"] for f, a in features.items()} == dict.fromkeys(
        "abcd", "mission_feature"
    )
    assert {f: a.get("tests_passed") for f, a in features.items()} == {
        "a": "true",
        "b": None,
        "c": None,
        "d": "false",
    }
    mission_json = json.loads((repo.mission_dir / "mission.json").read_text())
    ended = next(e for e in exported["events"] if e["id"] == f"rho/event/mission/{m}/transitioned")
    assert (ended["type"], ended["subject"]["id"], ended["occurred_at"]) == (
        "transitioned",
        f"rho/mission/{m}",
        mission_json["completed_at"],
    )


def test_a_store_task_updated_after_its_creation_has_a_transitioned_event(repo: Repo) -> None:
    exported = _ok(repo.rho("graph", "export")).json()
    events = {(e["id"], e["type"], e["occurred_at"]) for e in exported["events"]}
    assert events == {
        ("rho/event/task/task_1/created", "created", "2024-05-01T10:00:00Z"),
        ("rho/event/task/task_1/transitioned", "transitioned", "2024-05-01T11:00:00Z"),
        ("rho/event/task/task_2/created", "created", "2024-05-01T10:00:00Z"),
    }
    assert {n["attributes"]["entity_type"] for n in exported["nodes"]} == {"task"}


# -- repository scope --------------------------------------------------------------------------


def test_the_mission_graph_on_disk_is_scoped_to_the_repository_folder(repo: Repo) -> None:
    on_disk = json.loads((repo.mission_dir / MISSION_GRAPH_FILENAME).read_bytes())
    assert _repository_ids(on_disk) == {"shop"}


@pytest.mark.parametrize("source", ["mission", "store"])
def test_export_defaults_to_the_repository_basename_and_takes_another(
    repo: Repo, source: str
) -> None:
    args = ("--mission-dir", str(repo.mission_dir)) if source == "mission" else ()
    default = _ok(repo.rho("graph", "export", *args))
    named = _ok(repo.rho("graph", "export", *args, "--repository", "shop"))
    other = _ok(repo.rho("graph", "export", *args, "--repository", "acme/shop"))
    assert default.out == named.out
    assert _repository_ids(default.json()) == {"shop"}
    assert _repository_ids(other.json()) == {"acme/shop"}
    assert _ok(repo.rho("graph", "export", *args, "--repository", "acme/shop")).out == other.out
    if source == "mission":
        assert default.out == (repo.mission_dir / MISSION_GRAPH_FILENAME).read_bytes()


def test_a_store_outside_any_repository_has_no_repository_unless_named(
    repo: Repo, tmp_path: Path
) -> None:
    store = write_store(
        tmp_path / "loose" / "tasks.json", [{"id": "t", "subject": "s", "status": "pending"}]
    )
    env = {"GIT_CEILING_DIRECTORIES": str(tmp_path)}
    loose = run_rho("graph", "export", "--store", str(store), cwd=tmp_path, home=repo.home, env=env)
    assert _repository_ids(_ok(loose).json()) == {None}
    args = ("graph", "export", "--store", str(store), "--repository", "named")
    named = run_rho(*args, cwd=tmp_path, home=repo.home, env=env)
    assert _repository_ids(_ok(named).json()) == {"named"}


@pytest.mark.parametrize(
    ("repository", "message"),
    [
        ("", "repository id is blank"),
        ("a\nb", "repository id holds a control character (U+000A)"),
        ("x" * 256, "repository id is 256 characters; the limit is 255"),
    ],
)
def test_export_refuses_an_unusable_repository(repo: Repo, repository: str, message: str) -> None:
    result = repo.rho("graph", "export", "--repository", repository)
    assert (result.code, result.stdout, result.stderr_lines) == (2, "", [f"error: {message}"])


def _sync(repo: Repo, server: HTTPServer, *args: str) -> dict[str, Any]:
    server.expect_request(SYNC_PATH, method="POST").respond_with_json(ANSWER)
    flags = ("--endpoint", server.url_for("/"), "--project", "p")
    _ok(repo.rho("cloud", "graph", "sync", *flags, *args, env={"RHO_CLOUD_TOKEN": TOKEN}))
    body: dict[str, Any] = json.loads(server.log[-1][0].get_data())
    return body


def test_sync_scopes_the_uploaded_graph_to_the_repository(
    repo: Repo, httpserver: HTTPServer
) -> None:
    mission = ("--mission-dir", str(repo.mission_dir))
    assert _repository_ids(_sync(repo, httpserver, *mission)["graph"]) == {"shop"}
    named = _sync(repo, httpserver, *mission, "--repository", "acme/shop")
    assert _repository_ids(named["graph"]) == {"acme/shop"}
    again = _sync(repo, httpserver, *mission, "--repository", "acme/shop")
    assert again == named
    assert _repository_ids(_sync(repo, httpserver)["graph"]) == {"shop"}


# -- graphs written by others: no idempotency key, forged digests --------------------------------


def _foreign_mission_dir(tmp_path: Path) -> Path:
    """A mission folder whose graph another producer wrote: an event without an idempotency
    key, and clear text under keys that claim to be digests."""
    data = document(
        nodes=[
            node("rho/mission/x", reason_sha256="private value", status="failed"),
            node("rho/mission-feature/x/a", Subject_SHA256="Fix the login form"),
        ],
        edges=[edge("rho/edge/x/a", "rho/mission/x", "rho/mission-feature/x/a", kind="contains")],
        events=[event("rho/event/x/created", "rho/mission/x")],
    )
    del data["events"][0]["idempotency_key"]
    folder = tmp_path / "foreign"
    folder.mkdir()
    (folder / MISSION_GRAPH_FILENAME).write_text(json.dumps(data))
    return folder


def test_an_event_without_an_idempotency_key_exports_and_uploads(
    repo: Repo, httpserver: HTTPServer, tmp_path: Path
) -> None:
    folder = _foreign_mission_dir(tmp_path)
    exported = _ok(repo.rho("graph", "export", "--mission-dir", str(folder), "--repository", "r"))
    assert "idempotency_key" not in exported.json()["events"][0]
    body = _sync(repo, httpserver, "--mission-dir", str(folder))
    assert "idempotency_key" not in body["graph"]["events"][0]
    validate_graph(body["graph"])


def test_a_forged_digest_never_reaches_the_upload_body(
    repo: Repo, httpserver: HTTPServer, tmp_path: Path
) -> None:
    _sync(repo, httpserver, "--mission-dir", str(_foreign_mission_dir(tmp_path)))
    wire = httpserver.log[-1][0].get_data()
    assert b"private value" not in wire
    assert b"Fix the login form" not in wire
    nodes = {n["id"]: n["attributes"] for n in json.loads(wire)["graph"]["nodes"]}
    assert nodes["rho/mission/x"]["reason_sha256"] == _sha256("private value")
    assert nodes["rho/mission-feature/x/a"]["Subject_SHA256"] == _sha256("Fix the login form")
    assert nodes["rho/mission/x"]["status"] == "failed"
