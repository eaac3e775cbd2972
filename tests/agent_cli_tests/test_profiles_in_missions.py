"""Each profile's line, as rho runs it: a real mission, a real CLI, the scripted model.

``rho mission --from-tasks --agent NAME`` (and with ``--sandbox``) runs one task whose agent
writes ``hello.txt`` and, where the profile lets it run the project's commands, runs one
(claude also ``git add``s); the work lands on the integration branch. rho passes its
environment on to the task, so the variables that point each CLI at the scripted server are
set in rho's (as ``_agents`` sets them for the bare CLIs).

The home lies in the repository's checkout (git excludes it): the sandbox shows it read-only,
as it shows a home under ``/home`` (one under ``/tmp`` would be private, and missing). The
whole place lies under ``/var/tmp``: codex refuses its helper binaries when its home is under
the temporary folder, which is ``/tmp`` in the sandbox.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from support.rho import RHO

from ._agents import Place, Run, base_env, scripted_model_env
from ._model_server import ModelServer, serve
from ._turns import Reply, RunCommand, Turn, WriteFile

AgentCli = Callable[[str], Path]
RAN = "printf 'ran\\n' > ran.txt"
LIMIT = 90.0  # one mission: a CLI run (1 to 12 s here) and rho around it


@pytest.fixture
def model_server() -> Iterator[ModelServer]:
    """The scripted model server on a free loopback port."""
    yield from serve()


@pytest.fixture
def place() -> Iterator[Place]:
    """A repository (one commit, ``.home/`` excluded) with the home inside it, and a
    temporary folder beside, under ``/var/tmp``; removed after."""
    root = Path(tempfile.mkdtemp(prefix="rho-profiles-", dir="/var/tmp"))
    repo = root / "repo"
    made = Place(repo / ".home", root / "tmp", repo)
    for folder in (made.home, made.tmp):
        folder.mkdir(parents=True)
    (repo / "README.md").write_text("A project.\n", encoding="utf-8")
    env = base_env(made)
    for args in (["init", "-q", "-b", "main"], ["add", "README.md"], ["commit", "-qm", "one"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True)
    (repo / ".git" / "info" / "exclude").write_text(".home/\n", encoding="utf-8")
    yield made
    shutil.rmtree(root, ignore_errors=True)


def _claude(place: Place, server: ModelServer) -> dict[str, str]:
    return scripted_model_env("claude", place.home, server.url, fail_fast=True)


def _codex(place: Place, server: ModelServer) -> dict[str, str]:
    return scripted_model_env("codex", place.home, server.url, fail_fast=True)


def _gemini(place: Place, server: ModelServer) -> dict[str, str]:
    return scripted_model_env("gemini", place.home, server.url, fail_fast=True)


def _aider(place: Place, server: ModelServer) -> dict[str, str]:
    # aider asks ``git config`` for an identity (not git's variables), and writes a
    # placeholder into the repository's config when it finds none: rho then fails the task
    # (git's configuration changed). A user's ~/.gitconfig has one.
    gitconfig = place.home / ".gitconfig"
    gitconfig.write_text(
        "[user]\n\tname = Test Author\n\temail = author@example.com\n", encoding="utf-8"
    )
    # Its edit format as aider's own variable: the profile's line names none.
    return {
        **scripted_model_env("aider", place.home, server.url),
        "GIT_CONFIG_GLOBAL": str(gitconfig),
        "AIDER_EDIT_FORMAT": "diff",
    }


SETUP: dict[str, Callable[[Place, ModelServer], dict[str, str]]] = {
    "claude": _claude,
    "codex": _codex,
    "gemini": _gemini,
    "aider": _aider,
}


def _rho(place: Place, agent_cli: AgentCli, agent: str, extra: dict[str, str], *args: str) -> Run:
    """``rho ARGS`` in the repository, the agents' programs on PATH, *extra* set."""
    env = {
        **base_env(place),
        "PATH": f"{agent_cli(agent).parent}:/usr/local/bin:/usr/bin:/bin",
        "COLUMNS": "200",
        "NO_COLOR": "1",
        **extra,
    }
    if "PYTHONPATH" in os.environ:  # a checkout's rho_mission, as the test's own
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    done = subprocess.run(
        [str(RHO), *args],
        cwd=place.repo,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=LIMIT,
    )
    return Run(done.returncode, done.stdout, done.stderr)


def _one_task(place: Place, agent_cli: AgentCli, agent: str) -> None:
    tasks = {"tasks": [{"id": "hello", "subject": "Create hello.txt", "status": "pending"}]}
    source = place.tmp / "tasks.json"
    source.write_text(json.dumps(tasks), encoding="utf-8")
    imported = _rho(place, agent_cli, agent, {}, "task", "import", str(source))
    assert imported.code == 0, imported.stderr


def _script(agent: str, sandbox: bool) -> tuple[list[Turn], dict[str, str]]:
    """The model's turns for *agent*, and the files they should land."""
    expected = {"hello.txt": f"hello from {agent}\n"}
    turns: list[Turn] = [WriteFile("hello.txt", expected["hello.txt"])]
    if agent == "aider":  # one answer: the edit; aider runs no command unasked
        return turns, expected
    # gemini offers its shell tool only where rho's sandbox holds it (--yolo).
    if agent != "gemini" or sandbox:
        turns.append(RunCommand(f"git add hello.txt && {RAN}" if agent == "claude" else RAN))
        expected["ran.txt"] = "ran\n"
    return [*turns, Reply("Done.")], expected


def _mission_dir(place: Place) -> Path:
    (folder,) = (place.repo / ".rho" / "missions").iterdir()
    return folder


