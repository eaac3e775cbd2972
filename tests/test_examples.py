"""Every runnable example runs: the demo mission and the library pipeline, as real processes."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(script: str, *args: str, home: Path) -> subprocess.CompletedProcess[str]:
    # A machine without any git identity or global config, like a fresh clone's.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "RHO_"))}
    env.update(HOME=str(home), GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    return subprocess.run(
        [sys.executable, str(ROOT / "examples" / script), *args],
        cwd=home,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_demo_runs_a_real_mission_to_completion(tmp_path: Path) -> None:
    result = _run("demo.py", home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "wave 6 joined 1 feature(s), 1 completed, 0 failed" in result.stdout
    assert "merge task_4.2" in result.stdout  # the integration branch's log
    assert "Traceback" not in result.stderr


def test_the_user_loop_fails_shows_why_resumes_merges_and_cleans(tmp_path: Path) -> None:
    result = _run("user_loop.py", home=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "./tools/gen-cli.sh: not found" in result.stdout  # the failure names its cause
    assert "merged mission " in result.stdout
    assert result.stdout.rstrip().endswith("no mission branch is left")
    assert "Traceback" not in result.stderr


def test_the_library_pipeline_completes_and_a_later_wave_sees_earlier_work(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    identity = ["-c", "user.name=t", "-c", "user.email=t@t.invalid"]
    subprocess.run(
        ["git", *identity, "commit", "-q", "--allow-empty", "-m", "start"], cwd=repo, check=True
    )
    result = _run("library_pipeline.py", str(repo), home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "first run: partial: the parser's first try gives up (on purpose)" in result.stdout
    assert "parser: completed, files ['parser.txt']" in result.stdout  # resumed from Python
    show = subprocess.run(
        ["git", "show", f"rho-mission/{result.stdout.split('mission ')[-1][:8]}/parser:parser.txt"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    assert show.stdout == "build the tree\nsaw: docs.txt, lexer.txt\n"


# -- agents as workers (examples/agents/) and the README's "Using it" ----------------------------

AGENTS = ROOT / "examples" / "agents"
STAND_IN = AGENTS / "stand-in-agent.sh"
RHO_BIN = Path(sys.executable).parent
CHECKOUT_PLACEHOLDER = "/path/to/rho-mission"
IDENTITY = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@t.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t.invalid",
}


def _sh_commands(markdown: Path, heading: str | None = None) -> list[str]:
    """The command lines of the ```sh blocks of *markdown* (of one section, if *heading*)."""
    text = markdown.read_text(encoding="utf-8")
    if heading is not None:
        section = text.split(f"\n{heading}\n", 1)[1]
        text = section.split("\n## ", 1)[0]
    blocks = re.findall(r"^```sh\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)
    return [line for block in blocks for line in block.replace("\\\n", " ").splitlines()]


def _documented_run_lines() -> list[str]:
    lines = _sh_commands(ROOT / "README.md", "## Agents as workers")
    lines += _sh_commands(AGENTS / "README.md")
    found = [
        line
        for line in lines
        if line.startswith("rho mission --from-tasks") and ("--run" in line or "--agent" in line)
    ]
    return list(dict.fromkeys(found))


