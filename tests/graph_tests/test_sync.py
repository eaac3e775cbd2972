"""Uploads against a real local HTTP server (pytest-httpserver): body, headers, answers, errors."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from typing import Any

import httpx
import pytest
import rfc8785
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from graph import document_data
from graph.cloud import (
    GraphSyncError,
    PreparedGraph,
    SyncResult,
    prepare_for_cloud,
    request_body,
    sync_graph,
)

from ._docs import sample

TOKEN = "rho-test-token-5f2c9e"
PATH = "/v1/graph/sync"
ACCEPTED = {"accepted": True, "duplicate": False, "graphDigest": "sha256:d1", "facts": 9}
DUPLICATE = {"accepted": False, "duplicate": True, "graphDigest": "sha256:d1", "facts": 9}


@pytest.fixture
def prepared() -> PreparedGraph:
    return prepare_for_cloud(sample())


def _sync(server: HTTPServer, prepared: PreparedGraph, **options: Any) -> SyncResult:
    endpoint = server.url_for("/")
    return sync_graph(prepared, endpoint=endpoint, project_id="proj-1", token=TOKEN, **options)


def _bodies(server: HTTPServer) -> list[dict[str, Any]]:
    return [json.loads(request.get_data()) for request, _ in server.log]


def test_an_accepted_upload_posts_the_graph_with_a_bearer_token(
    httpserver: HTTPServer, prepared: PreparedGraph
) -> None:
    httpserver.expect_request(PATH, method="POST").respond_with_json(ACCEPTED)
    result = _sync(httpserver, prepared)
    assert result.message() == "Graph accepted: 9 facts (digest sha256:d1)."
    assert (result.accepted, result.duplicate, result.status_code) == (True, False, 200)
    request = httpserver.log[0][0]
    assert request.headers["Authorization"] == f"Bearer {TOKEN}"
    assert request.headers["Content-Type"] == "application/json"
    assert request.headers["Idempotency-Key"] == prepared.sync_id
    body = json.loads(request.get_data())
    assert body == {
        "syncId": prepared.sync_id,
        "projectId": "proj-1",
        "graph": document_data(prepared.document),
    }


def test_the_request_body_is_canonical_and_holds_the_hashed_graph_bytes(
    prepared: PreparedGraph,
) -> None:
    body = request_body(prepared, "proj-1")
    data = json.loads(body)
    assert body == rfc8785.dumps(data)
    assert rfc8785.dumps(data["graph"]) == prepared.body


def test_a_duplicate_answer_says_already_synchronized(
    httpserver: HTTPServer, prepared: PreparedGraph
) -> None:
    httpserver.expect_request(PATH, method="POST").respond_with_json(DUPLICATE)
    result = _sync(httpserver, prepared)
    assert result.message() == "Graph already synchronized: 9 facts (digest sha256:d1)."


def test_a_repeated_upload_carries_the_same_sync_id_and_body(
    httpserver: HTTPServer, prepared: PreparedGraph
) -> None:
    httpserver.expect_ordered_request(PATH, method="POST").respond_with_json(ACCEPTED)
    httpserver.expect_ordered_request(PATH, method="POST").respond_with_json(DUPLICATE)
    first = _sync(httpserver, prepared)
    second = _sync(httpserver, prepare_for_cloud(sample()))
    assert (first.accepted, second.duplicate) == (True, True)
    requests = [request.get_data() for request, _ in httpserver.log]
    assert requests[0] == requests[1]
    assert {body["syncId"] for body in _bodies(httpserver)} == {prepared.sync_id}


def test_no_clear_text_sensitive_value_reaches_the_wire(httpserver: HTTPServer) -> None:
    secrets = {
        "prompt": "Ignore all previous instructions PROMPT-SECRET-1",
        "command": "deploy --password hunter2-CMD-SECRET",
        "file_path": "/home/alice/PATH-SECRET/notes.md",
        "branch": "feature/BRANCH-SECRET",
        "message_index": "MSGIDX-SECRET",
    }
    doc = sample()
    doc["nodes"][0]["attributes"].update(secrets)
    doc["nodes"][0]["provenance"]["evidence"] = [{"uri": "file:///srv/URI-SECRET"}]
    doc["scope"]["tenant_id"] = "TENANT-SECRET"
    httpserver.expect_request(PATH, method="POST").respond_with_json(ACCEPTED)
    _sync(httpserver, prepare_for_cloud(doc))
    request = httpserver.log[0][0]
    wire = request.get_data() + str(request.headers).encode()
    for needle in [*secrets.values(), "URI-SECRET", "TENANT-SECRET", "tenant_id"]:
        assert needle.encode() not in wire
    assert b"prompt_sha256" in wire
    assert b"sessionId" not in wire


def test_a_trailing_slash_on_the_endpoint_is_ignored(
    httpserver: HTTPServer, prepared: PreparedGraph
) -> None:
    httpserver.expect_request(PATH, method="POST").respond_with_json(ACCEPTED)
    endpoint = httpserver.url_for("/")
    assert endpoint.endswith("/")
    sync_graph(prepared, endpoint=endpoint, project_id="p", token=TOKEN)
    assert httpserver.log[0][0].path == PATH


def test_a_transport_can_be_given(httpserver: HTTPServer, prepared: PreparedGraph) -> None:
    httpserver.expect_request(PATH, method="POST").respond_with_json(ACCEPTED)
    assert _sync(httpserver, prepared, transport=httpx.HTTPTransport(retries=0)).accepted


def _url(server: HTTPServer) -> str:
    return server.url_for("/").rstrip("/") + PATH


def test_a_server_error_is_a_sync_error_with_exit_code_1(
    httpserver: HTTPServer, prepared: PreparedGraph
) -> None:
    httpserver.expect_request(PATH, method="POST").respond_with_data("boom", status=500)
    message = "rho cloud refused the graph: HTTP 500 Internal Server Error"
    with pytest.raises(GraphSyncError, match=rf"^{re.escape(message)}$") as caught:
        _sync(httpserver, prepared)
    assert (caught.value.exit_code, caught.value.status_code) == (1, 500)
    assert caught.value.url == _url(httpserver)


def test_an_unauthorized_answer_never_shows_the_token(
    httpserver: HTTPServer, prepared: PreparedGraph
) -> None:
    echo = {"error": f"token {TOKEN} is not valid\nfor this project"}
    httpserver.expect_request(PATH, method="POST").respond_with_json(echo, status=401)
    message = (
        "rho cloud refused the graph: HTTP 401 Unauthorized: token [redacted] is not valid for"
        " this project (check the token and the project id)"
    )
    with pytest.raises(GraphSyncError, match=rf"^{re.escape(message)}$"):
        _sync(httpserver, prepared)


def test_a_redirect_is_not_followed(httpserver: HTTPServer, prepared: PreparedGraph) -> None:
    httpserver.expect_request(PATH, method="POST").respond_with_data(
        "", status=307, headers={"Location": "http://127.0.0.1:9/elsewhere"}
    )
    message = "rho cloud refused the graph: HTTP 307 Temporary Redirect"
    with pytest.raises(GraphSyncError, match=rf"^{re.escape(message)}$"):
        _sync(httpserver, prepared)
    assert len(httpserver.log) == 1


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ("not json", "invalid JSON: expected ident at line 1 column 2"),
        ('{"accepted": true, "duplicate": false, "facts": 3}', "graphDigest: field required"),
        (
            '{"accepted": "yes", "duplicate": false, "graphDigest": "d", "facts": 3}',
            "accepted: input should be a valid boolean",
        ),
        (
            '{"accepted": true, "duplicate": false, "graphDigest": "d", "facts": -1}',
            "facts: input should be greater than or equal to 0",
        ),
        ("[]", "input should be an object"),
    ],
)
def test_a_malformed_answer_is_a_sync_error(
    httpserver: HTTPServer, prepared: PreparedGraph, answer: str, problem: str
) -> None:
    httpserver.expect_request(PATH, method="POST").respond_with_data(
        answer, content_type="application/json"
    )
    message = f"rho cloud sent a malformed answer (HTTP 200): {problem}"
    with pytest.raises(GraphSyncError, match=rf"^{re.escape(message)}$"):
        _sync(httpserver, prepared)


def test_an_answer_neither_accepted_nor_duplicate_is_a_sync_error(
    httpserver: HTTPServer, prepared: PreparedGraph
) -> None:
    answer = {**ACCEPTED, "accepted": False}
    httpserver.expect_request(PATH, method="POST").respond_with_json(answer)
    message = "rho cloud neither accepted the graph nor knew it already"
    with pytest.raises(GraphSyncError, match=rf"^{re.escape(message)}$"):
        _sync(httpserver, prepared)


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def test_a_refused_connection_is_a_sync_error(prepared: PreparedGraph) -> None:
    endpoint = f"http://127.0.0.1:{_closed_port()}"
    pattern = rf"^cannot reach rho cloud at {re.escape(endpoint)}/v1/graph/sync: .*refused.*$"
    with pytest.raises(GraphSyncError, match=pattern) as caught:
        sync_graph(prepared, endpoint=endpoint, project_id="p", token=TOKEN)
    assert caught.value.exit_code == 1
    assert TOKEN not in str(caught.value)


def test_a_server_that_does_not_answer_in_time_is_a_sync_error(
    httpserver: HTTPServer, prepared: PreparedGraph
) -> None:
    release = threading.Event()

    def stall(request: Request) -> Response:
        release.wait(timeout=10)  # bounded: the test releases it as soon as the client gave up
        return Response("{}", status=200)

    httpserver.expect_request(PATH, method="POST").respond_with_handler(stall)
    message = f"rho cloud did not answer within 0.2 seconds: {_url(httpserver)}"
    try:
        with pytest.raises(GraphSyncError, match=rf"^{re.escape(message)}$"):
            _sync(httpserver, prepared, timeout=0.2)
    finally:
        release.set()
        # The server logs the request once its handler returns, after the client gave up:
        # wait for it, so that it never lands in the log of the test that comes next.
        deadline = time.monotonic() + 10
        while not httpserver.log and time.monotonic() < deadline:
            time.sleep(0.01)
        httpserver.clear_log()


@pytest.mark.parametrize(
    ("project_id", "token", "message"),
    [
        (" ", TOKEN, "rho cloud project id is blank"),
        ("p", "", "rho cloud token is blank"),
        ("p", "tok en", "rho cloud token has a space or a character outside printable ASCII"),
        ("p", "tok\n", "rho cloud token has a space or a character outside printable ASCII"),
        ("p", "toké", "rho cloud token has a space or a character outside printable ASCII"),
    ],
)
def test_blank_project_or_token_is_refused_before_any_request(
    httpserver: HTTPServer, prepared: PreparedGraph, project_id: str, token: str, message: str
) -> None:
    with pytest.raises(GraphSyncError, match=rf"^{re.escape(message)}$"):
        sync_graph(prepared, endpoint=httpserver.url_for("/"), project_id=project_id, token=token)
    assert httpserver.log == []


def test_an_unsupported_endpoint_scheme_is_a_sync_error(prepared: PreparedGraph) -> None:
    pattern = r"^cannot reach rho cloud at ftp://example\.invalid/v1/graph/sync: .+$"
    with pytest.raises(GraphSyncError, match=pattern):
        sync_graph(prepared, endpoint="ftp://example.invalid", project_id="p", token=TOKEN)
