"""``rho graph export`` and ``rho cloud graph sync`` as real subprocesses of the console script.

Missions are real: a temporary git repository, tasks added with ``rho task add --command`` and run
with ``rho mission --from-tasks`` (plus one mission planned with the library, for a prompt of our
choosing). Uploads go to a real local HTTP server (pytest-httpserver). Marker strings in subjects,
descriptions, commands and the prompt must never reach stdout of an export or the wire.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer

from graph import load_mission_graph, validate_graph
from graph.cloud import prepare_for_cloud
from support.environ import rho_env as child_env
from support.repos import init_home_repo as init_repo
from support.repos import tree_digest
from support.rho import Result, run_rho
from support.stores import write_store

from ._broken_graphs import BROKEN

SUBJECT = "SUBJECT_MARKER_5e1d"
DESCRIPTION = "DESCRIPTION_MARKER_77ab"
COMMAND = "COMMAND_MARKER_c0fe"
PROMPT = "PROMPT_MARKER_9b3f"
MARKERS = (SUBJECT, DESCRIPTION, COMMAND, PROMPT)
TOKEN = "rho-cli-token-4d8e1a"
SYNC_PATH = "/v1/graph/sync"
T0, T1 = "2024-05-01T10:00:00Z", "2024-05-01T11:00:00Z"
# Plans a mission through the library, so that its prompt is ours: argv = repo, prompt, text, cmd.
_PROMPT_MISSION = """
import sys
from rho_mission import Feature, Mission
feature = Feature("polish", sys.argv[3], command=sys.argv[4])
mission = Mission.new(sys.argv[1], sys.argv[2], [feature])
mission.run_staged_sync(waves=[["polish"]])
print(mission.status, mission.dir)
"""


def _task(task_id: str, *links: tuple[str, str], status: str = "pending") -> dict[str, Any]:
    return {
        "id": task_id,
        "subject": f"{SUBJECT} {task_id}",
        "description": f"{DESCRIPTION} {task_id}",
        "status": status,
        "dependencies": [{"targetId": target, "type": kind} for kind, target in links],
        "metadata": {"command": f"echo {COMMAND} {task_id}"},
        "createdAt": T0,
        "updatedAt": T1 if status == "completed" else T0,
    }


# task_1.1 is a subtask of task_1; task_2 and task_3 are blocked (task_3 by both); task_2 has a
# related link to task_3 and one to a task that does not exist (left out: an edge needs a node).
STORE_TASKS = [
    _task("task_1", status="completed"),
    _task("task_1.1", ("parent-child", "task_1")),
    _task("task_2", ("blocks", "task_1"), ("related", "task_3"), ("related", "task_9")),
    _task("task_3", ("blocks", "task_1"), ("blocks", "task_2")),
]
STORE_EDGES = {
    ("rho/edge/task/task_1/contains/task_1.1", "contains", "task_1", "task_1.1", "parent-child"),
    ("rho/edge/task/task_2/depends_on/task_1", "depends_on", "task_2", "task_1", "blocks"),
    ("rho/edge/task/task_2/references/task_3", "references", "task_2", "task_3", "related"),
    ("rho/edge/task/task_3/depends_on/task_1", "depends_on", "task_3", "task_1", "blocks"),
    ("rho/edge/task/task_3/depends_on/task_2", "depends_on", "task_3", "task_2", "blocks"),
}
# The mission's tasks (rho task add ARGS): task_1, task_2 blocked by it, task_1.1 its subtask.
MISSION_TASKS = [
    (f"{SUBJECT} parse", "--description", DESCRIPTION, "--command", f"echo {COMMAND} > parsed.txt"),
    (f"{SUBJECT} render", "--blocked-by", "task_1", "--command", "echo rendered > rendered.txt"),
    (f"{SUBJECT} docs", "--parent", "task_1", "--related", "task_2", "--command", "true"),
]
TASK_ATTRIBUTES = {
    "attempts",
    "blocker_count",
    "data_classification",
    "dependency_count",
    "description_sha256",
    "entity_type",
    "status",
    "subject_sha256",
}


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _assert_error(result: Result, message: str, code: int = 2) -> None:
    """Exit *code*, nothing on stdout, and exactly one stderr line: ``error: <message>``."""
    assert (result.code, result.stderr_lines, result.stdout) == (code, [f"error: {message}"], "")


# ---------------------------------------------------------------------------------------------
# Fixtures: a hand-written store, and a repository with two real, completed missions.


@dataclass(frozen=True)
class Missions:
    """A repository (with its store) and the folders of its two completed missions."""

    repo: Path
    home: Path
    from_tasks: Path
    with_prompt: Path

    def rho(self, *args: str, env: dict[str, str] | None = None) -> Result:
        """Run ``rho ARGS`` in the repository."""
        return run_rho(*args, cwd=self.repo, home=self.home, env=env)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("home")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """STORE_TASKS written by hand; shared by the module's tests, which only read it."""
    return write_store(tmp_path_factory.mktemp("store") / "tasks.json", STORE_TASKS)


