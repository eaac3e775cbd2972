"""Each real agent CLI as the resolver of a conflicted merge (``--resolve-agent NAME``), run by
a real ``rho`` against the scripted model server.

Two tasks of one wave append a line each to ``shared.txt``; the second one's merge conflicts,
and the resolver's model (scripted) writes the merged file, nothing more. With rho's profile
lines outside ``--sandbox`` none of them can mark the path resolved: claude under
``acceptEdits`` is denied ``git add``, codex's ``workspace-write`` sandbox cannot write the
worktree's index lock (its model is told so), gemini under ``auto_edit`` has no shell tool,
and aider's own commits are refused in a merge ("cannot do a partial commit during a
merge"; its ``git add`` before them does work). rho stages what the resolver left, so both
tasks land in one run with each of the four.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from support.rho import RHO

from ._agents import LIMIT, Place, base_env, make_place
from ._model_server import ModelServer, serve
from ._turns import Reply, RunCommand, Turn, Usage, WriteFile

MERGED = "base\na\nb\n"
AgentCli = Callable[[str], Path]


@pytest.fixture
def model_server() -> Iterator[ModelServer]:
    """The scripted model server on a free loopback port, stopped (hanging answers too) after."""
    yield from serve()


@pytest.fixture
def bare_place(tmp_path: Path) -> Place:
    """A fresh home, temporary folder and git repository."""
    return make_place(tmp_path)


@pytest.fixture
def place(bare_place: Place) -> Place:
    """A fresh home, temporary folder and git repository; two tasks that conflict in it."""
    place = bare_place
    (place.repo / "shared.txt").write_text("base\n", encoding="utf-8")
    _commit(place, "shared")
    _import(place, [(f"t_{n}", f"append {n}", f"echo {n} >> shared.txt") for n in ("a", "b")])
    return place


def _commit(place: Place, message: str) -> None:
    _git(place, "add", "--all")
    _git(place, "commit", "-q", "-m", message)


def _import(place: Place, tasks: list[tuple[str, str, str]]) -> None:
    """Tasks of one wave, each (id, subject, shell command), into the repository's store."""
    source = place.repo.parent / "tasks.json"
    listed = [
        {"id": task_id, "subject": subject, "status": "pending", "metadata": {"command": command}}
        for task_id, subject, command in tasks
    ]
    source.write_text(json.dumps({"tasks": listed}), encoding="utf-8")
    assert _rho(place, {}, "task", "import", str(source)).returncode == 0


