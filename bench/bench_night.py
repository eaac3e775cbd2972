"""Benchmark: a night of 40 stand-in agent tasks with a culprit, a bad pair, a conflict and a
flaky test: the join that stops (``--verify --no-bisect``) against the join that splits
(``--verify`` with bisection, ``--verify-retries 1``, ``--replay-culprits 1``), one run.

Run: ``.venv/bin/python bench/bench_night.py [--agent-seconds 1.0]``.

The project is generated: a Python package ``calc`` with its own unittest suite (the checks:
``python3 -m unittest -q``). 40 tasks in 4 waves of 10 (every task of a later wave waits for
the first task of the wave before it), 4 workers, ``--resolve`` and ``--keep-going`` in both
contenders. The stand-in agent (``tools/agent.py``, committed in the project) sleeps
``--agent-seconds`` and edits files as its task says; it records its own time, so the ideal
wall time is the agents' summed time over the 4 workers. Planted in the tasks:

- wave 1: ``t04`` breaks a test alone (and does again when sent back): the one task that
  should not land;
- wave 2: ``t15`` renames ``old_total`` to ``total``; ``t17`` adds a caller of whichever name
  ``calc/core.py`` has when it starts: alone each passes, together (``t15`` merges first) the
  caller's test fails; sent back on the head with the rename, it calls ``total`` and lands;
- wave 4: ``t34`` and ``t36`` write the same line: a conflict the stand-in resolver unites;
  and a test that fails the first time it runs on a tree holding wave 4's work: flaky.

Reported per contender: tasks landed in the one command; check runs (all, and against one per
wave); the bisection's runs per culprit against the bound ``1 + 2*ceil(log2 n)`` (n: the join's
merges); agent runs per landed task; the wall clock against the agents' time over 4 workers.
Nothing here asserts on speed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

RHO = str(Path(sys.executable).parent / "rho")
WORKERS = 4
WAVES, PER_WAVE = 4, 10
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "b",
    "GIT_AUTHOR_EMAIL": "b@b",
    "GIT_COMMITTER_NAME": "b",
    "GIT_COMMITTER_EMAIL": "b@b",
}

_CORE = '''\
def old_total(values):
    """The sum of *values*."""
    return sum(values)


def double(x):
    return 2 * x
'''
_CORE_TESTS = """\
import unittest

from calc.core import double


class Core(unittest.TestCase):
    def test_double(self):
        self.assertEqual(double(4), 8)

    def test_total(self):
        from calc import core

        total = getattr(core, "total", None) or core.old_total
        self.assertEqual(total([1, 2, 3]), 6)
"""
_FLAKY_TESTS = """\
import os
import unittest

MARK = {mark!r}


class Flaky(unittest.TestCase):
    def test_once(self):
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        wave4 = os.path.exists(os.path.join(here, "calc", "feat_31.py"))
        if wave4 and not os.path.exists(MARK):
            open(MARK, "w").close()
            self.fail("flaky: a port was busy")