@pytest.fixture(scope="module")
def missions(tmp_path_factory: pytest.TempPathFactory, home: Path) -> Missions:
    repo = init_repo(tmp_path_factory.mktemp("missions") / "repo", home)
    for args in MISSION_TASKS:
        assert run_rho("task", "add", *args, cwd=repo, home=home).code == 0
    planned = run_rho("mission", "--from-tasks", "--json", cwd=repo, home=home)
    assert (planned.code, planned.json()["status"]) == (0, "completed"), planned.stderr
    script = [sys.executable, "-c", _PROMPT_MISSION, str(repo), PROMPT, DESCRIPTION, "true"]
    done = subprocess.run(script, env=child_env(home), capture_output=True, text=True, timeout=60)
    status, _, folder = done.stdout.strip().partition(" ")
    assert (done.returncode, status) == (0, "completed"), done.stderr
    return Missions(repo, home, Path(planned.json()["dir"]), Path(folder))


# ---------------------------------------------------------------------------------------------
# rho graph export --store


@pytest.fixture(scope="module")
def exported(store: Path, home: Path) -> Result:
    """``rho graph export --store STORE``, run once for the module."""
    return run_rho("graph", "export", "--store", str(store), cwd=store.parent, home=home)


def test_store_export_projects_tasks_and_their_links_without_clear_text(exported: Result) -> None:
    assert (exported.code, exported.stderr) == (0, "")
    graph = validate_graph(exported.json())
    assert [node.id for node in graph.nodes] == [f"rho/task/{t['id']}" for t in STORE_TASKS]
    edges = {
        (e.id, e.kind, e.source.id, e.target.id, e.attributes["dependency_type"])
        for e in graph.edges
    }
    assert edges == {(i, k, f"rho/task/{s}", f"rho/task/{t}", d) for i, k, s, t, d in STORE_EDGES}
    for node, task in zip(graph.nodes, STORE_TASKS, strict=True):
        assert set(node.attributes) == TASK_ATTRIBUTES
        assert node.attributes["subject_sha256"] == _sha256(task["subject"])
        assert node.attributes["description_sha256"] == _sha256(task["description"])
    assert not [marker for marker in MARKERS if marker in exported.stdout]


def test_store_export_gives_the_same_bytes_every_time(
    store: Path, home: Path, exported: Result
) -> None:
    again = run_rho("graph", "export", "--store", str(store), cwd=store.parent, home=home)
    assert again.code == 0
    assert again.out == exported.out
    assert again.out.endswith(b"}\n")


def test_store_export_reads_the_root_store_option(
    store: Path, home: Path, exported: Result
) -> None:
    root = run_rho("--store", str(store), "graph", "export", cwd=store.parent, home=home)
    assert root.code == 0
    assert root.out == exported.out


