"""Python clients of ``rho serve``: ``Client`` (blocking) and ``AsyncClient``, on httpx.

```python
from rho_mission.client import Client

with Client("http://127.0.0.1:8765", token) as rho:
    for row in rho.missions():
        print(row.id, row.status, row.counts)
    graph = rho.mission_graph(row.id)      # a validated graph.GraphDocument
    for event in rho.follow(row.id):        # until the mission ends
        print(event.kind, event.data)
```

A graph is validated with the ``graph`` package before it is handed over; a mission is parsed
into a ``MissionDocument``. Every failure is a ``ClientError``::

    ClientError               root; ``status`` is the HTTP status, or None (no answer)
    ├── AuthError             401: the token was refused
    ├── NotFoundError         404: no such mission, feature or task store (also LookupError)
    ├── RequestError          400, or an argument that cannot be sent (also ValueError)
    └── InvalidGraphError     the server sent a graph that does not validate (also ValueError)

Transport failures (no server, a cut connection) and answers that are not what the API
promises are ``ClientError`` itself; httpx's own exception is the ``__cause__``.

Decision: docs/decisions/0802-sdk-clients.md
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self
from urllib.parse import quote

import httpx
from httpx_sse import ServerSentEvent, aconnect_sse, connect_sse
from pydantic import BaseModel, ValidationError

if TYPE_CHECKING:
    from graph import GraphDocument

    from .records._document import MissionDocument

__all__ = [
    "AsyncClient",
    "AuthError",
    "Client",
    "ClientError",
    "InvalidGraphError",
    "MissionEvent",
    "MissionSummary",
    "NotFoundError",
    "RequestError",
]

_MISSION_ID = re.compile(r"[0-9a-f]{8}")
_TIMEOUT = 10.0
# The server sends a comment at least every 15 s on a quiet stream.
_FOLLOW_TIMEOUT = httpx.Timeout(_TIMEOUT, read=60.0)


class ClientError(Exception):
    """Raised when a call to ``rho serve`` fails; ``status`` is the HTTP status or None."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class AuthError(ClientError):
    """Raised when the server refuses the token (401)."""


class NotFoundError(ClientError, LookupError):
    """Raised when the server has no such mission, feature or task store (404)."""

    def __str__(self) -> str:
        # LookupError would repr() the message; keep it plain.
        return str(self.args[0])


class RequestError(ClientError, ValueError):
    """Raised for a malformed argument (a mission id that is not 8 hex digits) or a 400."""


class InvalidGraphError(ClientError, ValueError):
    """Raised when a graph from the server breaks the ``rho.graph/v1`` contract."""


class MissionSummary(BaseModel):
    """One mission of ``GET /v1/missions``. Unknown keys of a newer server are ignored."""

    id: str
    status: str
    started_at: str | None = None
    completed_at: str | None = None
    features: int
    counts: dict[str, int]
    waves: int = 0
    joined_waves: int = 0
    # What it is about (its prompt, or its first tasks' subjects), and where it was merged.
    what: str = ""
    merged: str | None = None


@dataclass(frozen=True)
class MissionEvent:
    """One event of a followed mission.

    ``kind`` is ``mission`` (``data``: the whole mission.json, sent first and whenever it is
    rewritten), ``journal`` (``data``: one journal.jsonl record; ``id`` its line number) or
    ``end`` (``data``: ``{"status": ...}``, the last event).
    """

    kind: str
    data: dict[str, Any]
    id: int | None = None


