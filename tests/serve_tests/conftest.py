"""Fixtures of the ``rho serve`` tests: one finished mission behind one server, a browser.

The world (a repository, its finished mission, a server without ``--token-file``) is made once
per session: no test changes it. The browser is Debian's chromium driven by Playwright; it is
never downloaded, and a machine without it fails these tests (they must run in CI).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ._world import SAVED, Server, World, make_world, start_server

if TYPE_CHECKING:
    from playwright.sync_api import Browser

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """A repository with one finished mission and a server on it (see ``World``)."""
    repo, home, mission_id = make_world(tmp_path_factory.mktemp("world"))
    server = start_server(repo, home)
    try:
        yield World(repo, home, server, mission_id)
    finally:
        _stop(server)


def _stop(server: Server) -> None:
    server.stop()
    assert server.process.stdout is not None
    server.process.stdout.close()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A home folder of the test's own."""
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


@pytest.fixture(scope="session")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where screenshots go: ``$RHO_TEST_ARTIFACTS``, else a folder of pytest's base temp."""
    given = os.environ.get("RHO_TEST_ARTIFACTS")
    folder = Path(given) if given else tmp_path_factory.getbasetemp() / "artifacts"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """List the screenshots this run saved, so that they can be found."""
    for path in SAVED:
        terminalreporter.write_line(f"rho serve tests: saved {path}")


# Module scope: Playwright's sync API runs an event loop in the test thread while it is open,
# and a test of another module may need that thread for its own loop (anyio.run).
@pytest.fixture(scope="module")
def browser(system_requirement: Callable[[str, str | None], None]) -> Iterator[Browser]:
    """Headless chromium (Debian's, never a download); skipped, naming it, where it is missing
    (a failure in CI, which installs it)."""
    if not CHROMIUM.is_file() and shutil.which("chromium") is None:
        system_requirement(
            "the browser tests",
            f"{CHROMIUM} is missing (Debian's chromium: 'apt-get install -y chromium'; "
            ".ci/run installs it)",
        )
    from playwright.sync_api import sync_playwright

    executable = str(CHROMIUM) if CHROMIUM.is_file() else str(shutil.which("chromium"))
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=executable, headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield launched
        finally:
            launched.close()