def test_store_export_defaults_to_the_store_of_the_enclosing_repository(
    store: Path, home: Path, exported: Result, tmp_path: Path
) -> None:
    repo = init_repo(tmp_path / "repo", home)
    (repo / ".rho").mkdir()
    shutil.copyfile(store, repo / ".rho" / "tasks.json")
    (repo / "src" / "deep").mkdir(parents=True)
    default = run_rho("graph", "export", cwd=repo / "src" / "deep", home=home)
    assert (default.code, default.stderr) == (0, "")
    # The same store, scoped as the default scopes it: to the repository folder's basename.
    args = ("graph", "export", "--store", str(store), "--repository", "repo")
    assert default.out == run_rho(*args, cwd=store.parent, home=home).out
    assert {fact["scope"]["repository_id"] for fact in default.json()["nodes"]} == {"repo"}


def test_store_export_as_mermaid_labels_nodes_and_edges(store: Path, home: Path) -> None:
    args = ("graph", "export", "--store", str(store), "--format", "mermaid")
    result = run_rho(*args, cwd=store.parent, home=home)
    assert (result.code, result.stderr) == (0, "")
    lines = result.stdout.splitlines()
    assert lines[0] == "flowchart LR"
    assert '<br/>execution · completed"]' in lines[1]
    assert lines[1].strip().startswith("n_rho_task_task_1_")
    kinds = [re.search(r"-->\|(\w+)\|", line) for line in lines[1:]]
    labels = sorted(match.group(1) for match in kinds if match)
    assert labels == ["contains", "depends_on", "depends_on", "depends_on", "references"]
    assert not any(line.lstrip().startswith("subgraph") for line in lines)
    assert not [marker for marker in MARKERS if marker in result.stdout]


def test_store_export_as_dot_is_a_digraph_with_labelled_edges(store: Path, home: Path) -> None:
    args = ("graph", "export", "--store", str(store), "--format", "dot")
    result = run_rho(*args, cwd=store.parent, home=home)
    assert (result.code, result.stderr) == (0, "")
    lines = result.stdout.splitlines()
    assert (lines[0], lines[-1]) == ('digraph "rho.graph" {', "}")
    assert '    "rho/task/task_3" -> "rho/task/task_2" [label="depends_on"];' in lines
    assert '    "rho/task/task_1" -> "rho/task/task_1.1" [label="contains"];' in lines
    assert '    "rho/task/task_2" -> "rho/task/task_3" [label="references"];' in lines
    assert not [marker for marker in MARKERS if marker in result.stdout]


# ---------------------------------------------------------------------------------------------
# rho graph export --mission-dir


def test_mission_export_as_json_is_the_mission_graph_file_byte_for_byte(missions: Missions) -> None:
    result = missions.rho("graph", "export", "--mission-dir", str(missions.from_tasks))
    assert (result.code, result.stderr) == (0, "")
    assert result.out == (missions.from_tasks / "mission-graph.json").read_bytes()
    graph = validate_graph(result.json())
    mission_id = missions.from_tasks.name
    features = {f"rho/mission-feature/{mission_id}/{t}" for t in ("task_1", "task_1.1", "task_2")}
    waves = {f"rho/mission-wave/{mission_id}/{n}" for n in (1, 2)}
    assert {node.id for node in graph.nodes} == {f"rho/mission/{mission_id}", *features, *waves}
    assert {event.id for event in graph.events} == {
        f"rho/event/mission/{mission_id}/created",
        f"rho/event/mission/{mission_id}/transitioned",
        *(f"rho/event/{feature[4:]}/transitioned" for feature in features),
        *(f"rho/event/{wave[4:]}/observed" for wave in waves),
    }
    depends_on = [(e.source.id, e.target.id) for e in graph.edges if e.kind == "depends_on"]
    assert depends_on == [
        (f"rho/mission-feature/{mission_id}/task_2", f"rho/mission-feature/{mission_id}/task_1")
    ]
    assert not [marker for marker in MARKERS if marker in result.stdout]


