"""Fixtures of the whole suite, and the one place that decides about system packages.

Some tests need a program of the system: Debian's chromium (a real browser), bubblewrap
(``--sandbox``), Graphviz's ``dot``, Node with npm, Go; and one a facility of the kernel, cgroup
v2 folders rho may make; and the real agent CLIs (claude, codex, gemini, aider) that
``.ci/install-agents`` puts in one folder. Each has one fixture here (``browser``, ``bwrap``,
``graphviz_dot``, ``node_and_npm``, ``go_tool``, ``task_cgroups``, ``agent_cli``), and no test
module looks for one by itself
(``tests/test_system_fixtures.py`` reads their source to hold that).

The suite has two tiers: ``make test`` runs every test, ``make test-fast`` those not marked
``slow``. What is slow is decided here, by folder or module (``SLOW_FOLDERS``, ``SLOW_MODULES``:
real missions at scale, kill -9 trials, Dask clusters, browsers, real agent CLIs, the SDK
suites), never in the test modules.

On a machine without one, ``make test`` still passes: those tests skip, and pytest's summary
names each skip with its reason (``-rs`` in pyproject.toml). ``.ci/run`` installs the packages
and sets ``RHO_TESTS_REQUIRE_SYSTEM=1``: there a missing package fails the test instead, so CI
can never skip them.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser

REQUIRE_SYSTEM = "RHO_TESTS_REQUIRE_SYSTEM"

CHROMIUM = Path("/usr/bin/chromium")
# Chromium as root on a machine whose network is closed: no sandbox of its own (it is root), no
# background connections (refused here, many at a time).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
_CI_INSTALLS = ".ci/run installs it"


# The slow tier, by path below tests/ (Decision: docs/decisions/0903-tests-by-package.md): the
# folders of real agent CLIs, SDK suites and end-to-end runs, and every module whose tests run
# real missions or many real rho processes (each module above about ten seconds of a worker's
# time on 2 cores shared with other work; the performance log has the measure).
SLOW_FOLDERS = ("scenarios", "agent_cli_tests", "sdk_tests")
SLOW_MODULES = (
    "agents_tests/test_agent_limits.py",
    "cli_tests/test_closed_output.py",
    "cli_tests/test_escaped_names.py",
    "cli_tests/test_fast_json_reads.py",
    "cli_tests/test_quick_mission_views.py",
    "cli_tests/test_task_cli.py",
    "cli_tests/test_task_cli_errors.py",
    "cli_tests/test_task_cli_limits.py",
    "cli_tests/test_task_edit_cli.py",
    "cli_tests/test_trackers.py",
    "containment_tests/test_agent_homes.py",
    "containment_tests/test_group_signals.py",
    "containment_tests/test_sandbox.py",
    "containment_tests/test_sandbox_reach.py",
    "containment_tests/test_stopped_helpers.py",
    "containment_tests/test_trust_cli.py",
    "containment_tests/test_zygote.py",
    "engine_tests/test_bisect_join.py",
    "engine_tests/test_bisect_views.py",
    "engine_tests/test_engine.py",
    "engine_tests/test_fix_and_carry.py",
    "engine_tests/test_overlapping_work.py",
    "engine_tests/test_replay_conflicts.py",
    "engine_tests/test_resolve_stage.py",
    "engine_tests/test_resolve_what_is_left.py",
    "engine_tests/test_resume_adopts_finished_work.py",
    "engine_tests/test_verify_cli.py",
    "engine_tests/test_verify_report.py",
    "executors_tests/test_dask_executor.py",
    "git_tests/test_git_process_count.py",
    "git_tests/test_shared_pool.py",
    "graph_tests/test_cloud_cli.py",
    "graph_tests/test_graph_at_the_caps.py",
    "graph_tests/test_graph_cli.py",
    "graph_tests/test_graph_cli_rho.py",
    "graph_tests/test_swarm_cli.py",
    "mcp_tests/test_mcp_server.py",
    "mission_tests/test_living_store.py",
    "mission_tests/test_mission_cli.py",
    "mission_tests/test_mission_loop_clean.py",
    "mission_tests/test_mission_loop_cli.py",
    "mission_tests/test_mission_loop_merge.py",
    "mission_tests/test_planned_missions.py",
    "mission_tests/test_signed_plan.py",
    "records_tests/test_impossible_usage_figures.py",
    "records_tests/test_stage_file_names.py",
    "records_tests/test_usage.py",
    "records_tests/test_usage_hostile.py",
    "serve_tests/test_api.py",
    "serve_tests/test_browser.py",
    "serve_tests/test_follow.py",
    "serve_tests/test_report.py",
    "serve_tests/test_serve_cli.py",
    "setup_tests/test_copy_never_landed.py",
    "setup_tests/test_setup_from_tasks_work.py",
    "setup_tests/test_worktree_setup.py",
    "taskstore_tests/test_fastread.py",
    "taskstore_tests/test_fastwrite.py",
    "taskstore_tests/test_schedule_properties.py",
    "test_examples.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark ``slow`` every test of ``SLOW_FOLDERS`` and ``SLOW_MODULES``; a listed path that no
    longer exists (a file moved or renamed) stops the run instead of leaving the tier unsaid."""
    tests = Path(__file__).parent
    missing = [path for path in (*SLOW_FOLDERS, *SLOW_MODULES) if not (tests / path).exists()]
    if missing:
        raise pytest.UsageError(f"tests/conftest.py names slow tests that do not exist: {missing}")
    for item in items:
        if not item.path.is_relative_to(tests):
            continue
        relative = item.path.relative_to(tests).as_posix()
        if relative.split("/")[0] in SLOW_FOLDERS or relative in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)


