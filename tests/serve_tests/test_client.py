"""The SDK clients against a real ``rho serve``, and against a real server that misbehaves."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from pytest_httpserver import HTTPServer

from graph import GraphDocument, dump_graph
from rho_mission.client import (
    AsyncClient,
    AuthError,
    Client,
    ClientError,
    InvalidGraphError,
    MissionEvent,
    NotFoundError,
    RequestError,
)
from rho_mission.records._document import MissionDocument
from support.rho import run_rho as rho

from ._world import World


def _client(world: World, token: str | None = None) -> Client:
    return Client(world.server.url, token or world.server.token or "")


def test_missions_and_a_mission(world: World) -> None:
    with _client(world) as rho_client:
        (row,) = rho_client.missions()
        mission = rho_client.mission(world.mission_id)
    assert (row.id, row.status, row.features, row.counts["failed"]) == (
        world.mission_id,
        "partial",
        3,
        1,
    )
    assert isinstance(mission, MissionDocument)
    assert mission == MissionDocument.model_validate_json(
        (world.mission_dir / "mission.json").read_bytes()
    )


def test_graphs_are_validated_and_equal_rho_graph_export(world: World) -> None:
    with _client(world) as rho_client:
        mission_graph = rho_client.mission_graph(world.mission_id)
        task_graph = rho_client.task_graph()
    exported = rho(
        "graph", "export", "--mission-dir", str(world.mission_dir), cwd=world.repo, home=world.home
    )
    assert isinstance(mission_graph, GraphDocument)
    assert dump_graph(mission_graph).decode() == exported.stdout
    assert (
        dump_graph(task_graph).decode()
        == rho("graph", "export", cwd=world.repo, home=world.home).stdout
    )


def test_the_clients_ask_for_a_repository_scope(world: World) -> None:
    with _client(world) as rho_client:
        mission_graph = rho_client.mission_graph(world.mission_id, repository="acme/w")
        task_graph = rho_client.task_graph(repository="acme/w")
    assert mission_graph.scope.repository_id == task_graph.scope.repository_id == "acme/w"
    with pytest.raises(ClientError) as raised, _client(world) as rho_client:
        rho_client.task_graph(repository=" ")
    assert raised.value.status == 400


def test_a_log_tail(world: World) -> None:
    with _client(world) as rho_client:
        assert rho_client.log_tail(world.mission_id, "task_2", 1) == [
            "tests said: marker-output-7f3a"
        ]
        assert rho_client.log_tail(world.mission_id, "task_3") is None


def test_following_a_finished_mission_replays_it_and_ends(world: World) -> None:
    with _client(world) as rho_client:
        events = list(rho_client.follow(world.mission_id))
    journal = (world.mission_dir / "journal.jsonl").read_text().splitlines()
    # Causal order: every journal record before the mission state that follows it.
    assert [e.kind for e in events][-2:] == ["mission", "end"]
    assert events[0].kind == "journal"
    assert [e.data for e in events if e.kind == "journal"] == [json.loads(line) for line in journal]
    assert [e.id for e in events if e.kind == "journal"] == list(range(1, len(journal) + 1))
    assert events[-1] == MissionEvent("end", {"status": "partial"})


CALLS: dict[str, Callable[[Client, str], object]] = {
    "missions": lambda c, m: c.missions(),
    "mission": lambda c, m: c.mission(m),
    "mission_graph": lambda c, m: c.mission_graph(m),
    "task_graph": lambda c, m: c.task_graph(),
    "log_tail": lambda c, m: c.log_tail(m, "task_2"),
    "follow": lambda c, m: list(c.follow(m)),
}


@pytest.mark.parametrize("call", list(CALLS))
def test_a_wrong_token_raises_auth_error(world: World, call: str) -> None:
    with _client(world, "not-the-token-0123456789") as rho_client, pytest.raises(AuthError) as info:
        CALLS[call](rho_client, world.mission_id)
    assert info.value.status == 401
    assert str(info.value).startswith("unauthorized: send the token of 'rho serve'")


@pytest.mark.parametrize("call", [c for c in CALLS if c not in ("missions", "task_graph")])
def test_an_unknown_mission_raises_not_found(world: World, call: str) -> None:
    with _client(world) as rho_client, pytest.raises(NotFoundError) as info:
        CALLS[call](rho_client, "0123abcd")
    assert (info.value.status, str(info.value)) == (404, "no mission 0123abcd in this repository")


@pytest.mark.parametrize("mission_id", ["..", "../tasks", "DEADBEEF", "0123abc", ""])
def test_a_malformed_mission_id_is_refused_before_any_request(mission_id: str) -> None:
    # No server listens at this address: a request would fail otherwise.
    with Client("http://127.0.0.1:9", "t" * 20) as rho_client, pytest.raises(RequestError) as info:
        rho_client.mission(mission_id)
    assert info.value.status is None
    assert isinstance(info.value, ValueError)


def test_an_invalid_graph_raises_invalid_graph_error(httpserver: HTTPServer) -> None:
    broken = json.loads(_valid_graph())
    broken["edges"][0]["to"]["id"] = "rho/task/nowhere"
    httpserver.expect_request("/v1/tasks/graph").respond_with_json(broken)
    with (
        Client(httpserver.url_for("/"), "t" * 20) as rho_client,
        pytest.raises(InvalidGraphError) as info,
    ):
        rho_client.task_graph()
    assert "references missing target execution/rho/task/nowhere" in str(info.value)


def test_a_graph_that_is_no_json_object_is_invalid(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/v1/tasks/graph").respond_with_json([1, 2])
    with Client(httpserver.url_for("/"), "t" * 20) as rho_client, pytest.raises(InvalidGraphError):
        rho_client.task_graph()


def test_a_server_error_is_a_client_error_with_its_words(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/v1/missions").respond_with_json({"error": "disk on fire"}, 500)
    with (
        Client(httpserver.url_for("/"), "t" * 20) as rho_client,
        pytest.raises(ClientError) as info,
    ):
        rho_client.missions()
    assert (type(info.value), info.value.status, str(info.value)) == (
        ClientError,
        500,
        "disk on fire",
    )


def test_no_server_is_a_client_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound, not listening: connections are refused
        client = Client(f"http://127.0.0.1:{port}", "t" * 20)
        with client as rho_client, pytest.raises(ClientError) as info:
            rho_client.missions()
    assert info.value.status is None
    assert str(info.value).startswith("rho serve did not answer: ")


def test_the_async_client_gives_the_same_answers(world: World) -> None:
    async def main() -> dict[str, Any]:
        token = world.server.token or ""
        async with AsyncClient(world.server.url, token) as rho_client:
            return {
                "missions": await rho_client.missions(),
                "mission": await rho_client.mission(world.mission_id),
                "graph": await rho_client.mission_graph(world.mission_id),
                "tasks": await rho_client.task_graph(),
                "tail": await rho_client.log_tail(world.mission_id, "task_2"),
                "events": [e async for e in rho_client.follow(world.mission_id)],
            }

    answers = anyio.run(main)
    with _client(world) as rho_client:
        assert answers == {
            "missions": rho_client.missions(),
            "mission": rho_client.mission(world.mission_id),
            "graph": rho_client.mission_graph(world.mission_id),
            "tasks": rho_client.task_graph(),
            "tail": rho_client.log_tail(world.mission_id, "task_2"),
            "events": list(rho_client.follow(world.mission_id)),
        }


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda c: c.missions(), AuthError),
        (lambda c: c.mission("0123abcd"), AuthError),
        (lambda c: c.mission(".."), RequestError),
    ],
)
def test_the_async_client_raises_the_same_errors(
    world: World, call: Callable[[AsyncClient], Awaitable[object]], error: type[ClientError]
) -> None:
    async def main() -> None:
        async with AsyncClient(world.server.url, "not-the-token-0123456789") as rho_client:
            await call(rho_client)

    with pytest.raises(error):
        anyio.run(main)


def _valid_graph() -> str:
    return json.dumps(
        {
            "schema_version": "rho.graph/v1",
            "generated_at": "2026-01-01T00:00:00Z",
            "scope": {},
            "nodes": [_node("rho/task/a")],
            "edges": [
                {
                    "id": "e1",
                    "kind": "depends_on",
                    "from": {"kind": "execution", "id": "rho/task/a"},
                    "to": {"kind": "execution", "id": "rho/task/a"},
                    "scope": {},
                    "created_at": "2026-01-01T00:00:00Z",
                    "effective_at": "2026-01-01T00:00:00Z",
                    "provenance": {"producer": "test"},
                    "attributes": {},
                }
            ],
            "events": [],
        }
    )


def _node(node_id: str) -> dict[str, Any]:
    return {
        "id": node_id,
        "kind": "execution",
        "scope": {},
        "created_at": "2026-01-01T00:00:00Z",
        "effective_at": "2026-01-01T00:00:00Z",
        "provenance": {"producer": "test"},
        "attributes": {},
    }


def test_the_readme_example_runs(world: World) -> None:
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Looking at a mission:", 1)[1].split("\n## ", 1)[0]
    (code,) = re.findall(r"^```python\n(.*?)^```", section, flags=re.MULTILINE | re.DOTALL)
    code = code.replace("http://127.0.0.1:8765", world.server.base)
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=world.repo, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "journal dispatch task_2" in done.stdout.splitlines()
    assert done.stdout.splitlines()[-1] == "end None None"
