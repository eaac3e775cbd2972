"""The package's shape: the public names of the format and of its two subpackages, and imports
that point one way only."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import graph
import graph.cloud
import graph.swarm

PACKAGE = Path(graph.__file__).parent
PUBLIC = [graph, graph.cloud, graph.swarm]


def _isort_key(name: str) -> tuple[int, str]:
    # ruff's RUF022 order: CONSTANTS, then Classes, then functions, each alphabetical.
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


@pytest.mark.parametrize("package", PUBLIC, ids=lambda package: package.__name__)
def test_all_is_sorted_and_every_name_is_exported(package: ModuleType) -> None:
    assert package.__all__ == sorted(package.__all__, key=_isort_key)
    assert len(set(package.__all__)) == len(package.__all__)
    assert all(hasattr(package, name) for name in package.__all__)


@pytest.mark.parametrize("package", PUBLIC, ids=lambda package: package.__name__)
def test_every_public_name_has_a_docstring(package: ModuleType) -> None:
    for name in package.__all__:
        value = getattr(package, name)
        if isinstance(value, type) or (callable(value) and not name[0].isupper()):
            assert value.__doc__, name


def test_each_concept_exports_only_its_own_names() -> None:
    # The format's names are not the upload's nor the swarm graph's: callers import each
    # concept by name (graph.cloud, graph.swarm), and one name has one home.
    names = [set(package.__all__) for package in PUBLIC]
    assert names[0] & names[1] == names[0] & names[2] == names[1] & names[2] == set()
    assert not any(hasattr(graph, name) for name in names[1] | names[2])


def _type_checking_imports(path: Path) -> dict[str, str]:
    tree = ast.parse(path.read_text())
    return {
        alias.asname or alias.name: str(node.module)
        for block in tree.body
        if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING"
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }


def test_the_swarm_lazy_table_and_the_type_checking_imports_agree() -> None:
    # mypy sees the TYPE_CHECKING imports, the runtime the table: a name in one and not in the
    # other would pass type checks and fail at import, or the reverse.
    checked = _type_checking_imports(PACKAGE / "swarm" / "__init__.py")
    assert checked == dict.fromkeys(graph.swarm._SIGNING, "_signing")
    assert graph.swarm._SIGNING.issubset(graph.swarm.__all__)


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
    for path in sorted(PACKAGE.rglob("*.py")):
        assert not _imported_modules(path) & {"taskstore", "rho_mission"}, path.name


def test_importing_graph_loads_neither_the_owners_nor_httpx() -> None:
    # httpx is loaded by an upload alone (graph.cloud.sync_graph).
    code = (
        "import sys, graph, graph.cloud, graph.swarm; "
        "print(sorted(m for m in ('taskstore', 'rho_mission', 'httpx') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def test_modules_stay_small() -> None:
    for path in PACKAGE.rglob("*.py"):
        assert len(path.read_text().splitlines()) < 500, path.name


def test_a_mission_and_the_task_store_run_without_loading_cryptography() -> None:
    # Signing loads cryptography, a cost on every start; only the swarm commands need it.
    code = (
        "import sys, graph, graph.cloud, graph.swarm, rho_mission.cli, "
        "rho_mission.mission._fromtasks, rho_mission.engine._loop, "
        "rho_mission.mission._signedplan, taskstore\n"
        "assert 'cryptography' not in sys.modules, 'loaded at import'\n"
        "graph.swarm.verify_swarm_task_graph\n"
        "assert 'cryptography' in sys.modules, 'not loaded on first use'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("package", PUBLIC, ids=lambda package: package.__name__)
def test_a_name_the_package_lacks_is_an_attribute_error(package: ModuleType) -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        package.no_such_name  # noqa: B018 (the lookup is what is tested)
