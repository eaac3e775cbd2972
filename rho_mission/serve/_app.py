"""The ASGI application of ``rho serve``: routes over one repository's missions and store.

Routes (all ``GET``; every ``/v1`` route needs the token, see ``_auth``)::

    /                                     the live page (no data in it)
    /healthz                              {"status": "ok"}
    /v1/missions                          {"missions": [summary, ...]}, newest first
    /v1/missions/{id}                     mission.json as stored (its bytes)
    /v1/missions/{id}/graph               its rho.graph/v1 document, as `rho graph export`
                                          (?repository=SCOPE: as its --repository)
    /v1/missions/{id}/events              Server-Sent Events until it ends (see ``_events``)
    /v1/missions/{id}/logs/{feature}      {"feature_id", "lines"}: its log's last lines (?tail=N)
    /v1/tasks/graph                       the task store's graph, as `rho graph export`
                                          (?repository=SCOPE too)

Errors are JSON ``{"error": message}`` with the status of the error (400, 401, 404, 500).
File reads run in worker threads; nothing here takes a lock (see ``_source``).

Decision: docs/decisions/0801-serve.md
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .._errors import MissionError
from ._auth import HostCheck, TokenAuth
from ._errors import BadRequestError, ServeError
from ._events import event_stream
from ._graphs import mission_graph_bytes, task_graph_bytes
from ._page import live_page

if TYPE_CHECKING:
    from starlette.types import ASGIApp

    from ._source import Repository

__all__ = ["MAX_TAIL_LINES", "create_app"]

#: The most log lines one request may ask for.
MAX_TAIL_LINES = 1000
_DEFAULT_TAIL = 40
_NUMBER = re.compile(r"[0-9]{1,9}")
_NO_STORE = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}


def create_app(
    repository: Repository, token: str, allowed_hosts: Sequence[str] = ("*",)
) -> ASGIApp:
    """The application serving *repository*, readable with *token*, answering requests whose
    ``Host`` is one of *allowed_hosts* (port aside; ``*``: any) and refusing others with 400."""
    routes = [
        Route("/", _page, methods=["GET"]),
        Route("/healthz", _health, methods=["GET"]),
        Route("/v1/missions", _missions, methods=["GET"]),
        Route("/v1/missions/{mission_id}", _mission, methods=["GET"]),
        Route("/v1/missions/{mission_id}/graph", _mission_graph, methods=["GET"]),
        Route("/v1/missions/{mission_id}/events", _events, methods=["GET"]),
        Route("/v1/missions/{mission_id}/logs/{feature_id}", _log, methods=["GET"]),
        Route("/v1/tasks/graph", _task_graph, methods=["GET"]),
    ]
    handlers: dict[Any, Any] = {
        HTTPException: _http_error,
        ServeError: _serve_error,
        MissionError: _internal_error,
        OSError: _internal_error,
    }
    app = Starlette(routes=routes, exception_handlers=handlers)
    app.state.repository = repository
    return HostCheck(TokenAuth(app, token), allowed_hosts)


def _repository(request: Request) -> Repository:
    found: Repository = request.app.state.repository
    return found


def _json(data: object, status: int = 200) -> JSONResponse:
    return JSONResponse(data, status_code=status, headers=_NO_STORE)


def _raw_json(data: bytes) -> Response:
    return Response(data, media_type="application/json", headers=_NO_STORE)


# -- routes (plain functions run in a worker thread: they read files) -------------------------


def _page(request: Request) -> HTMLResponse:
    html, policy = live_page()
    headers = {
        **_NO_STORE,
        "Content-Security-Policy": policy,
        "Referrer-Policy": "no-referrer",
        "X-Frame-Options": "DENY",
    }
    return HTMLResponse(html, headers=headers)


def _health(request: Request) -> JSONResponse:
    return _json({"status": "ok"})


def _missions(request: Request) -> JSONResponse:
    return _json({"missions": _repository(request).summaries()})


def _mission(request: Request) -> Response:
    return _raw_json(_repository(request).mission_bytes(request.path_params["mission_id"]))


def _mission_graph(request: Request) -> Response:
    mission_id = request.path_params["mission_id"]
    scope = request.query_params.get("repository")
    return _raw_json(mission_graph_bytes(_repository(request), mission_id, scope))


def _task_graph(request: Request) -> Response:
    scope = request.query_params.get("repository")
    return _raw_json(task_graph_bytes(_repository(request), scope))


def _log(request: Request) -> JSONResponse:
    tail = _tail(request.query_params.get("tail"))
    mission_id = request.path_params["mission_id"]
    feature_id = request.path_params["feature_id"]
    lines = _repository(request).log_tail(mission_id, feature_id, tail)
    return _json({"feature_id": feature_id, "lines": lines})


def _tail(value: str | None) -> int:
    """The ``tail`` query parameter: 1 to ``MAX_TAIL_LINES`` lines, 40 when absent.

    Raises:
        BadRequestError: it is not such a number.
    """
    if value is None:
        return _DEFAULT_TAIL
    if not _NUMBER.fullmatch(value) or not 1 <= int(value) <= MAX_TAIL_LINES:
        raise BadRequestError(f"tail must be a number of lines from 1 to {MAX_TAIL_LINES}")
    return int(value)


async def _events(request: Request) -> StreamingResponse:
    from anyio import to_thread

    after = _last_event_id(request.headers.get("last-event-id"))
    mission_id = request.path_params["mission_id"]
    # Checked before the stream starts, so that a bad or unknown id is a plain 400 or 404.
    folder = await to_thread.run_sync(_repository(request).mission_folder, mission_id)
    headers = {**_NO_STORE, "X-Accel-Buffering": "no"}
    return StreamingResponse(
        event_stream(folder, after), media_type="text/event-stream", headers=headers
    )


def _last_event_id(value: str | None) -> int:
    """The journal line after which a reconnecting client goes on (0: from the start).

    Raises:
        BadRequestError: the header is not a line number.
    """
    if value is None or value == "":
        return 0
    if not _NUMBER.fullmatch(value):
        raise BadRequestError("Last-Event-ID must be the id of an event of this stream")
    return int(value)


# -- errors ----------------------------------------------------------------------------------


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return _json({"error": exc.detail.lower()}, exc.status_code)


async def _serve_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ServeError)
    return _json({"error": str(exc)}, exc.status)


async def _internal_error(request: Request, exc: Exception) -> Response:
    # A link planted in .rho, an unreadable file: the server's side, said without a traceback.
    if isinstance(exc, OSError):
        return _json({"error": f"cannot read: {(exc.strerror or str(exc)).lower()}"}, 500)
    return _json({"error": str(exc)}, 500)
