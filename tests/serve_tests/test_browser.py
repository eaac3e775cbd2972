"""The mission page in a real headless chromium: live from ``rho serve``, and as a report.

Screenshots are kept as artefacts (``$RHO_TEST_ARTIFACTS``, else pytest's base temp folder);
``mission-page.png`` of the live test is the README's picture.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from support.repos import init_home_repo as make_repo
from support.rho import WAIT, gate_cmd, wait_until
from support.rho import run_rho as rho
from support.stores import import_tasks, mission_ids
from support.stores import spec as task

from ._world import World, end_mission, running_server, save_artefact, start_mission

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

TIMEOUT_MS = WAIT * 1000
VIEWPORT = {"width": 1180, "height": 860}


def _card(feature: str, status: str) -> str:
    return f'.card[data-feature-id="{feature}"][data-status="{status}"]'


def _page(browser: Browser, errors: list[str]) -> Page:
    page = browser.new_page(viewport={"width": VIEWPORT["width"], "height": VIEWPORT["height"]})
    page.set_default_timeout(TIMEOUT_MS)
    page.on("pageerror", lambda error: errors.append(str(error)))
    return page


def _mission_tasks(gate: Path) -> list[dict[str, object]]:
    """Two waves: task_1 waits for the gate; task_2 fails, so task_4 is blocked."""
    failing = "echo 'collecting tests'; echo 'FAILED tests/test_parser.py::test_empty'; exit 1"
    return [
        task("task_1", gate_cmd(gate, "echo lexer > lexer.txt"), subject="Write the lexer"),
        task("task_2", failing, subject="Parser tests"),
        task("task_3", "echo parser > parser.txt", "task_1", subject="Write the parser"),
        task("task_4", "echo docs > docs.txt", "task_2", "task_3", subject="Document the API"),
        task("task_5", "echo never > never.txt", subject="A dropped idea", status="cancelled"),
    ]


def test_the_page_follows_a_running_mission_without_a_reload(
    browser: Browser, tmp_path: Path, home: Path, artifacts: Path
) -> None:
    repo = make_repo(tmp_path / "repo", home)
    gate = tmp_path / "gate"
    import_tasks(repo, _mission_tasks(gate), home=home)
    errors: list[str] = []
    with running_server(repo, home) as server:
        mission = start_mission(repo, home, "--keep-going")
        try:
            wait_until(lambda: bool(mission_ids(repo)), "the mission's record")
            (mission_id,) = mission_ids(repo)
            page = _page(browser, errors)
            page.goto(f"{server.url}#token={server.token}&mission={mission_id}")
            page.wait_for_selector(_card("task_1", "in_progress"))
            assert page.inner_text(f"{_card('task_1', 'in_progress')} .badge") == "RUNNING"
            page.evaluate("window.loadedOnce = true")  # gone if the page ever reloads
            page.screenshot(path=save_artefact(artifacts / "mission-page-running.png"))
            gate.touch()
            page.wait_for_selector(_card("task_1", "completed"))
            page.wait_for_selector(_card("task_3", "completed"))
            page.wait_for_selector("#conn:has-text('ended')")  # the stream's end
            page.wait_for_selector('.failure[data-feature-id="task_2"] pre.log')
            assert page.evaluate("window.loadedOnce") is True
            assert mission.wait(WAIT) == 1
            _check_final_page(page)
            page.screenshot(path=save_artefact(artifacts / "mission-page.png"), full_page=True)
        finally:
            end_mission(mission)
    assert errors == []


def _check_final_page(page: Page) -> None:
    statuses = page.eval_on_selector_all(
        ".card", "cards => cards.map(c => [c.dataset.featureId, c.dataset.status])"
    )
    assert statuses == [
        ["task_1", "completed"],
        ["task_2", "failed"],
        ["task_3", "completed"],
        ["task_4", "blocked"],
    ]
    assert page.inner_text(f"{_card('task_4', 'blocked')} .badge") == "BLOCKED"
    assert page.inner_text('.failure[data-feature-id="task_2"] pre.log').splitlines() == [
        "collecting tests",
        "FAILED tests/test_parser.py::test_empty",
    ]
    assert page.locator("svg.edges path").count() == 3  # task_1 -> task_3, task_2/3 -> task_4
    assert page.locator(".timeline .trow .bar").count() == 3  # task_4 never ran
    joins = page.locator(".join").all_inner_texts()
    assert joins[0] == "wave 1 joined 2 feature(s), 1 completed, 1 failed, 1 downstream blocked"
    assert joins[2] == "wave 3 joined 1 feature(s), 0 completed, 0 failed, 1 blocked"
    # The header counts as the cards say (before the fix: "1 pending" beside a BLOCKED card).
    head = page.inner_text(".head .meta")
    assert "1 blocked" in head
    assert "pending" not in head
    # The cancelled task is no feature: the page says it was held, and why.
    assert page.locator(".held li").all_inner_texts() == ["task_5: cancelled in the task store"]


def test_a_static_report_opens_offline_with_the_same_view(
    browser: Browser, world: World, tmp_path: Path, artifacts: Path
) -> None:
    target = tmp_path / "report.html"
    result = rho(
        "mission",
        "report",
        world.mission_id,
        "--html",
        str(target),
        cwd=world.repo,
        home=world.home,
    )
    assert result.code == 0, result.stderr
    errors: list[str] = []
    page = _page(browser, errors)
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(target.as_uri())
    page.wait_for_selector(_card("task_2", "failed"))
    page.screenshot(path=save_artefact(artifacts / "mission-report.png"), full_page=True)
    statuses = page.eval_on_selector_all(".card", "cards => cards.map(c => c.dataset.status)")
    assert statuses == ["completed", "failed", "blocked"]
    error = page.inner_text('.failure[data-feature-id="task_2"] .error')
    assert error == "error: command failed: exit code 3"
    assert page.locator("pre.log").count() == 0  # no log text without --include-text
    assert page.inner_text(".head .integration") == (
        "integration: 1 merge, 2 agent runs per landed task"
    )
    assert [url for url in requests if not url.startswith(("file:", "data:"))] == []
    assert errors == []


@pytest.mark.parametrize("via", ["fragment", "prompt"])
def test_the_page_lists_missions_with_the_token_from_the_url_or_a_prompt(
    browser: Browser, world: World, via: str
) -> None:
    errors: list[str] = []
    page = _page(browser, errors)
    token = world.server.token or ""
    if via == "prompt":
        page.once("dialog", lambda dialog: dialog.accept(token))
        page.goto(world.server.url)
    else:
        page.goto(f"{world.server.url}#token={token}")
    page.wait_for_selector(f'tr[data-mission-id="{world.mission_id}"]')
    assert token not in page.url  # the fragment is cleaned once the token is kept
    page.click(f'a[href="#mission={world.mission_id}"]')
    page.wait_for_selector(_card("task_2", "failed"))
    assert errors == []


def test_the_page_shows_what_came_of_a_conflicted_merge(
    browser: Browser, tmp_path: Path, home: Path
) -> None:
    repo = make_repo(tmp_path / "repo", home)
    resolver = Path(__file__).resolve().parents[2] / "examples" / "agents" / "stand-in-resolver.sh"
    tasks = [task(f"add_{n}", f"echo {n} >> registry.txt", subject=f"add {n}") for n in "ab"]
    import_tasks(repo, tasks, home=home)
    ran = rho("mission", "--from-tasks", "--resolve", str(resolver), cwd=repo, home=home)
    assert ran.code == 0, ran.stdout + ran.stderr
    (mission_id,) = mission_ids(repo)
    errors: list[str] = []
    with running_server(repo, home) as server:
        page = _page(browser, errors)
        page.goto(f"{server.url}#token={server.token}&mission={mission_id}")
        page.wait_for_selector(_card("add_b", "completed"))
        line = page.locator(f"{_card('add_b', 'completed')} .conflict")
        assert line.inner_text() == (
            "merge conflict in registry.txt with add_a: resolved (1 resolve attempt)"
        )
        assert line.get_attribute("data-outcome") == "resolved"
        assert page.locator(f"{_card('add_a', 'completed')} .conflict").count() == 0
        assert "1 conflicted" in page.inner_text(".join")
        # The mission's integration, in rho's words (its row of the missions' list).
        page.wait_for_selector(".head .integration")
        assert page.inner_text(".head .integration") == (
            "integration: 2 merges, 1 conflict (1 resolved), 1.5 agent runs per landed task"
        )
        page.goto(f"{server.url}#token={server.token}")
        row = page.locator(f'tr[data-mission-id="{mission_id}"] .integration')
        assert (
            row.inner_text() == "2 merges, 1 conflict (1 resolved), 1.5 agent runs per landed task"
        )
    assert errors == []


def test_the_page_shows_what_each_task_and_the_mission_spent(
    browser: Browser, tmp_path: Path, home: Path
) -> None:
    repo = make_repo(tmp_path / "repo", home)
    usage = 'printf \'{"cost_usd": 0.25, "input_tokens": 1200, "output_tokens": 300}\''
    tasks = [task(n, f'{usage} > "$RHO_USAGE_FILE"; echo {n} > {n}.txt') for n in ("a", "b")]
    import_tasks(repo, tasks, home=home)
    ran = rho("mission", "--from-tasks", cwd=repo, home=home)
    assert ran.code == 0, ran.stdout + ran.stderr
    (mission_id,) = mission_ids(repo)
    errors: list[str] = []
    with running_server(repo, home) as server:
        page = _page(browser, errors)
        page.goto(f"{server.url}#token={server.token}&mission={mission_id}")
        page.wait_for_selector(_card("b", "completed"))
        card = page.locator(f"{_card('a', 'completed')} .usage")
        assert card.inner_text() == "usage: $0.25, 1.2k in / 300 out"
        assert page.inner_text(".head .usage") == "usage: $0.50, 2.4k in / 600 out"
    assert errors == []
