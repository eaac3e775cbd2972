"""The package's shape: its public names, and imports that point one way only."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import graph

PACKAGE = Path(graph.__file__).parent


def _isort_key(name: str) -> tuple[int, str]:
    # ruff's RUF022 order: CONSTANTS, then Classes, then functions, each alphabetical.
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


def test_all_is_sorted_and_every_name_is_exported() -> None:
    assert graph.__all__ == sorted(graph.__all__, key=_isort_key)
    assert len(set(graph.__all__)) == len(graph.__all__)
    assert all(hasattr(graph, name) for name in graph.__all__)


def test_every_public_name_has_a_docstring() -> None:
    for name in graph.__all__:
        value = getattr(graph, name)
        if isinstance(value, type) or (callable(value) and not name[0].isupper()):
            assert value.__doc__, name


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for item in ast.walk(tree):
        if isinstance(item, ast.Import):
            names.update(alias.name.split(".")[0] for alias in item.names)
        elif isinstance(item, ast.ImportFrom) and item.level == 0 and item.module:
            names.add(item.module.split(".")[0])
    return names


def test_graph_never_imports_taskstore_or_rho_mission() -> None:
    for path in sorted(PACKAGE.glob("*.py")):
        assert not _imported_modules(path) & {"taskstore", "rho_mission"}, path.name


def test_importing_graph_loads_neither_the_owners_nor_httpx() -> None:
    code = (
        "import sys, graph; "
        "print(sorted(m for m in ('taskstore', 'rho_mission', 'httpx') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def test_modules_stay_small() -> None:
    for path in PACKAGE.glob("*.py"):
        assert len(path.read_text().splitlines()) < 500, path.name


def test_a_mission_and_the_task_store_run_without_loading_cryptography() -> None:
    # Signing loads cryptography (~30 ms of every start); only the swarm commands need it.
    code = (
        "import sys, graph, rho_mission.cli, rho_mission.mission._fromtasks, "
        "rho_mission.engine._loop, "
        "rho_mission.mission._signedplan, taskstore\n"
        "assert 'cryptography' not in sys.modules, 'loaded at import'\n"
        "graph.verify_swarm_task_graph\n"
        "assert 'cryptography' in sys.modules, 'not loaded on first use'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_a_name_the_package_lacks_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        graph.no_such_name  # noqa: B018 (the lookup is what is tested)