def _mermaid_groups(text: str) -> dict[str, list[str]]:
    """The node ids inside each ``subgraph`` of a Mermaid flowchart, by the subgraph's title."""
    groups: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        title = re.fullmatch(r'\s*subgraph \w+\["(.+)"\]', line)
        if title:
            current = groups.setdefault(title.group(1), [])
        elif line.strip() == "end":
            current = None
        elif current is not None:
            current.append(re.findall(r'\["([^"<]+)<br/>', line)[0])
    return groups


def test_mission_export_as_mermaid_groups_features_by_wave(missions: Missions) -> None:
    args = ("graph", "export", "--mission-dir", str(missions.from_tasks), "--format", "mermaid")
    result = missions.rho(*args)
    assert (result.code, result.stderr) == (0, "")
    assert result.stdout.startswith("flowchart LR\n")
    m = missions.from_tasks.name
    assert _mermaid_groups(result.stdout) == {
        "wave 1": [
            f"rho/mission-feature/{m}/task_1",
            f"rho/mission-feature/{m}/task_1.1",
            f"rho/mission-wave/{m}/1",
        ],
        "wave 2": [f"rho/mission-feature/{m}/task_2", f"rho/mission-wave/{m}/2"],
    }
    assert f'["rho/mission/{m}<br/>execution · completed"]' in result.stdout
    assert "-->|depends_on|" in result.stdout


def test_mission_export_as_dot_clusters_features_by_wave(missions: Missions) -> None:
    args = ("graph", "export", "--mission-dir", str(missions.from_tasks), "--format", "dot")
    result = missions.rho(*args)
    assert (result.code, result.stderr) == (0, "")
    m = missions.from_tasks.name
    lines = result.stdout.splitlines()
    assert lines[0] == 'digraph "rho.graph" {'
    assert lines.index('    subgraph "cluster_wave_1" {') < lines.index(
        '    subgraph "cluster_wave_2" {'
    )
    edge = f'"rho/mission-feature/{m}/task_2" -> "rho/mission-feature/{m}/task_1"'
    assert f'    {edge} [label="depends_on"];' in lines


def test_export_changes_no_file_of_the_mission(missions: Missions) -> None:
    before = tree_digest(missions.repo / ".rho")
    for fmt in ("json", "mermaid", "dot"):
        args = ("graph", "export", "--mission-dir", str(missions.from_tasks), "--format", fmt)
        assert missions.rho(*args).code == 0
    assert missions.rho("graph", "export").code == 0
    assert tree_digest(missions.repo / ".rho") == before


@pytest.mark.parametrize("case", list(BROKEN))
def test_mission_export_of_a_broken_mission_graph_exits_2_with_one_error_line(
    case: str, missions: Missions, tmp_path: Path
) -> None:
    graph = json.loads((missions.from_tasks / "mission-graph.json").read_bytes())
    folder, message = BROKEN[case](tmp_path, graph)
    result = run_rho("graph", "export", "--mission-dir", str(folder), cwd=tmp_path, home=tmp_path)
    _assert_error(result, message)


def test_export_refuses_both_sources(missions: Missions, store: Path) -> None:
    args = ("--mission-dir", str(missions.from_tasks), "--store", str(store))
    _assert_error(
        missions.rho("graph", "export", *args), "pass either --mission-dir or --store, not both"
    )


# ---------------------------------------------------------------------------------------------
# rho cloud graph sync


def _answer(facts: int, *, duplicate: bool = False) -> dict[str, Any]:
    return {"accepted": not duplicate, "duplicate": duplicate, "graphDigest": "d", "facts": facts}


def _sync(missions: Missions, server: HTTPServer, *source: str, **env: str) -> Result:
    args = ("--endpoint", server.url_for("/"), "--project", "proj-7")
    return missions.rho(
        "cloud", "graph", "sync", *source, *args, env={"RHO_CLOUD_TOKEN": TOKEN} | env
    )


