"""The Python clients against the recorded answers of ``sdk/contract``: the set the TypeScript and
Go clients are tested against too (``sdk/contract/record.py`` recorded them from a real server).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from graph import dump_graph
from rho_mission.client import (
    AsyncClient,
    AuthError,
    Client,
    InvalidGraphError,
    NotFoundError,
    RequestError,
)

CONTRACT = Path(__file__).resolve().parents[2] / "sdk" / "contract"
RECORDED: dict[str, Any] = json.loads((CONTRACT / "answers.json").read_text(encoding="utf-8"))
MISSION = RECORDED["mission_id"]


def _serve(httpserver: HTTPServer, overrides: dict[str, str] | None = None) -> str:
    """Answer every recorded path (query included) with its recorded answer; 401 without the
    token. *overrides*: a path served from another file of the folder."""
    answers = RECORDED["answers"]
    denied = next(a for a in answers if a["name"] == "error-401")

    def handler(request: Request) -> Response:
        if request.headers.get("Authorization") != f"Bearer {RECORDED['token']}":
            chosen = denied
        else:
            found = [a for a in answers if a["authorized"] and _same(a["path"], request)]
            if not found:
                return Response('{"error": "not recorded"}', 404)
            chosen = found[0]
        name = (overrides or {}).get(request.path, chosen["file"])
        body = (CONTRACT / name).read_bytes()
        return Response(body, chosen["status"], content_type=chosen["content_type"])

    httpserver.expect_request(re.compile(".*")).respond_with_handler(handler)
    return httpserver.url_for("/")


def _same(recorded: str, request: Request) -> bool:
    from urllib.parse import parse_qs, urlsplit

    parts = urlsplit(recorded)
    asked = dict(request.args.lists())
    return parts.path == request.path and parse_qs(parts.query, keep_blank_values=True) == asked


def test_the_recorded_answers_come_back_validated(httpserver: HTTPServer) -> None:
    url = _serve(httpserver)
    with Client(url, RECORDED["token"]) as rho:
        rows = rho.missions()
        mission = rho.mission(MISSION)
        graph = rho.mission_graph(MISSION)
        scoped = rho.mission_graph(MISSION, repository="acme/widgets")
        lines = rho.log_tail(MISSION, "task_2", 5)
        events = list(rho.follow(MISSION))
    assert [r.id for r in rows] == [MISSION]
    assert mission.id == MISSION
    assert dump_graph(graph) == (CONTRACT / "mission-graph.json").read_bytes()
    assert scoped.scope.repository_id == "acme/widgets"
    assert lines == json.loads((CONTRACT / "log.json").read_bytes())["lines"]
    recorded_ids = [
        int(n) for n in re.findall(r"^id: (\d+)$", (CONTRACT / "events.txt").read_text(), re.M)
    ]
    assert [e.id for e in events if e.kind == "journal"] == recorded_ids
    # A finished mission: its journal first, then the final state (causal order), then the end.
    assert (events[-2].kind, events[-1].kind, events[-1].data) == (
        "mission",
        "end",
        {"status": "partial"},
    )


def test_the_recorded_refusals_are_typed_errors(httpserver: HTTPServer) -> None:
    url = _serve(httpserver)
    with Client(url, "wrong") as rho, pytest.raises(AuthError) as denied:
        rho.missions()
    assert denied.value.status == 401
    with Client(url, RECORDED["token"]) as rho:
        with pytest.raises(NotFoundError):
            rho.mission("ffffffff")
        with pytest.raises(RequestError):
            rho.log_tail(MISSION, "task_2", 0)
        with pytest.raises(RequestError):
            rho.task_graph(repository=" ")


def test_both_clients_refuse_the_tampered_graph(httpserver: HTTPServer) -> None:
    url = _serve(httpserver, {f"/v1/missions/{MISSION}/graph": "tampered-graph.json"})
    with Client(url, RECORDED["token"]) as rho, pytest.raises(InvalidGraphError):
        rho.mission_graph(MISSION)

    async def asynchronous() -> None:
        async with AsyncClient(url, RECORDED["token"]) as rho:
            with pytest.raises(InvalidGraphError):
                await rho.mission_graph(MISSION)

    anyio.run(asynchronous)
