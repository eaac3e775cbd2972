"""A verified mission in ``rho mission report``: each wave's checks on the page, no clear text.

The page is opened in the suite's headless chromium (``tests/conftest.py``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from support.repos import run_git
from support.rho import run_rho
from support.stores import import_tasks, mission_dir, spec

if TYPE_CHECKING:
    from playwright.sync_api import Browser

pytestmark = pytest.mark.usefixtures("no_leftover_tasks")

CHECK = "grep -q new b.py"
_DATA = re.compile(r'<script type="application/json" id="rho-data">(.*?)</script>', re.S)


@pytest.fixture
def unverified(make_repo: Callable[[str, int], Path]) -> Path:
    """A mission whose wave 1 merged and failed its checks (wave 2 blocked)."""
    repo = make_repo("repo", 1)
    (repo / "b.py").write_text("old\n")
    run_git(repo, "add", "b.py")
    run_git(repo, "commit", "--quiet", "--message=b")
    import_tasks(
        repo,
        [spec("one", "echo one > one.txt"), spec("two", "echo two > two.txt", "one")],
    )
    result = run_rho("mission", "--from-tasks", "--verify", CHECK, "--no-bisect", cwd=repo)
    assert result.code == 1, result.stderr
    return repo


def _report(repo: Path, target: Path, *options: str) -> dict[str, Any]:
    result = run_rho("mission", "report", "latest", "--html", str(target), *options, cwd=repo)
    assert result.code == 0, result.stderr
    match = _DATA.search(target.read_text(encoding="utf-8"))
    assert match is not None
    data: dict[str, Any] = json.loads(match.group(1))
    return data


def test_a_report_shows_each_waves_checks_and_only_their_metadata(
    unverified: Path, tmp_path: Path, browser: Browser
) -> None:
    target = tmp_path / "report.html"
    data = _report(unverified, target)

    [join] = data["mission"]["wave_joins"]
    assert join["verification"] == {
        "status": "failed",
        "attempts": 1,
        "flaky": 0,
        "fix_attempts": 0,
        "duration_ms": join["verification"]["duration_ms"],
        "error": "command failed: exit code 1",
    }
    assert CHECK not in target.read_text(encoding="utf-8")
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(target.as_uri())
    line = page.text_content('.verification[data-wave="1"]') or ""  # the words, not the CSS case
    assert line.startswith("verification failed 1 check · took ")
    failure = page.inner_text('.failure[data-verification="1"] .error')
    assert failure == "error: command failed: exit code 1"
    assert errors == []


def test_a_report_with_text_holds_the_tail_of_the_failed_checks(
    unverified: Path, tmp_path: Path, browser: Browser
) -> None:
    target = tmp_path / "report.html"
    data = _report(unverified, target, "--include-text")

    tail = data["tails"]["verify-1"]
    assert tail[-1] == "== rho: verify-1 attempt 1 failed: command failed: exit code 1 =="
    page = browser.new_page()
    page.goto(target.as_uri())
    shown = page.inner_text('.failure[data-verification="1"] pre.log').splitlines()
    assert shown == tail
    assert mission_dir(unverified).name in page.inner_text(".mission h2")
