"""The explicit upload of a prepared graph to Rho Cloud: ``POST {endpoint}/v1/graph/sync``.

The request body is RFC 8785 JSON ``{"graph", "projectId", "syncId"}`` whose ``graph`` is exactly
the prepared body that the sync id hashes, so a repeated upload of the same snapshot carries the
same id (also sent as ``Idempotency-Key``) and the server can answer ``duplicate``. The token
travels only in ``Authorization: Bearer``; no message built here contains it. Network errors,
non-2xx answers and malformed answers become `GraphSyncError` here, the one place where httpx
errors are translated. Redirects are not followed (a token must not leave for another place).

Decision: docs/decisions/0301-cloud-settings.md
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr
from pydantic import ValidationError as PydanticValidationError

from ._errors import GraphLimitError, GraphSyncError
from ._prepare import MAX_BODY_BYTES, PreparedGraph, canonical_json
from ._settings import token_problem

if TYPE_CHECKING:
    import httpx

__all__ = ["SyncResult", "sync_graph"]

_DETAIL_CHARS = 200


@dataclass(frozen=True)
class SyncResult:
    """What Rho Cloud answered to an upload: accepted or duplicate, its digest, its fact count."""

    sync_id: str
    accepted: bool
    duplicate: bool
    graph_digest: str
    facts: int
    status_code: int

    def message(self) -> str:
        """The line a command prints: ``Graph accepted: N facts (digest D).`` or the duplicate."""
        if self.duplicate:
            return f"Graph already synchronized: {self.facts} facts (digest {self.graph_digest})."
        return f"Graph accepted: {self.facts} facts (digest {self.graph_digest})."


class _Answer(BaseModel):
    # Unknown keys are ignored: a newer server may say more than this client understands.
    model_config = ConfigDict(extra="ignore")

    accepted: StrictBool
    duplicate: StrictBool
    graph_digest: StrictStr = Field(alias="graphDigest", min_length=1)
    facts: StrictInt = Field(ge=0)


def request_body(prepared: PreparedGraph, project_id: str) -> bytes:
    """Return the upload body: RFC 8785 JSON ``{"graph", "projectId", "syncId"}``.

    The prepared body is spliced in as it is: JCS orders keys, and ``graph`` sorts first.
    """
    return b"".join(
        (
            b'{"graph":',
            prepared.body,
            b',"projectId":',
            canonical_json(project_id),
            b',"syncId":',
            canonical_json(prepared.sync_id),
            b"}",
        )
    )


def sync_graph(
    prepared: PreparedGraph,
    *,
    endpoint: str,
    project_id: str,
    token: str,
    timeout: float = 10.0,
    transport: httpx.BaseTransport | None = None,
) -> SyncResult:
    """Upload *prepared* to ``{endpoint}/v1/graph/sync`` for *project_id* and return the answer.

    *timeout* bounds connecting, sending, and each wait for the answer, in seconds. *transport*
    replaces httpx's network transport (tests, proxies). Nothing local is changed.

    Raises:
        GraphLimitError: the request body would exceed 1 MiB (a very long project id).
        GraphSyncError: a blank project id, a blank token or one that cannot be a header
            value (spaces, non-ASCII, over 8192 characters), the endpoint cannot be reached
            or does not answer in time, a non-2xx status, or an answer that is not
            ``{accepted, duplicate, graphDigest, facts}``; ``exit_code`` is 1.
    """
    import httpx  # imported here: only an upload pays for it

    url = endpoint.rstrip("/") + "/v1/graph/sync"
    _check_arguments(url, project_id, token)
    body = request_body(prepared, project_id)
    if len(body) > MAX_BODY_BYTES:
        raise GraphLimitError(
            f"request body is {len(body)} bytes; Rho Cloud accepts at most 1 MiB",
            what="body bytes",
            count=len(body),
            limit=MAX_BODY_BYTES,
        )
    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/json",
        "Accept": "application/json",
        "Idempotency-Key": prepared.sync_id,
    }
    try:
        with httpx.Client(transport=transport, timeout=timeout, follow_redirects=False) as client:
            response = client.post(url, content=body, headers=headers)
    except httpx.TimeoutException:
        raise GraphSyncError(
            f"rho cloud did not answer within {timeout:g} seconds: {url}", url=url
        ) from None
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        reason = _redact(str(exc) or type(exc).__name__, token)
        raise GraphSyncError(f"cannot reach rho cloud at {url}: {reason}", url=url) from None
    return _result(response, prepared.sync_id, url, token)


def _check_arguments(url: str, project_id: str, token: str) -> None:
    if not project_id.strip():
        raise GraphSyncError("rho cloud project id is blank", url=url)
    problem = token_problem(token)
    if problem is not None:
        raise GraphSyncError(f"rho cloud {problem}", url=url)


def _result(response: httpx.Response, sync_id: str, url: str, token: str) -> SyncResult:
    status = response.status_code
    if not 200 <= status < 300:
        raise GraphSyncError(_status_message(response, url, token), url=url, status_code=status)
    try:
        answer = _Answer.model_validate_json(response.content)
    except PydanticValidationError as exc:
        problem = _redact(_first_problem(exc), token)
        raise GraphSyncError(
            f"rho cloud sent a malformed answer (HTTP {status}): {problem}",
            url=url,
            status_code=status,
        ) from None
    if not answer.accepted and not answer.duplicate:
        raise GraphSyncError(
            "rho cloud neither accepted the graph nor knew it already", url=url, status_code=status
        )
    return SyncResult(
        sync_id, answer.accepted, answer.duplicate, answer.graph_digest, answer.facts, status
    )


def _status_message(response: httpx.Response, url: str, token: str) -> str:
    import httpx

    status = response.status_code
    # The standard phrase, not the server's spelling of it ("INTERNAL SERVER ERROR").
    phrase = httpx.codes.get_reason_phrase(status)
    message = f"rho cloud refused the graph: HTTP {status}" + (f" {phrase}" if phrase else "")
    detail = _detail(response)
    if detail:
        message += f": {_redact(detail, token)}"
    if status in {401, 403}:
        message += " (check the token and the project id)"
    return message


def _detail(response: httpx.Response) -> str:
    """The server's own explanation, from a JSON ``error`` or ``message`` string, shortened."""
    try:
        data: Any = response.json()
    except ValueError:
        return ""
    if not isinstance(data, dict):
        return ""
    for key in ("error", "message", "detail"):
        value = data.get(key)
        if isinstance(value, str) and value.strip():
            return " ".join(value.split())[:_DETAIL_CHARS]
    return ""


def _first_problem(exc: PydanticValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"])
    message = error["msg"][:1].lower() + error["msg"][1:]
    return f"{where}: {message}" if where else message


def _redact(text: str, token: str) -> str:
    # A server or a library could echo the token back; it never reaches a message.
    return text.replace(token, "[redacted]") if token else text
