"""The public API of each package: a sorted, unique ``__all__`` whose every name resolves;
and the light read path stays light (no heavy package imported on the way)."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGES = ["taskstore", "graph", "graph.cloud", "graph.swarm", "rho_mission"]


def _isort_style(name: str) -> tuple[int, str]:
    # ruff's RUF022 order for literal __all__ lists: CONSTANTS, then Classes, then the rest.
    kind = 0 if len(name) > 1 and name.isupper() else 1 if name[:1].isupper() else 2
    return kind, name


@pytest.mark.parametrize("package", PACKAGES)
def test_all_is_sorted_and_unique(package: str) -> None:
    names = list(importlib.import_module(package).__all__)
    assert len(names) == len(set(names))
    # Sorted by code point (sorted(...)), or as ruff keeps a literal list: either reads in order.
    assert names in (sorted(names), sorted(names, key=_isort_style))


@pytest.mark.parametrize("package", PACKAGES)
def test_every_name_in_all_resolves(package: str) -> None:
    module = importlib.import_module(package)
    unresolved = [name for name in module.__all__ if not hasattr(module, name)]
    assert unresolved == []


@pytest.mark.parametrize("package", PACKAGES)
def test_all_holds_only_strings_naming_public_objects(package: str) -> None:
    names = importlib.import_module(package).__all__
    assert all(isinstance(name, str) and not name.startswith("_") for name in names)


@pytest.mark.parametrize("package", PACKAGES)
def test_public_objects_of_the_package_are_all_in_all(package: str) -> None:
    # Names bound in the package namespace to its own classes and functions must be exported;
    # imported helpers (typing, importlib) and private modules are not the package's API.
    module = importlib.import_module(package)
    own = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and not inspect.ismodule(value)
        and str(getattr(value, "__module__", "")).startswith(f"{package}.")
    }
    assert own - set(module.__all__) == set()


def test_the_lazy_table_and_the_type_checking_imports_agree() -> None:
    # mypy sees the TYPE_CHECKING imports, the runtime the table: a name in one and not in the
    # other would pass type checks and fail at import, or the reverse.
    source = Path(importlib.import_module("rho_mission").__file__ or "").read_text()
    tree = ast.parse(source)
    checked = {
        alias.asname or alias.name: f"{node.module}"
        for block in tree.body
        if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING"
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    table = importlib.import_module("rho_mission")._LOCATIONS
    assert {name: module.lstrip(".") for name, module in checked.items()} == table


HEAVY = ["anyio", "filelock", "git", "pydantic", "rich"]

_LIGHT_READ = """
import json, sys
from pathlib import Path
import rho_mission.cli
import taskstore
schedule = taskstore.compute_schedule(taskstore.read_task_views(Path(sys.argv[1])))
heavy = sorted({name.split(".")[0] for name in sys.modules} & set(json.loads(sys.argv[2])))
print(json.dumps({"waves": schedule.waves, "heavy": heavy}))
"""


def test_cli_and_light_read_path_import_no_heavy_package(tmp_path: Path) -> None:
    store = tmp_path / "tasks.json"
    dependencies = [{"targetId": "a", "type": "blocks"}, {"targetId": "z", "type": "related"}]
    tasks = [
        {"id": "a", "subject": "a", "status": "completed"},
        {"id": "b", "subject": "b", "status": "pending", "owner": "ada", "attempts": 0}
        | {"dependencies": dependencies},
    ]
    store.write_text(json.dumps({"schema_version": "rho.tasks/v1", "tasks": tasks}))
    done = subprocess.run(
        [sys.executable, "-c", _LIGHT_READ, str(store), json.dumps(HEAVY)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(done.stdout) == {"waves": [["a"], ["b"]], "heavy": []}


def test_light_read_check_can_see_a_heavy_import(tmp_path: Path) -> None:
    # The same probe on a store only the full model reads (a bool where an int belongs) must
    # report pydantic: otherwise the test above could pass without looking.
    store = tmp_path / "tasks.json"
    task = {"id": "a", "subject": "a", "status": "pending", "attempts": True}
    store.write_text(json.dumps({"tasks": [task]}))
    done = subprocess.run(
        [sys.executable, "-c", _LIGHT_READ, str(store), json.dumps(HEAVY)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "pydantic" in json.loads(done.stdout)["heavy"]
