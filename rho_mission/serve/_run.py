"""Binding and running ``rho serve``: the socket, the announcement, uvicorn, a clean stop.

The socket is bound before anything is printed, so the printed URL (with the real port when
``--port 0`` asked for any free one) already accepts connections. Ctrl-C and SIGTERM stop the
server gracefully (open event streams get two seconds) and end the command with exit 0.

Decision: docs/decisions/0801-serve.md
"""

from __future__ import annotations

import ipaddress
import signal
import socket
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING

from ._errors import ServeError

if TYPE_CHECKING:
    from starlette.types import ASGIApp

__all__ = ["allowed_hosts", "bind", "is_loopback", "page_url", "run_server"]

# Seconds open connections (event streams) get once a stop was asked for.
_KEEP_ALIVE = 75  # seconds, as nginx keeps them
_GRACE = 2


class _Stopped(Exception):
    """Raised in the main thread by SIGTERM, after uvicorn's own graceful stop."""


def is_loopback(host: str) -> bool:
    """Whether *host* is ``localhost`` or a loopback address (127.0.0.0/8, ::1)."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def allowed_hosts(host: str) -> list[str]:
    """The ``Host`` header values a server bound to *host* answers (against DNS rebinding).

    A loopback bind answers its loopback names; another address, itself; a wildcard bind
    (``0.0.0.0``, ``::``) has no one name, and answers any (its token is what guards it).
    """
    if host in ("0.0.0.0", "::", ""):
        return ["*"]
    names = {host, f"[{host}]" if ":" in host else host}
    if is_loopback(host):
        names |= {"localhost", "127.0.0.1", "[::1]"}
    return sorted(names)


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on *host*:*port* (port 0: any free port).

    Raises:
        ServeError: the address cannot be resolved or bound (in use, not ours, no permission).
    """
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except (socket.gaierror, UnicodeError) as exc:
        raise ServeError(f"cannot serve on {host}: {exc}") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        reason = str(exc.strerror or exc).lower()
        raise ServeError(f"cannot serve on {host}:{port}: {reason}") from None
    return sock


def page_url(sock: socket.socket) -> str:
    """The URL of the page served on *sock*."""
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/"


def run_server(app: ASGIApp, sock: socket.socket, ready: Callable[[], None]) -> None:
    """Serve *app* on *sock* until Ctrl-C or SIGTERM; *ready* is called once before serving.

    Process-wide while it serves: a SIGTERM handler of its own and uvicorn's SIGINT and SIGTERM
    handlers (each put back at the end), so it runs in the main thread; ``rho serve`` is its
    caller, never a mission.
    """
    import uvicorn

    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,  # an access log would print the event stream's access_token
        lifespan="off",
        timeout_graceful_shutdown=_GRACE,
        # A client's idle kept-alive connection stays open this long (uvicorn's default is 5 s):
        # a script that works a few seconds between two calls must not have its next request
        # meet a socket the server just closed (Node's fetch then fails with "other side
        # closed"; seen in the TypeScript client's live test under load).
        timeout_keep_alive=_KEEP_ALIVE,
    )
    server = uvicorn.Server(config)
    previous = signal.signal(signal.SIGTERM, _raise_stopped)
    try:
        ready()
        server.run(sockets=[sock])
    except (KeyboardInterrupt, _Stopped):
        pass  # uvicorn stopped gracefully first, then handed the signal back
    finally:
        signal.signal(signal.SIGTERM, previous)
        sock.close()


def _raise_stopped(signum: int, frame: FrameType | None) -> None:
    raise _Stopped
