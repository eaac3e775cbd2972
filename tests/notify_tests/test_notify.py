"""Attention (``--notify CMD``, ``--notify-url URL``): the user's notifier hears of a mission.

Real ``rho`` processes in real repositories with shell tasks; the notifier is a real shell
command, the webhook a real local HTTP server (pytest-httpserver). The culprit event, which only
a bisecting join raises, goes through the real observer and the real notifier process.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import anyio
import pytest
from pytest_httpserver import HTTPServer

from rho_mission import Feature, InvalidMissionError, Mission, MissionConfig
from rho_mission.notify import Notifier, attention, end_event
from rho_mission.records._document import MissionDocument, Verification, WaveJoin
from support.rho import run_rho
from support.stores import import_tasks, mission_dir, spec

pytestmark = pytest.mark.usefixtures("no_leftover_tasks")

_SECRETS = {"ANTHROPIC_API_KEY": "sk-ant-not-a-key", "OPENAI_API_KEY": "sk-not-a-key"}


def _copy_event(out: Path) -> str:
    """A notifier that keeps the event (and its environment) beside *out*."""
    env_file = out.with_suffix(".env")
    return f'cp "$RHO_EVENT_FILE" {shlex.quote(str(out))}; env > {shlex.quote(str(env_file))}'


def _two_tasks(project: Path, second: str = "echo b > b.txt") -> None:
    import_tasks(project, [spec("a", "echo a > a.txt"), spec("b", second, "a")])


def _mission_id(project: Path) -> str:
    document: dict[str, Any] = json.loads((mission_dir(project) / "mission.json").read_text())
    return str(document["id"])


def test_a_finished_mission_hands_its_event_to_the_notifier(project: Path, tmp_path: Path) -> None:
    _two_tasks(project)
    out = tmp_path / "event.json"

    done = run_rho("mission", "--from-tasks", "--notify", _copy_event(out), cwd=project)

    assert done.code == 0, done.stderr
    ident = _mission_id(project)
    assert json.loads(out.read_text()) == {
        "schema_version": "rho.notify/v1",
        "kind": "mission_ended",
        "mission": ident,
        "status": "completed",
        "counts": {
            "features": 2,
            "completed": 2,
            "failed": 0,
            "cancelled": 0,
            "blocked": 0,
            "not_run": 0,
            "pending": 0,
        },
        "cost": None,  # no attempt reported its usage: unknown, not zero
        "next": f"rho mission merge {ident}",
    }
    assert "warning" not in done.stderr


def test_the_notifier_sees_no_secret_of_rhos_environment(project: Path, tmp_path: Path) -> None:
    _two_tasks(project)
    out = tmp_path / "event.json"

    done = run_rho(
        "mission", "--from-tasks", "--notify", _copy_event(out), cwd=project, env=_SECRETS
    )

    assert done.code == 0, done.stderr
    seen = dict(
        line.split("=", 1)
        for line in out.with_suffix(".env").read_text().splitlines()
        if "=" in line
    )
    assert not set(_SECRETS) & set(seen)
    assert not any(value in out.with_suffix(".env").read_text() for value in _SECRETS.values())
    assert {"PATH", "HOME", "RHO_EVENT_FILE"} <= set(seen)


def test_a_failed_mission_tells_what_to_type_next(project: Path, tmp_path: Path) -> None:
    import_tasks(project, [spec("a", "exit 4"), spec("b", "echo b > b.txt", "a")])
    out = tmp_path / "event.json"

    done = run_rho("mission", "--from-tasks", "--notify", _copy_event(out), cwd=project)

    assert done.code == 1
    event = json.loads(out.read_text())
    assert (event["kind"], event["status"]) == ("mission_stopped", "failed")
    assert (event["counts"]["failed"], event["counts"]["blocked"]) == (1, 1)
    assert event["next"] == f"rho mission show {_mission_id(project)}"
    # Nothing the user typed or a task said travels: no command, no subject, no path.
    text = out.read_text()
    for clear in ("exit 4", "do a", str(project), "rho-mission/"):
        assert clear not in text


def test_a_failing_notifier_is_one_warning_and_the_mission_succeeds(project: Path) -> None:
    _two_tasks(project)

    done = run_rho("mission", "--from-tasks", "--notify", "echo busy; exit 3", cwd=project)

    assert done.code == 0, done.stderr
    warnings = [line for line in done.stderr_lines if line.startswith("warning:")]
    assert warnings == [
        "warning: the notifier of mission_ended failed: exit code 3"
        " (its output: logs/notify/notifier.log)"
    ]
    assert (mission_dir(project) / "logs/notify/notifier.log").read_text() == "busy\n"
    assert json.loads((mission_dir(project) / "mission.json").read_text())["status"] == "completed"


def test_an_unreachable_url_is_one_warning(project: Path) -> None:
    _two_tasks(project)

    # Port 9 (discard) on the loopback: nothing listens, the connection is refused at once.
    done = run_rho(
        "mission", "--from-tasks", "--notify-url", "http://127.0.0.1:9/hook", cwd=project
    )

    assert done.code == 0, done.stderr
    assert [line for line in done.stderr_lines if line.startswith("warning:")] == [
        "warning: the notifier of mission_ended failed: its URL was not reached (ConnectError)"
    ]


def test_the_url_gets_the_same_event_with_the_bearer_token(
    project: Path, tmp_path: Path, httpserver: HTTPServer
) -> None:
    _two_tasks(project)
    token_file = tmp_path / "hook.token"
    token_file.write_text("hook-token-0123456789abcdef\n")
    httpserver.expect_request("/hook", method="POST").respond_with_data("ok")
    out = tmp_path / "event.json"

    done = run_rho(
        "mission", "--from-tasks", "--notify", _copy_event(out),
        "--notify-url", httpserver.url_for("/hook"), "--notify-token-file", str(token_file),
        cwd=project,
    )  # fmt: skip

    assert done.code == 0, done.stderr
    [(request, _)] = httpserver.log
    assert request.headers["Authorization"] == "Bearer hook-token-0123456789abcdef"
    assert request.headers["Content-Type"] == "application/json"
    assert request.get_data() == out.read_bytes()
    assert json.loads(request.get_data())["kind"] == "mission_ended"
    # mission.json keeps where the token is, never the token.
    assert "hook-token" not in (mission_dir(project) / "mission.json").read_text()


def test_a_url_answering_an_error_is_one_warning(project: Path, httpserver: HTTPServer) -> None:
    _two_tasks(project)
    httpserver.expect_request("/hook", method="POST").respond_with_data("no", status=503)

    done = run_rho(
        "mission", "--from-tasks", "--notify-url", httpserver.url_for("/hook"), cwd=project
    )

    assert done.code == 0, done.stderr
    assert (
        "warning: the notifier of mission_ended failed: its URL answered 503" in done.stderr_lines
    )


def test_resume_keeps_the_notifier(project: Path, tmp_path: Path) -> None:
    flag = tmp_path / "fixed"
    _two_tasks(project, second=f"test -e {shlex.quote(str(flag))} && echo b > b.txt")
    out = tmp_path / "event.json"
    assert run_rho("mission", "--from-tasks", "--notify", _copy_event(out), cwd=project).code == 1
    assert json.loads(out.read_text())["kind"] == "mission_stopped"
    flag.touch()

    done = run_rho("mission", "resume", "latest", cwd=project)

    assert done.code == 0, done.stderr
    event = json.loads(out.read_text())
    assert (event["kind"], event["counts"]["completed"]) == ("mission_ended", 2)


def test_a_budget_reached_says_how_to_go_on(project: Path, tmp_path: Path) -> None:
    usage = """echo '{"cost_usd": 1.0}' > "$RHO_USAGE_FILE"; echo ID > ID.txt"""
    tasks = [spec("a", usage.replace("ID", "a")), spec("b", usage.replace("ID", "b"), "a")]
    import_tasks(project, tasks)
    out = tmp_path / "event.json"

    done = run_rho(
        "mission", "--from-tasks", "--budget-usd", "1", "--notify", _copy_event(out), cwd=project
    )

    assert done.code == 1, done.stderr
    event = json.loads(out.read_text())
    assert event["kind"] == "budget_reached"
    assert event["cost"]["cost_usd"] == 1.0
    assert event["counts"]["completed"] == 1
    assert event["next"] == f"rho mission resume {_mission_id(project)} --budget-usd 2"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--notify-url", "ftp://host/x"), "give an http:// or https:// URL"),
        (("--notify-token-file", "{token}"), "--notify-token-file needs --notify-url URL"),
    ],
)
def test_bad_notify_options_are_refused_before_anything_runs(
    project: Path, tmp_path: Path, args: tuple[str, str], message: str
) -> None:
    _two_tasks(project)
    token = tmp_path / "t"
    token.write_text("x" * 20)

    done = run_rho("mission", "--from-tasks", *(a.format(token=token) for a in args), cwd=project)

    assert done.code == 2
    assert done.stderr_lines[0].startswith("error: ")
    assert message in done.stderr_lines[0]
    assert not (project / ".rho" / "missions").exists()


def test_a_join_that_names_culprits_notifies_once(project: Path, tmp_path: Path) -> None:
    out = tmp_path / "culprits"
    config = MissionConfig(notify_command=f'cat "$RHO_EVENT_FILE" >> {shlex.quote(str(out))}')
    mission = Mission.new(project, "culprits", config=config)
    Path(mission.dir).mkdir(parents=True)
    join = WaveJoin(
        wave=2, feature_ids=["a", "b"], completed_ids=["a"], failed_ids=["b"], blocked_ids=[],
        started_at="2026-01-01T00:00:00Z", completed_at="2026-01-01T00:00:01Z", summary="",
        verification=Verification(status="failed", bisect_runs=2, culprit_ids=["b"]),
    )  # fmt: skip
    warnings: list[str] = []

    async def run() -> None:
        async with attention(mission, None, warnings) as watched:
            assert watched is not None
            watched.wave_joined(mission, join)
            watched.wave_joined(mission, join)  # the same join recorded again: one event

    anyio.run(run)

    [event] = [json.loads(part) for part in _split_documents(out.read_text())]
    assert (event["kind"], event["wave"], event["culprits"]) == ("culprit_found", 2, ["b"])
    assert event["next"] == f"rho mission show {mission.id}"
    assert warnings == []


def _split_documents(text: str) -> list[str]:
    decoder, found, at = json.JSONDecoder(), [], 0
    while at < len(text.rstrip()):
        _, end = decoder.raw_decode(text, at)
        found.append(text[at:end])
        at = end + 1
    return found


def test_the_library_notifies_through_the_config(project: Path, tmp_path: Path) -> None:
    out = tmp_path / "event.json"
    config = MissionConfig(notify_command=_copy_event(out))
    mission = Mission.new(project, "from Python", [Feature("a", command="echo a > a.txt")], config)

    mission.run_staged_sync()

    event = json.loads(out.read_text())
    assert (event["kind"], event["mission"], event["counts"]["completed"]) == (
        "mission_ended",
        mission.id,
        1,
    )
    assert mission.warnings == []


def test_a_notifier_past_its_time_limit_is_stopped_and_warned_of(
    project: Path, tmp_path: Path
) -> None:
    config = MissionConfig(notify_command="echo started; exec sleep 600")
    mission = Mission.new(project, "slow notifier", config=config)
    Path(mission.dir).mkdir(parents=True)
    warnings: list[str] = []

    anyio.run(Notifier(mission, warnings, timeout=0.5).send, end_event(mission))

    assert warnings == [
        "the notifier of mission_stopped failed: timed out after 0.5s"
        " (its output: logs/notify/notifier.log)"
    ]


def test_an_error_of_the_run_comes_out_as_itself(project: Path) -> None:
    # The notifier's sends run beside the run in a task group: the run's own error must not
    # come out wrapped in a group (a library caller catches MissionError).
    mission = Mission.new(project, "raises", config=MissionConfig(notify_command="true"))

    async def run() -> None:
        async with attention(mission, None, []):
            raise InvalidMissionError("the run's own error")

    with pytest.raises(InvalidMissionError, match=r"^the run's own error$"):
        anyio.run(run)


class _Broken:
    """A progress display whose output is gone: every call raises."""

    def feature_changed(self, mission: MissionDocument, feature: object) -> None:
        raise BrokenPipeError("stdout closed")

    def wave_joined(self, mission: MissionDocument, join: WaveJoin) -> None:
        raise BrokenPipeError("stdout closed")


def test_a_broken_display_never_silences_the_culprits(project: Path, tmp_path: Path) -> None:
    out = tmp_path / "culprits"
    config = MissionConfig(notify_command=f'cat "$RHO_EVENT_FILE" >> {shlex.quote(str(out))}')
    mission = Mission.new(project, "culprits", config=config)
    Path(mission.dir).mkdir(parents=True)
    joins = [_culprit_join(1, "a"), _culprit_join(2, "b")]
    warnings: list[str] = []

    async def run() -> None:
        async with attention(mission, _Broken(), warnings) as watched:
            assert watched is not None
            for join in joins:
                watched.wave_joined(mission, join)

    anyio.run(run)

    events = [json.loads(part) for part in _split_documents(out.read_text())]
    assert sorted(e["culprits"][0] for e in events) == ["a", "b"]
    assert warnings == ["progress display stopped: BrokenPipeError: stdout closed"]


def _culprit_join(wave: int, culprit: str) -> WaveJoin:
    return WaveJoin(
        wave=wave, feature_ids=[culprit], completed_ids=[], failed_ids=[culprit], blocked_ids=[],
        started_at="2026-01-01T00:00:00Z", completed_at="2026-01-01T00:00:01Z", summary="",
        verification=Verification(status="failed", bisect_runs=1, culprit_ids=[culprit]),
    )  # fmt: skip
