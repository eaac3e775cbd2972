"""The executor seam: the engine's modules import in layers, and an engine bug is a bug."""

from __future__ import annotations

import ast
import graphlib
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from rho_mission import Feature, Mission
from rho_mission.executors import Attempt, AttemptResult, LocalExecutor

PACKAGE = Path(__file__).resolve().parents[2] / "rho_mission"


def _relative_imports(path: Path, name: str) -> set[str]:
    """The package modules *path* imports, type-checking-only imports included."""
    found: set[str] = set()
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - (node.level - 1)]
            found.add(".".join([*base, *([node.module] if node.module else [])]))
    return found


def _engine_modules() -> dict[str, set[str]]:
    modules: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if "cli" in parts or "_serve" in parts:
            continue  # the shells around the engine import it; that is their job
        name = ".".join(parts).removesuffix(".__init__")
        modules[name] = _relative_imports(path, name)
    return modules


def test_the_engines_modules_import_each_other_without_a_circle() -> None:
    modules = _engine_modules()
    graph = {
        m: {d for d in deps if d in modules and d != "rho_mission"} for m, deps in modules.items()
    }
    graphlib.TopologicalSorter(graph).prepare()  # raises CycleError on a circle


def test_the_seam_imports_nothing_else_of_the_package_when_it_runs() -> None:
    code = (
        "import sys, rho_mission.executors._contract; "
        "print(sorted(m for m in sys.modules if 'rho_mission' in m))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert (
        done.stdout.strip()
        == "['rho_mission', 'rho_mission.executors', 'rho_mission.executors._contract']"
    )


class _BrokenExecutor(LocalExecutor):
    """A real local executor whose attempts hit a bug of its own (not the worker's)."""

    async def run_attempt(self, attempt: Attempt) -> AttemptResult:
        raise ZeroDivisionError("a bug in the executor")


def test_a_bug_of_the_engines_own_reaches_the_caller_instead_of_failing_a_feature(
    make_repo: Callable[[str, int], Path],
) -> None:
    mission = Mission.new(make_repo("repo", 1), "seam", [Feature("a", "a", "do a", command="true")])
    with pytest.raises(BaseExceptionGroup) as raised:  # out of the wave's task group
        mission.run_staged_sync(executor=_BrokenExecutor())
    assert raised.group_contains(ZeroDivisionError, match="^a bug in the executor$")
    assert mission.feature("a").status != "failed"
    assert mission.status != "completed"
