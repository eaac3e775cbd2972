"""Fixtures of the ``rho serve`` tests: one finished mission behind one server, a browser.

The world (a repository, its finished mission, a server without ``--token-file``) is made once
per session: no test changes it. The browser is the suite's own (``tests/conftest.py``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from ._world import SAVED, Server, World, make_world, start_server


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