def _bodies(server: HTTPServer) -> list[dict[str, Any]]:
    return [json.loads(request.get_data()) for request, _ in server.log]


def test_sync_posts_the_prepared_mission_graph_with_a_bearer_token(
    missions: Missions, httpserver: HTTPServer
) -> None:
    prepared = prepare_for_cloud(load_mission_graph(missions.from_tasks))
    httpserver.expect_request(SYNC_PATH, method="POST").respond_with_json(_answer(prepared.facts))
    source = ("--mission-dir", str(missions.from_tasks))
    results = [_sync(missions, httpserver, *source) for _ in range(2)]
    for result in results:
        assert (result.code, result.stderr) == (0, "")
        assert result.stdout == f"Graph accepted: {prepared.facts} facts (digest d).\n"
    requests = [request for request, _ in httpserver.log]
    assert [r.headers["Authorization"] for r in requests] == [f"Bearer {TOKEN}"] * 2
    first, second = _bodies(httpserver)
    assert sorted(first) == ["graph", "projectId", "syncId"]
    assert re.fullmatch(r"graph_[0-9a-f]{64}", first["syncId"])
    assert first["syncId"] == second["syncId"] == prepared.sync_id
    assert first["projectId"] == "proj-7"
    assert first["graph"] == json.loads(prepared.body)
    validate_graph(first["graph"])


def test_sync_reports_a_graph_already_synchronized(
    missions: Missions, httpserver: HTTPServer
) -> None:
    httpserver.expect_request(SYNC_PATH, method="POST").respond_with_json(
        _answer(12, duplicate=True)
    )
    result = _sync(missions, httpserver, "--mission-dir", str(missions.from_tasks))
    assert (result.code, result.stdout, result.stderr) == (
        0,
        "Graph already synchronized: 12 facts (digest d).\n",
        "",
    )


def test_sync_reads_the_token_from_a_token_file(
    missions: Missions, httpserver: HTTPServer, tmp_path: Path
) -> None:
    httpserver.expect_request(SYNC_PATH, method="POST").respond_with_json(_answer(3))
    token_file = tmp_path / "token"
    token_file.write_text("file-token-31c7\n", encoding="utf-8")
    source = ("--mission-dir", str(missions.from_tasks), "--token-file", str(token_file))
    result = _sync(missions, httpserver, *source, RHO_CLOUD_TOKEN="")
    assert (result.code, result.stdout) == (0, "Graph accepted: 3 facts (digest d).\n")
    assert httpserver.log[0][0].headers["Authorization"] == "Bearer file-token-31c7"


def test_sync_without_a_token_exits_2_and_sends_nothing(
    missions: Missions, httpserver: HTTPServer
) -> None:
    result = _sync(
        missions, httpserver, "--mission-dir", str(missions.from_tasks), RHO_CLOUD_TOKEN=""
    )
    _assert_error(
        result,
        "no Rho Cloud token: pass --token-file, set RHO_CLOUD_TOKEN"
        " or run 'rho cloud login --endpoint URL'",
    )
    assert httpserver.log == []


def test_sync_refused_by_the_server_exits_1_and_never_prints_the_token(
    missions: Missions, httpserver: HTTPServer
) -> None:
    # The server echoes the token back; the message must not.
    httpserver.expect_request(SYNC_PATH, method="POST").respond_with_json(
        {"error": f"database down for {TOKEN}"}, status=500
    )
    result = _sync(missions, httpserver, "--mission-dir", str(missions.from_tasks))
    message = (
        "rho cloud refused the graph: HTTP 500 Internal Server Error: database down for [redacted]"
    )
    _assert_error(result, message, code=1)
    assert len(httpserver.log) == 1


