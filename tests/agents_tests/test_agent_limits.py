"""What an agent by name may not be left to do: run without the network it needs, or hang.

Every profile reaches its model over the network: ``--sandbox-no-network`` with an agent by
name is refused before anything is written (it ended in a silent time-out). A mission that
names an agent gets the profile's ``--task-timeout`` (recorded in its config, so a resume
keeps it), and the agent's program its own request timeout where it has one, unless rho's
environment sets that already.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Any

import pytest

from support.rho import run_rho
from support.stores import import_tasks, mission_dir, spec

pytestmark = pytest.mark.usefixtures("no_leftover_tasks")

_HINT = (
    "hint: use --sandbox (the network stays, the rest is kept out); a sandbox that lets a task "
    "reach only its model's host would need a proxy into the sandbox's network namespace, "
    "which rho does not have"
)


@pytest.mark.parametrize(
    ("option", "name", "more"),
    [("--agent", "claude", ()), ("--resolve-agent", "aider", ("--run", "true"))],
)
def test_an_agent_by_name_without_the_network_is_refused_in_one_line(
    project: Path, option: str, name: str, more: tuple[str, ...]
) -> None:
    import_tasks(project, [spec("one", None)])
    args = ("mission", "--from-tasks", option, name, *more, "--sandbox-no-network")
    done = run_rho(*args, cwd=project)
    assert (done.code, done.stdout) == (2, "")
    assert done.stderr_lines == [
        f"error: {option} {name} reaches its model over the network, and "
        "--sandbox-no-network takes the network from the tasks",
        _HINT,
    ]
    assert not (project / ".rho" / "missions").exists()  # nothing written


@pytest.mark.parametrize(
    ("args", "limit"),
    [
        (("--agent", "claude"), 1800.0),
        (("--agent", "claude", "--task-timeout", "90s"), 90.0),
        (("--resolve-agent", "aider", "--run", "true"), 1800.0),
        (("--run", "true"), None),
    ],
    ids=["agent", "given", "resolver", "no-agent"],
)
def test_a_mission_that_names_an_agent_gets_its_profiles_task_timeout(
    project: Path, args: tuple[str, ...], limit: float | None
) -> None:
    import_tasks(project, [spec("one", None)])
    done = run_rho("mission", "--from-tasks", *args, "--dry-run", "--json", cwd=project)
    assert done.code == 0, done.stderr
    assert done.json()["config"]["task_timeout"] == limit


def _mission(project: Path) -> dict[str, Any]:
    text = (mission_dir(project) / "mission.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def test_claudes_request_timeout_is_the_profiles_unless_set_and_resume_keeps_the_limit(
    project: Path, tmp_path: Path, marks: Path
) -> None:
    # A "claude" that says which API_TIMEOUT_MS it got, and fails its first run.
    folder = tmp_path / "bin"
    folder.mkdir()
    seen, fail = marks / "seen", marks / "fail-once"
    (folder / "claude").write_text(
        "#!/bin/sh\n"
        f'echo "$API_TIMEOUT_MS" >> {shlex.quote(str(seen))}\n'
        f"rm {shlex.quote(str(fail))} 2>/dev/null && exit 1\n"
        "echo done > done.txt\n",
        encoding="utf-8",
    )
    (folder / "claude").chmod(0o755)
    fail.touch()
    path = {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}
    import_tasks(project, [spec("one", None)])

    first = run_rho("mission", "--from-tasks", "--agent", "claude", cwd=project, env=path)
    assert first.code == 1, first.stderr
    assert _mission(project)["config"]["task_timeout"] == 1800.0
    user = {**path, "API_TIMEOUT_MS": "7000"}
    resumed = run_rho("mission", "resume", "latest", cwd=project, env=user)
    assert resumed.code == 0, resumed.stderr

    assert seen.read_text(encoding="utf-8").splitlines() == ["300000", "7000"]
    document = _mission(project)
    assert (document["status"], document["config"]["task_timeout"]) == ("completed", 1800.0)
