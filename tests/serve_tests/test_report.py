"""``rho mission report --html``: one static page, with no clear text unless asked for."""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path

import pytest

from support.repos import init_home_repo as make_repo
from support.rho import run_rho as rho

from ._world import FAILURE_OUTPUT, World

# Texts of the world's mission that a report without --include-text must not hold: the
# prompt, a subject, a description, commands (one is also the failed task's output), a file
# the mission made, the repository's path and a branch.
_DATA = re.compile(r'<script type="application/json" id="rho-data">(.*?)</script>', re.S)


def _texts(world: World) -> list[str]:
    record = json.loads((world.mission_dir / "mission.json").read_text())
    return [
        record["prompt"],
        "marker-subject-1c2d",
        "marker-description-99ab",
        FAILURE_OUTPUT,
        "echo made > made.txt",
        "made.txt",
        str(world.repo),
        f"rho-mission/{world.mission_id}/task_1",
    ]


def _report(world: World, target: Path, *options: str) -> tuple[str, dict[str, object]]:
    result = rho(
        "mission", "report", world.mission_id, "--html", str(target), *options,
        cwd=world.repo, home=world.home,
    )  # fmt: skip
    assert result.code == 0, result.stderr
    html = target.read_text(encoding="utf-8")
    match = _DATA.search(html)
    assert match is not None
    return html, json.loads(match.group(1))


def test_a_report_holds_no_prompt_command_description_or_output(
    world: World, tmp_path: Path
) -> None:
    html, data = _report(world, tmp_path / "report.html")
    blob = html + json.dumps(data, ensure_ascii=False)
    leaked = [text for text in _texts(world) if text in blob]
    assert leaked == []
    mission = data["mission"]
    assert isinstance(mission, dict)
    statuses = {f["id"]: f["status"] for f in mission["features"]}
    assert statuses == {"task_1": "completed", "task_2": "failed", "task_3": "pending"}
    failed = next(f for f in mission["features"] if f["id"] == "task_2")
    assert failed["error"] == "command failed: exit code 3"  # rho's own words stay
    assert data["tails"] == {}
    assert data["text"] is False
    assert stat.S_IMODE((tmp_path / "report.html").stat().st_mode) == 0o644


def test_include_text_puts_the_texts_and_the_log_tail_in(world: World, tmp_path: Path) -> None:
    _, data = _report(world, tmp_path / "report.html", "--include-text")
    blob = json.dumps(data, ensure_ascii=False)
    missing = [text for text in _texts(world) if text not in blob]
    assert missing == []
    assert data["tails"] == {"task_2": [FAILURE_OUTPUT]}
    assert stat.S_IMODE((tmp_path / "report.html").stat().st_mode) == 0o600


def test_a_report_is_self_contained(world: World, tmp_path: Path) -> None:
    html, _ = _report(world, tmp_path / "report.html", "--include-text")
    assert re.findall(r"\b(?:src|href)=\"(?!data:|#)", html) == []
    assert "Content-Security-Policy" in html
    assert "connect-src" not in html


def test_the_command_says_what_it_wrote(world: World, tmp_path: Path) -> None:
    target = tmp_path / "r.html"
    result = rho(
        "mission", "report", "latest", "--html", str(target), cwd=world.repo, home=world.home
    )
    assert result.stdout.splitlines() == [
        f"report of mission {world.mission_id} (partial) written to {target}",
        "it holds no prompt, description, command or log text (--include-text adds them)",
    ]


def test_text_cannot_break_out_of_the_embedded_data(tmp_path: Path, home: Path) -> None:
    repo = make_repo(tmp_path / "repo", home)
    hostile = "</script><script>alert(1)</script><!--"
    source = tmp_path / "tasks.json"
    task = {
        "id": "task_1",
        "subject": hostile,
        "status": "pending",
        "metadata": {"command": "true"},
    }
    source.write_text(json.dumps({"tasks": [task]}))
    assert rho("task", "import", str(source), cwd=repo, home=home).code == 0
    assert rho("mission", "--from-tasks", cwd=repo, home=home).code == 0
    target = tmp_path / "r.html"
    result = rho(
        "mission", "report", "latest", "--html", str(target), "--include-text", cwd=repo, home=home
    )
    assert result.code == 0, result.stderr
    html = target.read_text()
    assert hostile not in html
    assert html.count("</script>") == 2
    match = _DATA.search(html)
    assert match is not None
    assert json.loads(match.group(1))["mission"]["features"][0]["description"] == hostile


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("0123abcd",),
            "no mission matches \"0123abcd\"; 'rho mission list' shows the missions here",
        ),
        (("nowhere",), "no mission at nowhere: mission.json missing"),
    ],
)
def test_an_unknown_mission_is_refused(
    world: World, tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    target = tmp_path / "r.html"
    result = rho("mission", "report", *args, "--html", str(target), cwd=world.repo, home=world.home)
    assert (result.code, result.stderr_lines) == (2, [f"error: {message}"])
    assert not target.exists()


def test_a_file_that_cannot_be_written_is_refused(world: World, tmp_path: Path) -> None:
    target = tmp_path / "missing-folder" / "r.html"
    result = rho(
        "mission", "report", "latest", "--html", str(target), cwd=world.repo, home=world.home
    )
    assert (result.code, result.stderr_lines) == (
        2,
        [f"error: cannot write {target}: no such file or directory"],
    )


def test_html_is_required(world: World) -> None:
    result = rho("mission", "report", "latest", cwd=world.repo, home=world.home)
    assert result.code == 2
    assert result.stderr_lines[0] == "error: Missing option '--html'."


def test_a_join_summary_edited_to_carry_text_is_left_out(world: World, tmp_path: Path) -> None:
    from rho_mission import Mission
    from rho_mission.serve._report import report_payload

    mission = Mission.load(world.mission_dir)
    own = [join.summary for join in mission.wave_joins]
    payload = report_payload(mission, world.mission_dir)
    assert [join["summary"] for join in payload["mission"]["wave_joins"]] == own
    mission.wave_joins[0].summary = "wave 1: the secret plan of Ada"
    payload = report_payload(mission, world.mission_dir)
    shown = payload["mission"]["wave_joins"]
    assert shown[0]["summary"] == ""
    assert "Ada" not in json.dumps(payload)
    assert set(shown[0]) == {
        "wave", "feature_ids", "completed_ids", "failed_ids", "cancelled_ids", "blocked_ids",
        "not_run_ids",
        "started_at", "completed_at", "summary", "verification",
        "usage",  # numbers only
    }  # fmt: skip