def _agent_env(tmp_path: Path) -> dict[str, str]:
    """A clean environment whose PATH finds rho, and the stand-in as claude, codex, gemini and
    aider."""
    shims = tmp_path / "agents-bin"
    shims.mkdir(exist_ok=True)
    for name in ("claude", "codex", "gemini", "aider"):
        if not (shims / name).exists():
            (shims / name).symlink_to(STAND_IN)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "RHO_"))}
    env.update(IDENTITY, PATH=f"{shims}:{RHO_BIN}:{env.get('PATH', '/usr/bin:/bin')}")
    env.update(HOME=str(tmp_path), GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    return env


def _sh(line: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run one documented command line as a user's shell would, the checkout's path filled in."""
    return subprocess.run(
        ["/bin/sh", "-c", line.replace(CHECKOUT_PLACEHOLDER, str(ROOT))],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _scratch_repo(tmp_path: Path, env: dict[str, str]) -> Path:
    repo = tmp_path / "project"
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], env=env, check=True)
    subprocess.run(
        ["git", "commit", "-q", "--allow-empty", "-m", "start"], cwd=repo, env=env, check=True
    )
    return repo


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return done.stdout


def _integration(repo: Path) -> str:
    pattern = "refs/heads/rho-mission/*/integration"
    (branch,) = _git(repo, "for-each-ref", "--format=%(refname:short)", pattern).split()
    return branch


def test_the_stand_in_agent_refuses_to_run_outside_a_mission(tmp_path: Path) -> None:
    env = _agent_env(tmp_path)
    done = subprocess.run([str(STAND_IN)], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert (done.returncode, done.stderr) == (
        2,
        "stand-in-agent: no readable RHO_TASK_PROMPT_FILE; run me through rho mission\n",
    )


def test_every_documented_agent_line_is_collected() -> None:
    lines = _documented_run_lines()
    for agent in ("claude -p", "codex exec", "aider --yes-always", "stand-in-agent.sh"):
        assert any(agent in line for line in lines), agent
    assert any("--retries" in line for line in lines)
    assert any("--task-timeout" in line for line in lines)
    for agent in ("claude", "codex", "gemini", "aider"):  # and by name
        assert any(f"--agent {agent}" in line for line in lines), agent
    assert any("--budget-usd" in line for line in lines)


def _line_id(line: str) -> str:
    """``claude``, ``aider --retries``, ...: the agent the line runs, and what it adds."""
    if "--run" in line:
        agent = shlex.split(line.split("--run", 1)[1])[0].split()[0].rsplit("/", 1)[-1]
    else:
        agent = "--agent " + shlex.split(line.split("--agent", 1)[1])[0]
    words = ("--retries", "--task-timeout", "--resolve", "--budget-usd")
    extras = [word for word in words if word in line]
    return " ".join([agent, *extras])


@pytest.mark.parametrize("line", _documented_run_lines(), ids=_line_id)
def test_a_documented_agent_line_runs_a_mission_whose_edits_reach_the_integration_branch(
    tmp_path: Path, line: str
) -> None:
    env = _agent_env(tmp_path)
    repo = _scratch_repo(tmp_path, env)
    retried = "--retries" in line
    for args in (
        ["Write the lexer"],
        ["Write the parser", "--blocked-by", "task_1"]
        + (["--description", "flaky: fails once"] if retried else []),
        ["Parser tests", "--blocked-by", "task_2"],
    ):
        subprocess.run(["rho", "task", "add", *args], cwd=repo, env=env, check=True)

    done = _sh(line, repo, env)

    assert done.returncode == 0, done.stdout + done.stderr
    branch = _integration(repo)
    assert _git(repo, "show", f"{branch}:NOTES.md") == (
        "task_1: Write the lexer\ntask_2: Write the parser\ntask_3: Parser tests\n"
    )  # each task saw its blocker's work
    assert _git(repo, "ls-tree", "-r", "--name-only", branch).split() == [
        "NOTES.md",
        "tasks/task_1.txt",
        "tasks/task_2.txt",
        "tasks/task_3.txt",
    ]  # and no task_2.partial: a retry starts from a clean worktree
    attempt = 2 if retried else 1
    assert _git(repo, "show", f"{branch}:tasks/task_2.txt") == (
        f"Write the parser\nattempt {attempt}\n"
    )
    assert "task_1: note" in _git(repo, "log", "--format=%s", branch)  # the agent's own commit
    assert _git(repo, "status", "--porcelain") == ""  # the user's checkout is untouched


def _documented_resolve_lines() -> list[str]:
    return [line for line in _documented_run_lines() if "--resolve" in line]


def test_every_agent_has_a_documented_resolve_line() -> None:
    lines = _documented_resolve_lines()
    for agent in ("claude -p", "codex exec", "aider --yes-always", "stand-in-resolver.sh"):
        assert any(agent in line.split("--resolve", 1)[1] for line in lines), agent


@pytest.mark.parametrize("line", _documented_resolve_lines(), ids=_line_id)
def test_a_documented_resolve_line_lands_parallel_tasks_that_append_to_one_file(
    tmp_path: Path, line: str
) -> None:
    env = _agent_env(tmp_path)
    repo = _scratch_repo(tmp_path, env)
    for subject in ("Write the lexer", "Write the parser", "Write the docs"):
        subprocess.run(["rho", "task", "add", subject], cwd=repo, env=env, check=True)

    done = _sh(line, repo, env)  # one wave: each appends its line to NOTES.md

    assert done.returncode == 0, done.stdout + done.stderr
    branch = _integration(repo)
    assert _git(repo, "show", f"{branch}:NOTES.md") == (
        "task_1: Write the lexer\ntask_2: Write the parser\ntask_3: Write the docs\n"
    )
    mission = json.loads(next((repo / ".rho" / "missions").glob("*/mission.json")).read_text())
    outcomes = {
        f["id"]: (f["attempts"], (f["conflict"] or {}).get("outcome")) for f in mission["features"]
    }
    assert outcomes == {"task_1": (1, None), "task_2": (1, "resolved"), "task_3": (1, "resolved")}


def test_a_run_line_that_loses_the_prompt_fails_its_task(tmp_path: Path) -> None:
    # The stand-in's check is what makes the test above mean something: a wrong variable fails.
    env = _agent_env(tmp_path)
    repo = _scratch_repo(tmp_path, env)
    subprocess.run(["rho", "task", "add", "Write the lexer"], cwd=repo, env=env, check=True)

    done = _sh("rho mission --from-tasks --run 'claude -p \"$RHO_PROMPT\"'", repo, env)

    assert done.returncode == 1
    (log,) = (repo / ".rho" / "missions").glob("*/logs/task_1.log")
    assert log.read_text().splitlines()[-2] == (
        "stand-in-agent: none of my arguments is the prompt or its file: -p "
    )


def test_the_stand_in_walkthrough_runs_as_written(tmp_path: Path) -> None:
    env = _agent_env(tmp_path)
    repo = _scratch_repo(tmp_path, env)
    lines = _sh_commands(AGENTS / "README.md", "## The stand-in agent")
    assert lines[-1].startswith("git show rho-mission/<id>/integration:NOTES.md")
    for line in lines[:-1]:
        done = _sh(line, repo, env)
        assert done.returncode == 0, f"{line}\n{done.stdout}{done.stderr}"
    mission_id = _integration(repo).split("/")[1]
    shown = _sh(lines[-1].replace("<id>", mission_id), repo, env)
    assert (
        shown.stdout == "task_1: Write the lexer\ntask_2: Write the parser\ntask_3: Parser tests\n"
    )


def test_the_readme_using_it_commands_run_as_written(tmp_path: Path) -> None:
    env = _agent_env(tmp_path)
    repo = _scratch_repo(tmp_path, env)
    lines = [line for line in _sh_commands(ROOT / "README.md", "## Using it") if "<" not in line]
    outputs = {}
    for line in lines:
        done = _sh(line, repo, env)
        assert done.returncode == 0, f"{line}\n{done.stdout}{done.stderr}"
        outputs[line.split("#")[0].strip()] = done.stdout
    waves_line = next(line for line in lines if line.startswith("rho task waves"))
    claimed = waves_line.split("#", 1)[1].strip().split(" / ")
    assert outputs["rho task waves"].splitlines() == claimed
    branch = _integration(repo)
    assert _git(repo, "show", f"{branch}:NOTES.md") == (
        "task_2: Write the parser\ntask_2.1: Parser tests\n"
    )
    assert "pkg/__init__.py" in _git(repo, "ls-tree", "-r", "--name-only", branch).split()


# -- the planning stage (README "From a prompt") ---------------------------------------------

PLANNING = "## From a prompt: the planning stage"
STAND_IN_PLANNER = AGENTS / "stand-in-planner.py"
# What the documented free-text prompts become here: lines the stand-in planner makes features of.
STAND_IN_PROMPT = (
    "A parser.\n- lexer: Write the lexer\n- parser: Write the parser (after lexer)\n"
    "- tests: Parser tests (after parser)\n"
)


def _documented_planner_lines() -> list[str]:
    lines = _sh_commands(ROOT / "README.md", PLANNING)
    return [line for line in lines if line.startswith("rho mission ") and "--planner" in line]


def _planning_env(tmp_path: Path) -> dict[str, str]:
    """As ``_agent_env``, but claude and codex plan when rho runs them as the planner."""
    env = _agent_env(tmp_path)
    shims = tmp_path / "planner-bin"
    shims.mkdir(exist_ok=True)
    for name in ("claude", "codex"):
        shim = shims / name
        shim.write_text(
            "#!/bin/sh\n"
            f'if [ -n "${{RHO_PLAN_FILE:-}}" ]; then exec {shlex.quote(sys.executable)} '
            f'{shlex.quote(str(STAND_IN_PLANNER))} "$@"; fi\n'
            f'exec {shlex.quote(str(STAND_IN))} "$@"\n',
            encoding="utf-8",
        )
        shim.chmod(0o755)
    env.update(PATH=f"{shims}:{env['PATH']}", PLAN_PROMPT=STAND_IN_PROMPT)
    return env


def test_every_documented_planner_line_is_collected() -> None:
    lines = _documented_planner_lines()
    for agent in ("claude -p", "codex exec", "stand-in-planner.py", "--plan-only"):
        assert any(agent in line for line in lines), agent


@pytest.mark.parametrize(
    "line",
    [line for line in _documented_planner_lines() if "--plan-only" not in line],
    ids=lambda line: line.split("--planner", 1)[1].split()[0].strip("'").rsplit("/", 1)[-1],
)
def test_a_documented_planner_line_plans_and_runs_a_mission(tmp_path: Path, line: str) -> None:
    env = _planning_env(tmp_path)
    repo = _scratch_repo(tmp_path, env)
    # The documented prompt is free text for a real agent; the stand-in needs feature lines.
    quoted = re.match(r'rho mission "([^"$]*)"', line)  # free text, not a $(...)
    if quoted is not None:
        line = line.replace(f'"{quoted.group(1)}"', '"$PLAN_PROMPT"', 1)

    done = _sh(line, repo, env)

    assert done.returncode == 0, done.stdout + done.stderr
    names = _git(repo, "ls-tree", "-r", "--name-only", _integration(repo)).split()
    if quoted is not None:  # the agent stand-in: each task saw its blocker's work
        assert names == ["NOTES.md", "tasks/lexer.txt", "tasks/parser.txt", "tasks/tests.txt"]
    else:
        assert names == ["bye.txt", "hello.txt"]
    assert _git(repo, "status", "--porcelain") == ""


def test_the_documented_plan_review_runs_as_written(tmp_path: Path) -> None:
    env = _planning_env(tmp_path)
    repo = _scratch_repo(tmp_path, env)
    lines = [line for line in _sh_commands(ROOT / "README.md", PLANNING) if "plan.json" in line]
    assert len(lines) == 2
    first = lines[0].replace('"Add a --version flag"', '"$PLAN_PROMPT"', 1)
    for line in (first, lines[1]):
        done = _sh(line, repo, env)
        assert done.returncode == 0, done.stdout + done.stderr
    listed = subprocess.run(
        ["rho", "task", "list", "--json"], cwd=repo, env=env, capture_output=True, text=True
    )
    ids = sorted(task["id"] for task in json.loads(listed.stdout)["tasks"])
    assert ids == ["lexer", "parser", "tests"]
