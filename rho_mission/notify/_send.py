"""The notifier: the user's command run, and the URL posted to, with one event.

The command runs as a task's command runs (``containment._process.run_command``: ``/bin/sh -c``
in its own process group, a time limit, its output in ``logs/notify/notifier.log``), in the
repository's root, with ``RHO_EVENT_FILE`` naming the event (a 0600 file in a private
temporary folder, removed once the command ended). Its environment is built, not inherited:
where programs are, whose home, the locale, the terminal and the desktop session (what
``notify-send`` needs), never an agent's key nor anything else of rho's environment. The URL
gets the same bytes by POST (httpx), with ``Authorization: Bearer TOKEN`` when a token file is
set, as ``rho serve`` takes it.

A notifier never decides a mission's outcome: its failure (an exit other than 0, its time
limit, a URL unreachable or answering other than 2xx, a token file unreadable) is one line in
the mission's warnings, and the mission goes on as it was.

Decision: docs/decisions/0806-notifications.md
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..containment._process import run_command
from ..records._document import MissionDocument
from ..records._places import notify_log
from ._event import event_bytes

__all__ = ["NOTIFIER_KEPT", "NOTIFY_TIMEOUT", "Notifier", "notifier_environ"]

#: Seconds a notifier (its command, or its POST) may take before it is stopped.
NOTIFY_TIMEOUT = 30.0
_GRACE = 2.0
#: The variables of rho's environment a notifier's command keeps: where programs are, whose
#: home it is, the locale and terminal, the desktop session (a notification's bus and display).
NOTIFIER_KEPT = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "TERM",
        "TZ",
        "LANG",
        "LANGUAGE",
        "LC_ALL",
        "LC_CTYPE",
        "LC_MESSAGES",
        "TMPDIR",
        "DISPLAY",
        "WAYLAND_DISPLAY",
        "XDG_RUNTIME_DIR",
        "DBUS_SESSION_BUS_ADDRESS",
    }
)
_MAX_TOKEN_BYTES = 64 * 1024


def notifier_environ(environ: Mapping[str, str], event_file: Path) -> dict[str, str]:
    """The whole environment of a notifier's command: *environ*'s ``NOTIFIER_KEPT`` variables
    and ``RHO_EVENT_FILE``."""
    env = {name: value for name, value in environ.items() if name in NOTIFIER_KEPT}
    env.setdefault("PATH", os.defpath)
    env["RHO_EVENT_FILE"] = str(event_file)
    return env


class Notifier:
    """Sends a mission's events to its ``notify_command`` and ``notify_url``; what fails is
    appended to *warnings*."""

    def __init__(
        self, mission: MissionDocument, warnings: list[str], timeout: float = NOTIFY_TIMEOUT
    ) -> None:
        self.mission = mission
        self.warnings = warnings
        self.timeout = timeout

    @classmethod
    def for_mission(cls, mission: MissionDocument, warnings: list[str]) -> Notifier | None:
        """The notifier of *mission*'s config; None when it has neither command nor URL."""
        config = mission.config
        if config.notify_command is None and config.notify_url is None:
            return None
        return cls(mission, warnings)

    async def send(self, event: dict[str, Any]) -> None:
        """Give *event* to the command, then to the URL (each that is set)."""
        data = event_bytes(event)
        config = self.mission.config
        if config.notify_command is not None:
            self._warn(event, await self._run(config.notify_command, data))
        if config.notify_url is not None:
            self._warn(event, await self._post(config.notify_url, data))

    def _warn(self, event: dict[str, Any], problem: str | None) -> None:
        if problem is not None:
            self.warnings.append(f"the notifier of {event['kind']} failed: {problem}")

    async def _run(self, command: str, data: bytes) -> str | None:
        log = notify_log(self.mission.dir)
        try:
            with tempfile.TemporaryDirectory(prefix="rho-event-") as folder:
                event_file = Path(folder, "event.json")
                _write_private(event_file, data)
                result = await run_command(
                    command,
                    cwd=Path(self.mission.repo),
                    env=notifier_environ(os.environ, event_file),
                    log_path=log,
                    timeout=self.timeout,
                    grace=_GRACE,
                )
        except OSError as exc:
            return f"it could not start: {exc.strerror or exc}"
        if result.ok():
            return None
        return f"{result.describe()} (its output: {log.relative_to(self.mission.dir)})"

    async def _post(self, url: str, data: bytes) -> str | None:
        headers = {"Content-Type": "application/json"}
        token_file = self.mission.config.notify_token_file
        if token_file is not None:
            token = _read_token(Path(token_file))
            if token is None:
                return "its token file cannot be read, or holds no token"
            headers["Authorization"] = f"Bearer {token}"
        import httpx  # here: its import costs every mission's start tens of milliseconds

        try:
            async with httpx.AsyncClient(timeout=self.timeout) as client:
                answer = await client.post(url, content=data, headers=headers)
        except (httpx.HTTPError, httpx.InvalidURL) as exc:  # never the URL: it may hold a secret
            return f"its URL was not reached ({type(exc).__name__})"
        if not answer.is_success:
            return f"its URL answered {answer.status_code}"
        return None


def _write_private(path: Path, data: bytes) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)


def _read_token(path: Path) -> str | None:
    """The token of *path* (a ``rho serve --token-file``: the token, white space around it);
    None when it cannot be read or holds none."""
    try:
        with path.open("rb") as handle:
            text = handle.read(_MAX_TOKEN_BYTES + 1).decode()
    except (OSError, UnicodeDecodeError):
        return None
    token = text.strip()
    if not token or len(text) > _MAX_TOKEN_BYTES or any(c.isspace() for c in token):
        return None
    return token