def require_system(what: str, problem: str | None) -> None:
    """Skip the calling test because *problem* keeps *what* from running (fail it in CI)."""
    if problem is None:
        return
    if os.environ.get(REQUIRE_SYSTEM) == "1":
        pytest.fail(f"{what} must run here ({REQUIRE_SYSTEM}=1), but {problem}")
    pytest.skip(f"{what} skipped: {problem}")


def _program(name: str, package: str, what: str) -> str:
    """The path of the program *name*, or skip (fail in CI) naming Debian's *package*."""
    found = shutil.which(name)
    problem = f"'{name}' is not installed (Debian: {package}; {_CI_INSTALLS})"
    require_system(what, None if found else problem)
    assert found is not None
    return found


def _chromium() -> str | None:
    if CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK):
        return str(CHROMIUM)
    return shutil.which("chromium")


# Module scope: Playwright's sync API runs an event loop in the test thread while it is open,
# and a test of another module may need that thread for its own loop (anyio.run).
@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Headless chromium (Debian's, never a download), driven by Playwright; skipped, naming
    it, where it is missing or cannot start (a failure in CI, which installs it)."""
    executable = _chromium()
    what = "the browser tests"
    missing = f"{CHROMIUM} is missing (Debian: chromium; {_CI_INSTALLS})"
    require_system(what, None if executable else missing)
    assert executable is not None
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        try:
            launched = playwright.chromium.launch(
                executable_path=executable, headless=True, args=CHROMIUM_ARGS
            )
        except PlaywrightError as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            require_system(what, f"chromium ({executable}) did not start: {first}")
            raise
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def bwrap() -> str:
    """The path of bubblewrap, which can make a sandbox here, or the test skips (fails in CI)
    with bubblewrap's own reason."""
    from rho_mission._errors import InvalidMissionError
    from rho_mission.containment import require_bwrap

    try:
        require_bwrap()
    except InvalidMissionError as exc:
        require_system("the sandbox tests", str(exc))
    found = shutil.which("bwrap")
    assert found is not None
    return found


@pytest.fixture
def task_cgroups() -> None:
    """rho can make a cgroup per task here (cgroup v2, a folder of its own cgroup), or the test
    skips (fails in CI) saying why."""
    from rho_mission.containment._cgroup import cgroup_support

    line = cgroup_support()
    require_system("the cgroup tests", line if line.startswith("none") else None)


@pytest.fixture
def graphviz_dot() -> str:
    """The path of Graphviz's ``dot``, or the test skips (fails in CI)."""
    return _program("dot", "graphviz", "the Graphviz test")


@pytest.fixture
def node_and_npm() -> tuple[str, str]:
    """The paths of ``node`` and ``npm``, or the test skips (fails in CI)."""
    what = "the TypeScript client's suite"
    return _program("node", "nodejs", what), _program("npm", "npm", what)


@pytest.fixture
def go_tool() -> str:
    """The path of ``go``, or the test skips (fails in CI)."""
    return _program("go", "golang-go", "the Go client's suite")


AGENTS_BIN = "RHO_TESTS_AGENTS_BIN"
DEFAULT_AGENTS_BIN = Path("/opt/rho-agents/bin")


def agents_bin() -> Path:
    """The folder holding the agent CLIs the tests run (``.ci/install-agents`` fills it)."""
    return Path(os.environ.get(AGENTS_BIN) or DEFAULT_AGENTS_BIN)


@pytest.fixture
def agent_cli() -> Callable[[str], Path]:
    """A lookup: ``agent_cli("claude")`` is the path of that real agent CLI in the agents' bin
    folder, or the test skips (fails in CI) saying how to install it."""

    def find(name: str) -> Path:
        path = agents_bin() / name
        problem = (
            f"'{name}' is not in {path.parent} ({AGENTS_BIN} names another folder; "
            ".ci/install-agents installs it)"
        )
        usable = path.is_file() and os.access(path, os.X_OK)
        require_system(f"the real {name} tests", None if usable else problem)
        return path

    return find


def table_rows(text: str, first: str = "id") -> list[list[str]]:
    """The rows of the first plain table in *text* whose header starts with the column *first*
    (its header included), cut into cells where the header's columns start (headers are one or
    two words, two spaces apart); the table ends at a blank line or at a line of another shape."""
    lines = text.splitlines()
    at = next(n for n, line in enumerate(lines) if line.startswith(f"{first}  "))
    starts = [match.start() for match in re.finditer(r"(?:^|(?<=  ))\S", lines[at])]
    bounds = [*starts[1:], None]
    rows = [[lines[at][a:b].strip() for a, b in zip(starts, bounds, strict=True)]]
    for line in lines[at + 1 :]:
        if not line.strip() or line.startswith(("wave ", "interrupted: ")) or ":" in line[:12]:
            break
        rows.append([line[a:b].strip() for a, b in zip(starts, bounds, strict=True)])
    return rows


@pytest.fixture(scope="session")
def plain_table() -> Callable[..., list[list[str]]]:
    """``table_rows``: the rows of a plain table that ``rho`` printed."""
    return table_rows