class Client:
    """A blocking client of ``rho serve`` at *base_url*, sending *token* with every call."""

    def __init__(self, base_url: str, token: str, *, timeout: float = _TIMEOUT) -> None:
        self._http = httpx.Client(base_url=base_url, headers=_auth(token), timeout=timeout)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the connections."""
        self._http.close()

    def missions(self) -> list[MissionSummary]:
        """The repository's missions, newest first.

        Raises:
            ClientError: see the module's tree.
        """
        return _summaries(self._get("/v1/missions"))

    def mission(self, mission_id: str) -> MissionDocument:
        """The mission.json of mission *mission_id*.

        Raises:
            ClientError: see the module's tree (NotFoundError for an unknown id).
        """
        return _mission(self._get(_mission_path(mission_id)))

    def mission_graph(self, mission_id: str, repository: str | None = None) -> GraphDocument:
        """The validated ``rho.graph/v1`` graph of mission *mission_id* (scoped to *repository*,
        as ``rho graph export --repository``, when given).

        Raises:
            InvalidGraphError: the server's graph does not validate.
            ClientError: see the module's tree.
        """
        return _graph(self._get(_mission_path(mission_id, "/graph"), _scope(repository)))

    def task_graph(self, repository: str | None = None) -> GraphDocument:
        """The validated ``rho.graph/v1`` graph of the repository's task store (scoped to
        *repository* when given).

        Raises:
            InvalidGraphError: the server's graph does not validate.
            ClientError: see the module's tree (NotFoundError when there is no store).
        """
        return _graph(self._get("/v1/tasks/graph", _scope(repository)))

    def log_tail(self, mission_id: str, feature_id: str, lines: int = 40) -> list[str] | None:
        """The last *lines* lines of a feature's log (None when it wrote none).

        Raises:
            ClientError: see the module's tree.
        """
        path = _log_path(mission_id, feature_id)
        return _lines(self._get(path, params={"tail": str(lines)}))

    def follow(self, mission_id: str) -> Iterator[MissionEvent]:
        """The events of mission *mission_id* as they happen, until it ends.

        Raises:
            ClientError: see the module's tree.
        """
        path = _mission_path(mission_id, "/events")
        try:
            with connect_sse(self._http, "GET", path, timeout=_FOLLOW_TIMEOUT) as source:
                if source.response.is_error:
                    source.response.read()
                    _check(source.response)
                for sse in source.iter_sse():
                    event = _event(sse)
                    yield event
                    if event.kind == "end":
                        return
        except httpx.HTTPError as exc:
            raise _transport(exc) from exc

    def _get(self, path: str, params: dict[str, str] | None = None) -> httpx.Response:
        try:
            response = self._http.get(path, params=params)
        except httpx.HTTPError as exc:
            raise _transport(exc) from exc
        return _check(response)


class AsyncClient:
    """An asynchronous client of ``rho serve``; the same calls as ``Client``, awaited."""

    def __init__(self, base_url: str, token: str, *, timeout: float = _TIMEOUT) -> None:
        self._http = httpx.AsyncClient(base_url=base_url, headers=_auth(token), timeout=timeout)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connections."""
        await self._http.aclose()

    async def missions(self) -> list[MissionSummary]:
        """See ``Client.missions``."""
        return _summaries(await self._get("/v1/missions"))

    async def mission(self, mission_id: str) -> MissionDocument:
        """See ``Client.mission``."""
        return _mission(await self._get(_mission_path(mission_id)))

    async def mission_graph(self, mission_id: str, repository: str | None = None) -> GraphDocument:
        """See ``Client.mission_graph``."""
        path = _mission_path(mission_id, "/graph")
        return _graph(await self._get(path, _scope(repository)))

    async def task_graph(self, repository: str | None = None) -> GraphDocument:
        """See ``Client.task_graph``."""
        return _graph(await self._get("/v1/tasks/graph", _scope(repository)))

    async def log_tail(self, mission_id: str, feature_id: str, lines: int = 40) -> list[str] | None:
        """See ``Client.log_tail``."""
        path = _log_path(mission_id, feature_id)
        return _lines(await self._get(path, params={"tail": str(lines)}))

    async def follow(self, mission_id: str) -> AsyncIterator[MissionEvent]:
        """See ``Client.follow``.

        Raises:
            ClientError: see the module's tree.
        """
        path = _mission_path(mission_id, "/events")
        try:
            async with aconnect_sse(self._http, "GET", path, timeout=_FOLLOW_TIMEOUT) as source:
                if source.response.is_error:
                    await source.response.aread()
                    _check(source.response)
                async for sse in source.aiter_sse():
                    event = _event(sse)
                    yield event
                    if event.kind == "end":
                        return
        except httpx.HTTPError as exc:
            raise _transport(exc) from exc

    async def _get(self, path: str, params: dict[str, str] | None = None) -> httpx.Response:
        try:
            response = await self._http.get(path, params=params)
        except httpx.HTTPError as exc:
            raise _transport(exc) from exc
        return _check(response)