"""
_AGENT = '''\
"""A stand-in agent: sleeps as a model would, then edits what its task says."""
import os, pathlib, re, sys, time

kind, n = sys.argv[1], int(sys.argv[2])
root = pathlib.Path(os.environ["RHO_WORKTREE"])
start = time.monotonic()
time.sleep({seconds!r})
core = root / "calc" / "core.py"
if kind in ("add", "conflict"):
    (root / "calc" / f"feat_{{n}}.py").write_text(f"def f_{{n}}(x):\\n    return x + {{n}}\\n")
    (root / "tests" / f"test_feat_{{n}}.py").write_text(
        f"import unittest\\nfrom calc.feat_{{n}} import f_{{n}}\\n\\n\\n"
        f"class T(unittest.TestCase):\\n    def test_it(self):\\n"
        f"        self.assertEqual(f_{{n}}(1), {{n + 1}})\\n")
if kind == "conflict":
    notes = root / "calc" / "notes.py"
    notes.write_text(f"NOTES = [{{n}}]\\n")
elif kind == "break":
    core.write_text(core.read_text().replace("return 2 * x", "return 3 * x"))
elif kind == "rename":
    core.write_text(core.read_text().replace("def old_total", "def total"))
elif kind == "caller":
    name = "total" if re.search(r"^def total\\b", core.read_text(), re.M) else "old_total"
    (root / "calc" / "report.py").write_text(
        f"from calc.core import {{name}}\\n\\n\\ndef report(v):\\n    return {{name}}(v)\\n")
    (root / "tests" / "test_report.py").write_text(
        "import unittest\\nfrom calc.report import report\\n\\n\\n"
        "class R(unittest.TestCase):\\n    def test_it(self):\\n"
        "        self.assertEqual(report([1, 2]), 3)\\n")
with open({times!r}, "a") as out:
    out.write(f"{{time.monotonic() - start}}\\n")
'''
# Unites both sides of every conflict (the notes' line): the stand-in resolver.
_RESOLVER = """\
import json, os, pathlib, re
root = pathlib.Path(os.environ["RHO_WORKTREE"])
for rel in json.loads(pathlib.Path(os.environ["RHO_CONFLICT_FILE"]).read_text())["paths"]:
    path = root / rel
    sides = r"<<<<<<< [^\\n]*\\n(.*?)(?:[|]{7} [^\\n]*\\n.*?)?=======\\n(.*?)>>>>>>> [^\\n]*\\n"
    both = re.sub(sides, lambda m: m[1] + m[2], path.read_text(), flags=re.S)
    path.write_text(both)
"""


def _kind(n: int) -> str:
    return {4: "break", 15: "rename", 17: "caller", 34: "conflict", 36: "conflict"}.get(n, "add")


def _tasks() -> list[dict[str, object]]:
    tasks: list[dict[str, object]] = []
    for n in range(1, WAVES * PER_WAVE + 1):
        wave = (n - 1) // PER_WAVE
        blockers = [f"t{(wave - 1) * PER_WAVE + 1:02d}"] if wave else []
        tasks.append(
            {
                "id": f"t{n:02d}",
                "subject": f"{_kind(n)} {n}",
                "status": "pending",
                "metadata": {"command": f"python3 tools/agent.py {_kind(n)} {n}"},
                "dependencies": [{"targetId": b, "type": "blocks"} for b in blockers],
            }
        )
    return tasks


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def _project(root: Path, seconds: float) -> tuple[Path, Path]:
    repo, times = root / "calc-project", root / "agent-times"
    (repo / "calc").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "tools").mkdir()
    (repo / "calc" / "__init__.py").write_text("")
    (repo / "calc" / "core.py").write_text(_CORE)
    (repo / "calc" / "notes.py").write_text("NOTES = []\n")
    (repo / "tests" / "__init__.py").write_text("")
    (repo / "tests" / "test_core.py").write_text(_CORE_TESTS)
    (repo / "tests" / "test_flaky.py").write_text(
        _FLAKY_TESTS.format(mark=str(root / "flaky-mark"))
    )
    agent = _AGENT.format(seconds=seconds, times=str(times))
    (repo / "tools" / "agent.py").write_text(agent)
    (repo / "tools" / "resolve.py").write_text(_RESOLVER)
    (repo / ".gitignore").write_text("__pycache__/\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "calc")
    source = root / "tasks.json"
    source.write_text(json.dumps({"tasks": _tasks()}))
    subprocess.run([RHO, "task", "import", str(source)], cwd=repo, check=True, capture_output=True)
    return repo, times


def _bound(merges: int) -> int:
    """The check runs a culprit may cost: the base's, and two per halving of the merges."""
    return 1 + 2 * math.ceil(math.log2(max(2, merges)))


@dataclass(frozen=True)
class Row:
    name: str
    landed: int
    check_runs: int
    bisect_runs: int
    culprits: int
    bound: int
    replayed_landed: int
    agent_runs: int
    wall: float
    agent_time: float
    status: str