@pytest.fixture
def refused_url() -> Iterator[str]:
    """A URL whose port is bound but not listening, so that every connection is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_sync_to_a_closed_port_exits_1_with_a_clear_error(
    missions: Missions, refused_url: str
) -> None:
    args = ("--mission-dir", str(missions.from_tasks), "--endpoint", refused_url, "--project", "p")
    result = missions.rho("cloud", "graph", "sync", *args, env={"RHO_CLOUD_TOKEN": TOKEN})
    assert (result.code, result.stdout, len(result.stderr_lines)) == (1, "", 1)
    prefix = f"error: cannot reach rho cloud at {refused_url}/v1/graph/sync: "
    assert re.fullmatch(re.escape(prefix) + r".*[Cc]onnection refused", result.stderr_lines[0])
    assert TOKEN not in result.stderr


def test_sync_of_260_tasks_exits_2_before_any_request(
    missions: Missions, httpserver: HTTPServer, tmp_path: Path
) -> None:
    tasks = [{"id": f"task_{n}", "subject": f"t{n}", "status": "pending"} for n in range(1, 261)]
    store = write_store(tmp_path / "big.json", tasks)
    result = _sync(missions, httpserver, "--store", str(store))
    _assert_error(result, "graph has 260 nodes; Rho Cloud accepts at most 250")
    assert httpserver.log == []


def test_sync_with_both_sources_exits_2(missions: Missions, httpserver: HTTPServer) -> None:
    source = ("--mission-dir", str(missions.from_tasks), "--store", "tasks.json")
    _assert_error(
        _sync(missions, httpserver, *source), "pass either --mission-dir or --store, not both"
    )
    assert httpserver.log == []


def test_sync_sends_no_clear_text_sensitive_value(
    missions: Missions, httpserver: HTTPServer
) -> None:
    httpserver.expect_request(SYNC_PATH, method="POST").respond_with_json(_answer(1))
    sources = [
        ("--mission-dir", str(missions.from_tasks)),
        ("--mission-dir", str(missions.with_prompt)),
        ("--store", str(missions.repo / ".rho" / "tasks.json")),
    ]
    assert [_sync(missions, httpserver, *source).code for source in sources] == [0, 0, 0]
    wire = b"".join(request.get_data() for request, _ in httpserver.log)
    secrets = [*MARKERS, str(missions.repo), "rho-mission/", "parsed.txt", TOKEN]
    assert [secret for secret in secrets if secret.encode() in wire] == []
    # The markers were there to leak: the prompt mission's digest is of our prompt.
    prompt_graph = _bodies(httpserver)[1]["graph"]
    mission_node = next(n for n in prompt_graph["nodes"] if n["id"].startswith("rho/mission/"))
    assert mission_node["attributes"]["prompt_sha256"] == _sha256(PROMPT)


def test_sync_changes_no_local_file_and_no_mission_status(
    missions: Missions, httpserver: HTTPServer
) -> None:
    httpserver.expect_request(SYNC_PATH, method="POST").respond_with_json(_answer(1))
    show = ("mission", "show", str(missions.from_tasks), "--json")
    status_before = missions.rho(*show).json()["status"]
    before = tree_digest(missions.repo / ".rho")
    assert _sync(missions, httpserver, "--mission-dir", str(missions.from_tasks)).code == 0
    assert _sync(missions, httpserver, "--store", str(missions.repo / ".rho/tasks.json")).code == 0
    assert tree_digest(missions.repo / ".rho") == before
    assert missions.rho(*show).json()["status"] == status_before == "completed"


# ---------------------------------------------------------------------------------------------
# Help


@pytest.mark.parametrize(
    "command",
    [
        ("graph",),
        ("graph", "export"),
        ("cloud",),
        ("cloud", "graph"),
        ("cloud", "graph", "sync"),
        ("cloud", "login"),
        ("cloud", "connect"),
        ("cloud", "status"),
    ],
    ids=" ".join,
)
def test_help_shows_an_example(command: tuple[str, ...], tmp_path: Path) -> None:
    result = run_rho(*command, "--help", cwd=tmp_path, home=tmp_path)
    assert result.code == 0
    assert [line for line in result.stdout.splitlines() if line.strip().startswith("Example: ")]