def _git(place: Place, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=place.repo, env=base_env(place), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _rho(place: Place, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``rho ARGS`` in the repository, in the CLI's environment (*env* added), bounded."""
    whole = {**base_env(place), **env, "COLUMNS": "200", "NO_COLOR": "1"}
    if "PYTHONPATH" in os.environ:  # the checkout under test, as the console script imports it
        whole["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return subprocess.run(
        [str(RHO), *args],
        cwd=place.repo,
        env=whole,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=2 * LIMIT,
    )


def _features(place: Place) -> dict[str, dict[str, Any]]:
    (folder,) = (place.repo / ".rho" / "missions").iterdir()
    record = json.loads((folder / "mission.json").read_text(encoding="utf-8"))
    return {feature["id"]: feature for feature in record["features"]}


def _landed(place: Place) -> str:
    (folder,) = (place.repo / ".rho" / "missions").iterdir()
    branch = json.loads((folder / "mission.json").read_text(encoding="utf-8"))
    return _git(place, "show", f"{branch['integration_branch']}:shared.txt")


CLAUDE_ENV = {
    "ANTHROPIC_API_KEY": "sk-ant-scripted",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_MAX_RETRIES": "0",
}


def _with_agent(
    agent_cli: AgentCli, name: str, place: Place, env: dict[str, str]
) -> dict[str, str]:
    """*env* with the agents' folder first on PATH: the profile's line names the program."""
    return {**env, "PATH": f"{agent_cli(name).parent}{os.pathsep}{base_env(place)['PATH']}"}


def _assert_resolved(place: Place, done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0, done.stdout + done.stderr
    assert _landed(place) == MERGED
    conflict = _features(place)["t_b"]["conflict"]
    assert (conflict["outcome"], conflict["with"]) == ("resolved", ["t_a"])


def test_claude_as_the_resolver_lands_both_tasks_without_git_add(
    agent_cli: AgentCli, model_server: ModelServer, place: Place
) -> None:
    model_server.script(
        WriteFile("shared.txt", MERGED, Usage(1200, 40)), Reply("Resolved.", Usage(1300, 10))
    )
    env = {**CLAUDE_ENV, "ANTHROPIC_BASE_URL": model_server.url}
    args = ("mission", "--from-tasks", "--resolve-agent", "claude")
    done = _rho(place, _with_agent(agent_cli, "claude", place, env), *args)

    _assert_resolved(place, done)
    prompt = json.dumps(model_server.main_requests()[0].body)
    assert "Resolve a merge conflict: append b" in prompt
    assert len(model_server.main_requests()) == 2


HELPERS = '"""Small helpers."""\n'
CHANGES = "Changes\n=======\n\n"
NAMES = ("a", "b", "c")


def _helpers_of(names: str) -> dict[str, str]:
    """What the project's three files hold with the helpers of *names* merged."""
    return {
        "app/helpers.py": HELPERS
        + "".join(f"\n\ndef {n}_helper():\n    return {n!r}\n" for n in names),
        "app/__init__.py": "".join(f"from .helpers import {n}_helper\n" for n in names),
        "CHANGELOG.md": CHANGES + "".join(f"- add {n}_helper\n" for n in names),
    }


def test_claude_resolves_three_helpers_exported_and_logged_in_one_run(
    agent_cli: AgentCli, model_server: ModelServer, bare_place: Place
) -> None:
    place = bare_place
    # The tree: three tasks (shell stand-ins for agents) each add a helper to one
    # module, export it from __init__.py and add a changelog line; the first merges, the
    # second and third conflict in all three files. claude only writes files.
    (place.repo / "app").mkdir()
    for path, text in _helpers_of("").items():
        (place.repo / path).write_text(text, encoding="utf-8")
    _commit(place, "app")
    tasks = []
    for n in NAMES:
        edits = _helpers_of(n)
        command = " && ".join(
            f"printf %s {shlex.quote(edits[path][len(base) :])} >> {path}"
            for path, base in _helpers_of("").items()
        )
        tasks.append((f"helper_{n}", f"add {n}_helper", command))
    _import(place, tasks)
    turns: list[Turn] = []
    for merged in ("ab", "abc"):
        turns += [WriteFile(path, text) for path, text in _helpers_of(merged).items()]
        turns.append(Reply("Resolved: both helpers kept."))
    model_server.script(*turns)
    env = {**CLAUDE_ENV, "ANTHROPIC_BASE_URL": model_server.url}

    args = ("mission", "--from-tasks", "--resolve-agent", "claude")
    done = _rho(place, _with_agent(agent_cli, "claude", place, env), *args)

    assert done.returncode == 0, done.stdout + done.stderr
    (folder,) = (place.repo / ".rho" / "missions").iterdir()
    record = json.loads((folder / "mission.json").read_text(encoding="utf-8"))
    for path, text in _helpers_of("abc").items():
        assert _git(place, "show", f"{record['integration_branch']}:{path}") == text
    outcomes = [f["conflict"] and f["conflict"]["outcome"] for f in record["features"]]
    assert outcomes == [None, "resolved", "resolved"]
    assert len(model_server.main_requests()) == len(turns)


def test_codex_as_the_resolver_lands_both_tasks_though_its_sandbox_cannot_git_add(
    agent_cli: AgentCli, model_server: ModelServer, place: Place
) -> None:
    # Its shell tool writes the file, then tries "git add", which its sandbox refuses.
    model_server.script(
        RunCommand(f"printf '{MERGED}' > shared.txt && git add shared.txt"),
        Reply("Resolved.", Usage(1300, 10)),
    )
    codex_home = place.home / ".codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(
        'model = "gpt-5.5"\nmodel_provider = "scripted"\n[model_providers.scripted]\n'
        f'name = "scripted"\nbase_url = "{model_server.url}/v1"\nenv_key = "OPENAI_API_KEY"\n'
        'wire_api = "responses"\nsupports_websockets = false\n'
        "request_max_retries = 0\nstream_max_retries = 0\n",
        encoding="utf-8",
    )
    env = {"CODEX_HOME": str(codex_home), "OPENAI_API_KEY": "sk-scripted"}
    args = ("mission", "--from-tasks", "--resolve-agent", "codex")
    done = _rho(place, _with_agent(agent_cli, "codex", place, env), *args)

    _assert_resolved(place, done)
    said = json.dumps(model_server.main_requests()[1].body)
    assert "index.lock" in said  # the model was told its "git add" failed


def test_aider_as_the_resolver_lands_its_files_never_its_commit(
    agent_cli: AgentCli, model_server: ModelServer, place: Place
) -> None:
    # aider's "whole" edit format: the file's new content. Where its line lets it commit
    # (auto-commits), git refuses the commit in a merge ("cannot do a partial commit during
    # a merge") and aider says so and exits 0; rho takes the files, never a resolver's commit.
    model_server.script(
        Reply(f"shared.txt\n```\n{MERGED}```\n", Usage(900, 40)),
        Reply("resolve the conflict", Usage(300, 8)),  # its commit message
    )
    # aider writes a placeholder identity into the repository's config unless git has one
    # (a user's own global config does), and rho refuses a config a task changed.
    identity = place.home / ".gitconfig"
    identity.write_text("[user]\n\tname = Test Author\n\temail = author@example.com\n")
    env = {
        "GIT_CONFIG_GLOBAL": str(identity),
        "OPENAI_API_KEY": "sk-scripted",
        "OPENAI_API_BASE": f"{model_server.url}/v1",
        "AIDER_MODEL": "openai/scripted",
        "AIDER_EDIT_FORMAT": "whole",
        "AIDER_CHECK_UPDATE": "false",
        "AIDER_ANALYTICS": "false",
        "AIDER_SHOW_MODEL_WARNINGS": "false",
    }
    args = ("mission", "--from-tasks", "--resolve-agent", "aider")
    done = _rho(place, _with_agent(agent_cli, "aider", place, env), *args)

    _assert_resolved(place, done)
    (folder,) = (place.repo / ".rho" / "missions").iterdir()
    branch = json.loads((folder / "mission.json").read_text(encoding="utf-8"))
    head = branch["integration_branch"]
    parents = _git(place, "rev-list", "--parents", "-n", "1", head).split()
    assert parents[2] == _features(place)["t_b"]["handoff"]["commit_id"]
    assert "resolve the conflict" not in _git(place, "log", "--format=%s", head)


def test_gemini_as_the_resolver_lands_both_tasks_without_git_add(
    agent_cli: AgentCli, model_server: ModelServer, place: Place
) -> None:
    # Under --approval-mode auto_edit gemini has no shell tool at all: it can only edit.
    model_server.script(
        WriteFile("shared.txt", MERGED, Usage(1200, 40)), Reply("Resolved.", Usage(1300, 10))
    )
    settings = place.home / ".gemini" / "settings.json"
    settings.parent.mkdir()
    auth = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
    settings.write_text(json.dumps({**auth, "general": {"maxAttempts": 1}}), encoding="utf-8")
    env = {
        "GEMINI_API_KEY": "scripted",
        "GOOGLE_GEMINI_BASE_URL": model_server.url,
        "GEMINI_CLI_TRUST_WORKSPACE": "true",  # every rho worktree is new to gemini
    }
    args = ("mission", "--from-tasks", "--resolve-agent", "gemini")
    done = _rho(place, _with_agent(agent_cli, "gemini", place, env), *args)

    _assert_resolved(place, done)
