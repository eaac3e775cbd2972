"""Benchmark: rho's own time per task when the tasks are the real agent CLIs, each against a
bare shell task, one run.

Run: ``.venv/bin/python bench/bench_agents.py [--tasks 8]``. For each contender (a bare shell
task, then claude, codex, gemini and aider: the programs ``.ci/install-agents`` puts in
``/opt/rho-agents/bin``, or ``$RHO_TESTS_AGENTS_BIN``) the same mission of ``--tasks``
independent tasks runs once, ``rho mission --from-tasks --agent NAME --workers 1`` (the shell:
``--run bare``), in a fresh repository, home and temporary folder, against the test suite's
scripted model server (``tests/agent_cli_tests/_model_server``; every answer is a short final
text, so each call is one request or two). A wrapper first on PATH, named as the program,
times the program's own run (bash's ``$EPOCHREALTIME`` around it) and then leaves a file in
the worktree, outside the timed span, so that every task has work to land. With one worker
the tasks run one after the other: rho's own time per task is the mission's wall clock (the
whole ``rho`` process) minus the programs' summed time, divided by the number of tasks. The
table gives it beside the program's own mean, the mission's end and the ratio to the bare
shell task of the same run. A missing program is a row that says so. Nothing here asserts on
speed.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

# The test suite's scripted model server, by the name mypy gives it (tests/ is no package).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from agent_cli_tests._agents import scripted_model_env
from agent_cli_tests._model_server import ModelServer, serve

RHO = str(Path(sys.executable).parent / "rho")
_PATH = "/usr/local/bin:/usr/bin:/bin"
AGENTS_BIN = Path(os.environ.get("RHO_TESTS_AGENTS_BIN") or "/opt/rho-agents/bin")
# git's identity in a global config of the contender's own, as a user's: aider, finding none
# in git's configuration, writes one into the repository's (rho then fails the task).
_GITCONFIG = "[user]\n\tname = b\n\temail = b@b\n"
# The one line a wrapper adds to the task's worktree after the program: its work to land.
_WRAPPER = """#!/bin/bash
start=$EPOCHREALTIME
{program} "$@"
code=$?
echo "$start $EPOCHREALTIME" >> {times}
echo "$RHO_TASK_ID" > "bench-$RHO_TASK_ID.txt"
exit $code
"""


@dataclass(frozen=True)
class Place:
    """One contender's folders: the repository, a home, a temporary folder and a bin."""

    root: Path

    @property
    def repo(self) -> Path:
        return self.root / "repo"

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    @property
    def times(self) -> Path:
        return self.root / "times"


@dataclass(frozen=True)
class Row:
    """One contender's figures (seconds); *status* is the mission's end, or why it did not run."""

    name: str
    status: str
    wall: float = 0.0
    program: float = 0.0
    tasks: int = 0

    @property
    def own(self) -> float:
        """rho's own time per task."""
        return (self.wall - self.program) / self.tasks if self.tasks else 0.0


def _scripted(name: str) -> Callable[[Place, ModelServer], dict[str, str]]:
    """The CLI *name* pointed at the scripted server, as the suite points it."""
    return lambda place, server: scripted_model_env(name, place.home, server.url)


CLIS: dict[str, Callable[[Place, ModelServer], dict[str, str]]] = {
    name: _scripted(name) for name in ("claude", "codex", "gemini", "aider")
}


def _prepare(place: Place, program: str, name: str, tasks: int) -> dict[str, str]:
    """The folders, the wrapper named *name* around *program*, the store; the base env."""
    for folder in (place.repo, place.home, place.root / "tmp", place.bin):
        folder.mkdir(parents=True)
    wrapper = place.bin / name
    text = _WRAPPER.format(program=shlex.quote(program), times=shlex.quote(str(place.times)))
    wrapper.write_text(text, encoding="utf-8")
    wrapper.chmod(0o755)
    env = {
        "PATH": os.pathsep.join([str(place.bin), str(Path(sys.executable).parent), _PATH]),
        "HOME": str(place.home),
        "TMPDIR": str(place.root / "tmp"),
        "LANG": "C.UTF-8",
        "GIT_CONFIG_GLOBAL": str(place.root / "gitconfig"),
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    (place.root / "gitconfig").write_text(_GITCONFIG, encoding="utf-8")
    for args in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "0"]):
        subprocess.run(["git", *args], cwd=place.repo, env=env, check=True)
    store = [
        {"id": f"task_{n}", "subject": f"Write note {n}", "status": "pending"}
        for n in range(1, tasks + 1)
    ]
    source = place.root / "tasks.json"
    source.write_text(json.dumps({"tasks": store}), encoding="utf-8")
    subprocess.run([RHO, "task", "import", str(source)], cwd=place.repo, env=env, check=True,
                   capture_output=True)  # fmt: skip
    return env


def _mission(place: Place, env: dict[str, str], args: list[str], tasks: int) -> Row:
    """Run the mission once; its wall clock, the programs' summed time, its end."""
    argv = [RHO, "mission", "--from-tasks", "--workers", "1", "--json", *args]
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=place.repo, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    try:
        document = json.loads(done.stdout)
        ends = [f["status"] for f in document["features"]]
        status = f"{document['status']} ({ends.count('completed')}/{len(ends)})"
    except (ValueError, KeyError):
        status = f"exit {done.returncode}: {done.stderr.strip().splitlines()[-2:]}"
    spans = place.times.read_text().split("\n") if place.times.exists() else []
    program = sum(float(e) - float(s) for s, e in (line.split() for line in spans if line))
    return Row(args[1] if args[0] == "--agent" else "shell", status, wall, program, tasks)


def _contender(root: Path, name: str, server: ModelServer | None, tasks: int) -> Row:
    place = Place(root / name)
    if name == "shell":
        env = _prepare(place, "true", "bare", tasks)
        return _mission(place, env, ["--run", "bare"], tasks)
    program = AGENTS_BIN / name
    if not os.access(program, os.X_OK):
        return Row(name, f"not installed ({program})")
    env = _prepare(place, str(program), name, tasks)
    assert server is not None
    server.script()  # every main request: a short final text
    return _mission(place, {**env, **CLIS[name](place, server)}, ["--agent", name], tasks)


def _print(rows: list[Row]) -> None:
    shell = rows[0].own
    print(f"{'contender':<10} {'rho/task':>9} {'ratio':>7} {'program/task':>13}  mission")
    for row in rows:
        if not row.tasks:
            print(f"{row.name:<10} {'-':>9} {'-':>7} {'-':>13}  {row.status}")
            continue
        ratio = row.own / shell if shell > 0 else float("nan")
        mean = row.program / row.tasks
        print(
            f"{row.name:<10} {row.own * 1000:>7.0f}ms {ratio:>6.2f}x {mean:>12.2f}s  {row.status}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--tmpdir", default=None, help="Where the scratch folders go.")
    args = parser.parse_args()
    servers = serve()
    server = next(servers)
    try:
        with tempfile.TemporaryDirectory(dir=args.tmpdir, prefix="bench-agents-") as scratch:
            root = Path(scratch)
            rows = [_contender(root, name, server, args.tasks) for name in ("shell", *CLIS)]
    finally:
        servers.close()
    print(f"{args.tasks} tasks, one worker, one run; rho's own time per task = (wall - program)"
          " / tasks; ratio to the bare shell task")  # fmt: skip
    _print(rows)


if __name__ == "__main__":
    main()
