"""A scripted model server on loopback that speaks each agent CLI's provider API.

No real model is reachable here, and none is needed to test the plumbing between rho and an
agent: the CLIs only need answers of the right shape. A test gives the server a script of turns
(``WriteFile``: call the agent's file-writing tool; ``RunCommand``: its shell tool; ``Reply``:
final text; ``Fail``: answer HTTP 500 or 429 from then on; ``Hang``: answer nothing from then
on, or stall after a stream's headers) with the usage each answer reports, runs the real CLI
against it and reads back every request (``exchanges``) and the usage the server sent
(``usage_sent``).

Four wire formats, each as far as the CLIs need it:

- Anthropic Messages (claude): ``POST /v1/messages``, streamed as chunked SSE with ``tool_use``
  blocks; ``HEAD /`` answers 200 (claude's connectivity check).
- OpenAI Responses (codex): ``POST /v1/responses``, streamed ``response.*`` events.
- OpenAI Chat Completions (aider, through litellm): ``POST /v1/chat/completions``, plain JSON
  (``--no-stream``) or SSE chunks.
- Gemini (gemini): ``POST /v1beta/models/M:streamGenerateContent`` (SSE), ``:generateContent``
  and ``:countTokens``.

A *main* request (one that offers the model tools; for Chat Completions every request) takes the
next turn of the script. A *side* request (claude's title, gemini's next-speaker check) gets a
short text with the script's ``side_usage``, and is recorded all the same: the usage a CLI
reports must include it. ``Fail`` and ``Hang`` are sticky and apply to side requests too, as when a
provider is down. A hanging answer waits until the server stops (or ``HANG_LIMIT``), so fixture
teardown ends every thread.
"""

from __future__ import annotations

import functools
import itertools
import json
import threading
import time
from collections.abc import Generator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from . import _wire
from ._turns import (
    NO_USAGE,
    SIDE_USAGE,
    Fail,
    Hang,
    Reply,
    RunCommand,
    Turn,
    Usage,
    WriteFile,
)

__all__ = [
    "HANG_LIMIT",
    "Exchange",
    "Fail",
    "Hang",
    "ModelServer",
    "Reply",
    "RunCommand",
    "Turn",
    "Usage",
    "WriteFile",
    "serve",
]

HANG_LIMIT = 600.0  # the longest a hanging answer waits when nobody stops the server


@dataclass(frozen=True)
class Exchange:
    """One request the server received and what it answered (*usage* None: no usage sent;
    *at*: seconds from the server's start to the request, to see a CLI's retries)."""

    method: str
    path: str
    body: Any
    answer: str
    usage: Usage | None
    at: float


@dataclass
class _Script:
    turns: list[Turn] = field(default_factory=list)
    side_usage: Usage = SIDE_USAGE
    at: int = 0


class ModelServer:
    """The server's state, shared by its handler threads: the script and the record."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._started = time.monotonic()
        self._script = _Script()
        self._exchanges: list[Exchange] = []
        self._ids = itertools.count(1)
        self.stopping = threading.Event()
        self.url = ""

    def script(self, *turns: Turn, side_usage: Usage = SIDE_USAGE) -> None:
        """Answer the next main requests with *turns*, in order (after them: ``Reply("done")``)."""
        with self._lock:
            self._script = _Script(list(turns), side_usage)

    @property
    def exchanges(self) -> list[Exchange]:
        """Every request so far, in the order they arrived."""
        with self._lock:
            return list(self._exchanges)

    def usage_sent(self) -> Usage:
        """The sum of the usage of every answer the server sent."""
        total = NO_USAGE
        for exchange in self.exchanges:
            total = total + (exchange.usage or NO_USAGE)
        return total

    def main_requests(self) -> list[Exchange]:
        """The requests that took a turn of the script."""
        return [e for e in self.exchanges if e.answer.startswith("turn")]

    def next_id(self) -> int:
        """A number no other answer of this server used."""
        return next(self._ids)

    def answer_for(self, main: bool) -> tuple[Turn, str]:
        """The turn for a request (*main*: it takes the next one) and its label for the record."""
        with self._lock:
            script = self._script
            current = script.turns[script.at] if script.at < len(script.turns) else None
            if isinstance(current, Fail | Hang):
                return current, type(current).__name__.lower()
            if not main:
                return Reply("ok", script.side_usage), "side"
            script.at += 1
            return (current or Reply("done")), f"turn {script.at}"

    def record(self, method: str, path: str, body: Any, answer: str, usage: Usage | None) -> None:
        """Keep a request and its answer in the record."""
        with self._lock:
            at = time.monotonic() - self._started
            self._exchanges.append(Exchange(method, path, body, answer, usage, at))
            self._lock.notify_all()

    def wait_for_requests(self, count: int, timeout: float) -> bool:
        """Wait until *count* requests are recorded (a hanging one as it starts to hang), at
        most *timeout* seconds; whether they were."""
        with self._lock:
            return self._lock.wait_for(lambda: len(self._exchanges) >= count, timeout)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # chunked streams and keep-alive, as claude wants
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Keep the test's output clean: the record holds every request."""

    def do_HEAD(self) -> None:
        """Connectivity checks (claude's ``HEAD /``): 200, empty."""
        self.server.state.record("HEAD", self.path, None, "ok", None)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        """Model lists and the like: an empty list."""
        self.server.state.record("GET", self.path, None, "list", None)
        _wire.send_json(self, 200, {"object": "list", "data": [], "models": []})

    def do_POST(self) -> None:
        """A model request: find its API, answer the script's turn in that API's shape."""
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"null")
        api = _wire.api_of(self.path)
        if api is None:
            self.server.state.record("POST", self.path, body, "unknown path", None)
            _wire.send_json(self, 404, {"error": {"message": f"no such path: {self.path}"}})
            return
        turn, label = self.server.state.answer_for(api.is_main(self.path, body))
        if isinstance(turn, Hang):
            self.server.state.record("POST", self.path, body, label, None)
            if turn.streaming:
                _wire.Stream(self)
            self.server.state.stopping.wait(HANG_LIMIT)
            self.close_connection = True
            return
        # Recorded before the answer is sent: the CLI may read it and exit before this thread
        # runs again, and the test then reads the record.
        usage = None if isinstance(turn, Fail) or not _wire.reports_usage(self.path) else turn.usage
        self.server.state.record("POST", self.path, body, label, usage)
        self._answer(api, body, turn)

    def _answer(self, api: _wire.Api, body: Any, turn: Turn) -> None:
        if isinstance(turn, Fail):
            _wire.send_json(self, turn.status, api.error(turn.status))
            return
        try:
            api.answer(self, body, turn, self.server.state.next_id())
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the CLI went away mid-answer (killed, timed out)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, state: ModelServer) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = state


def serve() -> Generator[ModelServer, None, None]:
    """Run a server on a free loopback port in a thread; stop it and its hanging answers after."""
    state = ModelServer()
    server = _Server(state)
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    # A short poll: shutdown() waits for the loop to look, at every test's teardown.
    serving = functools.partial(server.serve_forever, poll_interval=0.05)
    thread = threading.Thread(target=serving, name="model-server", daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.stopping.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