def _row(name: str, repo: Path, times: Path, wall: float) -> Row:
    (folder,) = (repo / ".rho" / "missions").iterdir()
    mission = json.loads((folder / "mission.json").read_text())
    joins = mission["wave_joins"]
    checks = [j.get("verification", {}) for j in joins]
    culprits = sum(len(c.get("culprit_ids", [])) for c in checks)
    bound = sum(
        len(c.get("culprit_ids", [])) * _bound(len(j["feature_ids"]))
        for c, j in zip(checks, joins, strict=True)
    )
    spent = [float(line) for line in times.read_text().split()] if times.exists() else []
    return Row(
        name=name,
        # Landed: completed at a join whose checks did not fail (a failed join's merges stay
        # on the integration branch for a fix, unchecked).
        landed=sum(
            len(j["completed_ids"])
            for c, j in zip(checks, joins, strict=True)
            if c.get("status") != "failed"
        ),
        # A verification's attempts count every run of its checks, the bisection's included.
        check_runs=sum(c.get("attempts", 0) for c in checks),
        replayed_landed=sum(
            1
            for f in mission["features"]
            if f.get("culprit_replays") and f["status"] == "completed"
        ),
        bisect_runs=sum(c.get("bisect_runs", 0) for c in checks),
        culprits=culprits,
        bound=bound,
        agent_runs=len(spent),
        wall=wall,
        agent_time=sum(spent),
        status=mission["status"],
    )


def _contender(root: Path, name: str, flags: list[str], seconds: float) -> Row:
    place = root / name
    place.mkdir()
    repo, times = _project(place, seconds)
    env = {**os.environ, **_GIT_ENV}
    start = time.perf_counter()
    subprocess.run(
        [RHO, "mission", "--from-tasks", "--workers", str(WORKERS), "--keep-going",
         "--verify", "python3 -m unittest -q", "--resolve", "python3 tools/resolve.py", *flags],
        cwd=repo, env=env, capture_output=True, check=False,
    )  # fmt: skip
    return _row(name, repo, times, time.perf_counter() - start)


def _print(rows: list[Row]) -> None:
    total = WAVES * PER_WAVE
    print(
        f"{'contender':<9} {'landed':>7} {'checks':>7} {'/wave':>6} {'bisect':>7} {'culprits':>8} "
        f"{'bound':>6} {'replayed':>8} {'runs/landed':>11} {'wall/ideal':>10}  mission"
    )
    for row in rows:
        ideal = row.agent_time / WORKERS
        per_landed = f"{row.agent_runs / row.landed:.2f}" if row.landed else "-"
        print(
            f"{row.name:<9} {row.landed:>3}/{total:<3} {row.check_runs:>7} "
            f"{row.check_runs / WAVES:>6.2f} {row.bisect_runs:>7} {row.culprits:>8} "
            f"{row.bound:>6} {row.replayed_landed:>8} {per_landed:>11} "
            f"{row.wall / ideal if ideal else float('nan'):>10.2f}  {row.status}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--agent-seconds", type=float, default=1.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-night-") as folder:
        root = Path(folder)
        rows = [
            _contender(root, "stops", ["--no-bisect"], args.agent_seconds),
            _contender(
                root,
                "splits",
                ["--verify-retries", "1", "--replay-culprits", "1"],
                args.agent_seconds,
            ),
        ]
    print(
        textwrap.dedent(f"""\
        {WAVES * PER_WAVE} stand-in agent tasks in {WAVES} waves, {WORKERS} workers, one run;
        checks: runs of the checks (the bisection's included), /wave against one per wave;
        bisect: the bisection's runs (the base's included), bound: 1 + 2*ceil(log2 n) per
        culprit; replayed: culprits that landed after --replay-culprits; runs/landed: agent
        runs per landed task; wall/ideal: wall clock over the agents' summed time / {WORKERS}""")
    )
    _print(rows)


if __name__ == "__main__":
    main()
