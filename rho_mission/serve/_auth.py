"""Who may read: every route but the page and ``/healthz`` needs the server's token.

The token comes as ``Authorization: Bearer <token>`` or ``X-API-Key: <token>``, and is compared
in constant time (``hmac.compare_digest``). A browser's ``EventSource`` cannot send a header, so
the events route alone also takes it as the query parameter ``access_token`` (the name of RFC
6750 §2.3); the page reads the token from its URL fragment, which no browser sends to a server.
Anything else gets 401 with a JSON error and no data.

Before the token, the ``Host`` a request names must be one the server answers to
(``HostCheck``): a loopback bind answers loopback names only, against DNS rebinding.

Decision: docs/decisions/0801-serve.md
"""

from __future__ import annotations

import hmac
import json
import re
from collections.abc import Sequence
from urllib.parse import parse_qsl

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["PUBLIC_PATHS", "HostCheck", "TokenAuth"]

#: Paths served without a token: the page (it holds no data) and the health check.
PUBLIC_PATHS = frozenset({"/", "/healthz"})
# The one route a browser reads with EventSource, which cannot send headers.
_QUERY_TOKEN_PATH = re.compile(r"/v1/missions/[^/]+/events")
_QUERY_TOKEN = "access_token"
_NO_STORE = {"Cache-Control": "no-store"}
_UNAUTHORIZED = (
    "unauthorized: send the token of 'rho serve' as 'Authorization: Bearer TOKEN'"
    " or 'X-API-Key: TOKEN'"
)


class HostCheck:
    """ASGI middleware: answer 400 to a request whose ``Host`` is not a name this server has.

    A page on another site can make a browser resolve its own name to 127.0.0.1 (DNS
    rebinding) and then read this server as if it were that site: refusing the foreign name
    stops it, token or not. *allowed* are host names without the port; ``*`` allows any.
    """

    def __init__(self, app: ASGIApp, allowed: Sequence[str]) -> None:
        self.app = app
        self._any = "*" in allowed
        self._allowed = frozenset(name.lower() for name in allowed)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse an HTTP request for another host; pass everything else on."""
        host = _host_name(scope)
        if scope["type"] != "http" or self._any or host in self._allowed:
            await self.app(scope, receive, send)
            return
        message = f"host {json.dumps(host)} is not served here; use the address rho serve printed"
        response = JSONResponse({"error": message}, status_code=400, headers=_NO_STORE)
        await response(scope, receive, send)


def _host_name(scope: Scope) -> str:
    # The Host header without its port: "[::1]:8765" -> "[::1]", "localhost:80" -> "localhost".
    for key, value in scope.get("headers", ()):
        if key == b"host":
            text = bytes(value).decode("latin-1").strip().lower()
            if text.startswith("["):
                return text[: text.find("]") + 1] if "]" in text else text
            return text.partition(":")[0]
    return ""


class TokenAuth:
    """ASGI middleware: let a request through only with the token, except on ``PUBLIC_PATHS``."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer 401 to an HTTP request without the token; pass everything else on."""
        if scope["type"] != "http" or scope["path"] in PUBLIC_PATHS or self._authorized(scope):
            await self.app(scope, receive, send)
            return
        response = JSONResponse(
            {"error": _UNAUTHORIZED},
            status_code=401,
            headers={"WWW-Authenticate": 'Bearer realm="rho"', "Cache-Control": "no-store"},
        )
        await response(scope, receive, send)

    def _authorized(self, scope: Scope) -> bool:
        return any(self._matches(candidate) for candidate in _candidates(scope))

    def _matches(self, candidate: bytes) -> bool:
        # Empty never matches (the token is never empty); the comparison takes the same time
        # wherever the first difference is.
        return bool(candidate) and hmac.compare_digest(candidate, self._token)


def _candidates(scope: Scope) -> list[bytes]:
    """Every token the request offers: its headers, and its query on the events route."""
    found: list[bytes] = []
    for name, value in scope["headers"]:
        if name == b"authorization":
            scheme, _, credentials = value.strip().partition(b" ")
            if scheme.lower() == b"bearer":
                found.append(credentials.strip())
        elif name == b"x-api-key":
            found.append(value.strip())
    if _QUERY_TOKEN_PATH.fullmatch(scope["path"]):
        query = scope.get("query_string", b"").decode("latin-1")
        found.extend(v.encode() for k, v in parse_qsl(query) if k == _QUERY_TOKEN)
    return found