def _landed(place: Place) -> dict[str, str]:
    """The files of the mission's integration branch but the first commit's README."""
    record = json.loads((_mission_dir(place) / "mission.json").read_text(encoding="utf-8"))
    head = record["integration_branch"]
    names = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", head],
        cwd=place.repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    show = ["git", "show"]
    return {
        name: subprocess.run(
            [*show, f"{head}:{name}"], cwd=place.repo, capture_output=True, text=True, check=True
        ).stdout
        for name in names
        if name != "README.md"
    }


def _log(place: Place) -> str:
    return (_mission_dir(place) / "logs" / "hello.log").read_text(errors="replace")


@pytest.mark.parametrize("sandbox", [False, True], ids=["outside", "sandbox"])
@pytest.mark.parametrize("agent", ["claude", "codex", "gemini", "aider"])
def test_each_profile_lands_a_scripted_edit(
    agent_cli: AgentCli,
    model_server: ModelServer,
    place: Place,
    agent: str,
    sandbox: bool,
    request: pytest.FixtureRequest,
) -> None:
    if sandbox:
        request.getfixturevalue("bwrap")
    extra = SETUP[agent](place, model_server)
    turns, expected = _script(agent, sandbox)
    model_server.script(*turns)
    _one_task(place, agent_cli, agent)
    flags = ["--sandbox"] if sandbox else []
    result = _rho(
        place, agent_cli, agent, extra, "mission", "--from-tasks", "--agent", agent, *flags
    )
    assert result.code == 0, result.stdout + _log(place)
    # Nothing but the work: aider's histories and tags cache, and its .gitignore line, stay out.
    assert _landed(place) == expected, _log(place)


def test_gemini_no_longer_fails_on_an_untrusted_worktree(
    agent_cli: AgentCli, model_server: ModelServer, place: Place
) -> None:
    extra = _gemini(place, model_server)
    model_server.script(WriteFile("hello.txt", "hello\n"), Reply("Done."))
    _one_task(place, agent_cli, "gemini")
    result = _rho(place, agent_cli, "gemini", extra, "mission", "--from-tasks", "--agent", "gemini")
    assert "not running in a trusted directory" not in _log(place)
    assert result.code == 0, result.stdout


def test_aiders_own_files_stay_out_of_the_commit_but_in_the_worktree(
    agent_cli: AgentCli, model_server: ModelServer, place: Place
) -> None:
    extra = _aider(place, model_server)
    model_server.script(WriteFile("hello.txt", "hello\n"))
    _one_task(place, agent_cli, "aider")
    args = ("mission", "--from-tasks", "--agent", "aider", "--keep-worktrees")
    result = _rho(place, agent_cli, "aider", extra, *args)
    assert result.code == 0, result.stdout + _log(place)
    assert _landed(place) == {"hello.txt": "hello\n"}
    listed = subprocess.run(
        ["git", "worktree", "list", "--porcelain"],
        cwd=place.repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    worktrees = [
        Path(line.split(" ", 1)[1]) for line in listed.splitlines() if line.startswith("worktree ")
    ]
    # aider wrote them in the task's worktree; rho's commit left them out.
    assert any((tree / ".aider.chat.history.md").is_file() for tree in worktrees[1:])


def test_a_sandboxed_agent_writes_its_private_home_and_the_users_stays_as_it_was(
    agent_cli: AgentCli, model_server: ModelServer, place: Place, bwrap: str
) -> None:
    extra = _codex(place, model_server)
    codex_home = place.home / ".codex"
    before = {path.name: path.read_bytes() for path in codex_home.iterdir()}
    model_server.script(WriteFile("hello.txt", "hello\n"), Reply("Done."))
    _one_task(place, agent_cli, "codex")
    args = ("mission", "--from-tasks", "--agent", "codex", "--sandbox")
    result = _rho(place, agent_cli, "codex", extra, *args)
    assert result.code == 0, result.stdout + _log(place)
    assert _landed(place) == {"hello.txt": "hello\n"}
    # codex wrote its sessions, logs and state (its private copy); the user's has its config.
    assert {path.name: path.read_bytes() for path in codex_home.iterdir()} == before


def test_the_covered_versions_are_the_ones_ci_installs() -> None:
    from rho_mission.agents import COVERED

    script = Path(__file__).resolve().parents[2] / ".ci" / "install-agents"
    text = script.read_text(encoding="utf-8")
    pins = {
        "claude": "@anthropic-ai/claude-code@",
        "codex": "@openai/codex@",
        "gemini": "@google/gemini-cli@",
        "aider": "aider-chat==",
    }
    for name, pin in pins.items():
        assert f"{pin}{COVERED[name][-1]}" in text, name


def test_rho_agents_says_whether_each_installed_version_was_tested(
    agent_cli: AgentCli, place: Place
) -> None:
    for name in SETUP:
        agent_cli(name)  # each real CLI here, or the test skips (fails in CI)
    done = _rho(place, agent_cli, "claude", {}, "agents", "--json")
    assert done.code == 0, done.stderr
    rows = {row["name"]: row for row in json.loads(done.stdout)["agents"]}
    assert {name: row["version_covered"] for name, row in rows.items()} == dict.fromkeys(
        SETUP, True
    )
    # Another version, as a program of the same name says it: not one the tests ran.
    other = place.tmp / "bin"
    other.mkdir()
    (other / "codex").write_text("#!/bin/sh\necho 'codex-cli 0.999.0'\n", encoding="utf-8")
    (other / "codex").chmod(0o755)
    text = _rho(place, agent_cli, "claude", {"PATH": f"{other}:/usr/bin:/bin"}, "agents").stdout
    said = next(line for line in text.splitlines() if line.startswith("codex: "))
    assert said == (
        f"codex: {other / 'codex'} (codex-cli 0.999.0; not a version the tests ran: 0.171.0)"
    )