# -- shared by both clients: requests in, answers checked and parsed ------------------------


def _scope(repository: str | None) -> dict[str, str] | None:
    return None if repository is None else {"repository": repository}


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _mission_path(mission_id: str, rest: str = "") -> str:
    # "latest": the mission started last, as the CLI and the server take it.
    if mission_id != "latest" and not _MISSION_ID.fullmatch(mission_id):
        raise RequestError(
            f"invalid mission id {json.dumps(mission_id)}: 8 lowercase hex digits, or latest"
        )
    return f"/v1/missions/{mission_id}{rest}"


def _log_path(mission_id: str, feature_id: str) -> str:
    return _mission_path(mission_id, f"/logs/{quote(feature_id, safe='')}")


def _check(response: httpx.Response) -> httpx.Response:
    """*response* when it succeeded; else the error of its status, with the server's words."""
    if not response.is_error:
        return response
    message = _error_text(response)
    status = response.status_code
    kind = {401: AuthError, 404: NotFoundError, 400: RequestError}.get(status, ClientError)
    raise kind(message, status)


def _error_text(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        return str(body["error"])
    return f"HTTP {response.status_code} from {response.request.url.path}"


def _transport(exc: httpx.HTTPError) -> ClientError:
    return ClientError(f"rho serve did not answer: {str(exc) or type(exc).__name__}")


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError as exc:
        raise ClientError("the server's answer is not JSON", response.status_code) from exc


def _summaries(response: httpx.Response) -> list[MissionSummary]:
    body = _json(response)
    rows = body.get("missions") if isinstance(body, dict) else None
    try:
        return [MissionSummary.model_validate(row) for row in rows or ()]
    except (TypeError, ValidationError) as exc:
        raise ClientError("the server's list of missions is not valid") from exc


def _mission(response: httpx.Response) -> MissionDocument:
    from .records._document import MissionDocument

    try:
        return MissionDocument.model_validate_json(response.content)
    except ValidationError as exc:
        raise ClientError("the server's mission is not a mission document") from exc


def _graph(response: httpx.Response) -> GraphDocument:
    from graph import GraphError, validate_graph

    data = _json(response)
    if not isinstance(data, dict):
        raise InvalidGraphError("the server's graph is not a JSON object")
    try:
        return validate_graph(data)
    except GraphError as exc:
        raise InvalidGraphError(f"the server's graph is not valid: {exc}") from exc


def _lines(response: httpx.Response) -> list[str] | None:
    body = _json(response)
    lines = body.get("lines") if isinstance(body, dict) else None
    if lines is None or (isinstance(lines, list) and all(isinstance(x, str) for x in lines)):
        return lines
    raise ClientError("the server's log lines are not a list of strings")


def _event(sse: ServerSentEvent) -> MissionEvent:
    try:
        data = json.loads(sse.data)
    except ValueError as exc:
        raise ClientError(f"the server's {sse.event} event is not JSON") from exc
    if not isinstance(data, dict):
        raise ClientError(f"the server's {sse.event} event is not a JSON object")
    # SSE carries the last id over to events without one: only a journal record has its own.
    journal = sse.event == "journal" and sse.id.isdigit()
    return MissionEvent(sse.event, data, int(sse.id) if journal else None)
