"""The scripted model server itself, over real HTTP on loopback: its streams, its record, its
failure modes, and that a hanging answer ends when the server stops (no CLI needed)."""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from ._model_server import ModelServer, serve
from ._turns import SIDE_USAGE, Fail, Hang, Reply, Usage, WriteFile

WAIT = 30.0  # bound on every wait; never reached when things work
WRITE_TOOL = [{"name": "Write", "input_schema": {"type": "object"}}]


@pytest.fixture
def model_server() -> Iterator[ModelServer]:
    """The scripted model server on a free loopback port."""
    yield from serve()


def _post(server: ModelServer, path: str, body: Any) -> http.client.HTTPResponse:
    port = int(server.url.rsplit(":", 1)[1])
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT)
    connection.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    return connection.getresponse()


def _events(response: http.client.HTTPResponse) -> list[tuple[str, Any]]:
    """The (event name, data) pairs of a server-sent event stream."""
    events = []
    for block in response.read().decode().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        if "data" in fields:
            events.append((fields.get("event", ""), json.loads(fields["data"])))
    return events


def test_a_streamed_anthropic_answer_is_chunked_and_calls_the_offered_tool(
    model_server: ModelServer,
) -> None:
    model_server.script(WriteFile("/repo/hello.txt", "hi\n", Usage(10, 2)))
    body = {"model": "m", "stream": True, "tools": WRITE_TOOL, "messages": []}
    response = _post(model_server, "/v1/messages?beta=true", body)
    assert response.getheader("Transfer-Encoding") == "chunked"
    events = _events(response)
    assert [name for name, _ in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert events[1][1]["content_block"]["name"] == "Write"
    called = json.loads(events[2][1]["delta"]["partial_json"])
    assert called == {"file_path": "/repo/hello.txt", "content": "hi\n"}
    assert events[4][1]["usage"] == {"output_tokens": 2}
    assert model_server.usage_sent() == Usage(10, 2)


def test_a_request_without_tools_is_a_side_request_and_takes_no_turn(
    model_server: ModelServer,
) -> None:
    model_server.script(Reply("final", Usage(5, 1)))
    side = _post(model_server, "/v1/messages", {"model": "m", "messages": []})
    assert json.loads(side.read())["content"] == [{"type": "text", "text": "ok"}]
    main = _post(model_server, "/v1/messages", {"model": "m", "tools": WRITE_TOOL})
    assert json.loads(main.read())["content"] == [{"type": "text", "text": "final"}]
    assert [e.answer for e in model_server.exchanges] == ["side", "turn 1"]
    assert model_server.usage_sent() == SIDE_USAGE + Usage(5, 1)


@pytest.mark.parametrize("status", [500, 429])
def test_a_failure_is_sticky_and_reports_no_usage(model_server: ModelServer, status: int) -> None:
    model_server.script(Fail(status))
    for _ in range(2):
        response = _post(model_server, "/v1/chat/completions", {"model": "m", "messages": []})
        assert response.status == status
        assert json.loads(response.read())["error"]["message"] == f"scripted {status}"
    assert [e.answer for e in model_server.exchanges] == ["fail", "fail"]
    assert model_server.usage_sent() == Usage(0, 0)


def test_a_hanging_answer_ends_when_the_server_stops() -> None:
    servers = serve()
    server = next(servers)
    server.script(Hang())
    outcome: list[str] = []

    def ask() -> None:
        try:
            _post(server, "/v1/responses", {"model": "m", "tools": WRITE_TOOL}).read()
            outcome.append("answered")
        except (http.client.RemoteDisconnected, ConnectionError) as exc:
            outcome.append(type(exc).__name__)

    client = threading.Thread(target=ask)
    client.start()
    assert server.wait_for_requests(1, WAIT)
    started = time.monotonic()
    servers.close()  # the fixture's teardown
    client.join(WAIT)
    assert (outcome, server.exchanges[0].answer) == (["RemoteDisconnected"], "hang")
    assert time.monotonic() - started < WAIT
