"""The direction of imports: import-linter's contracts, the map that draws them, and their reach.

The rules are contracts in pyproject.toml (``[tool.importlinter]``), checked by ``lint-imports``
in ``make lint``: rho_mission's packages are layers, the library never imports the CLI, the
executors never import the engine, ``taskstore`` and ``graph`` are leaves, ``graph``'s format never
imports ``graph.cloud`` or ``graph.swarm`` (nor they each other), no circle between the parts of a
package. Here:

- docs/architecture.md's table of layers is the contract's (the newcomer's map stays true);
- the contracts catch what they forbid, run on a copy of the packages with a wrong import
  planted (so that a contract matching nothing cannot pass in silence);
- the one circle the contracts cannot see: a module that imports its own package's
  ``__init__`` while the ``__init__`` leads back to it (``acyclic_siblings`` compares siblings,
  and a package is not a sibling of its modules).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("rho_mission", "taskstore", "graph")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _contracts() -> dict[str, dict[str, Any]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return {c["id"]: c for c in config["tool"]["importlinter"]["contracts"]}


def _contract_layers() -> list[set[str]]:
    """The layers contract's layers, bottom first, ``rho_mission`` (its ``__init__``, the public
    names) among the peers its own contract names: the lowest layer it may not import."""
    contracts = _contracts()
    layers = [
        {f"rho_mission.{name.strip()}" for name in layer.split("|")}
        for layer in reversed(contracts["layers"]["layers"])
    ]
    above = {m.removesuffix(".**") for m in contracts["public-names"]["forbidden_modules"]}
    next(layer for layer in layers if layer & above).add("rho_mission")
    return layers


def _drawn_layers() -> list[set[str]]:
    """The table "Packages and their layers" of docs/architecture.md, bottom first."""
    text = (ROOT / "docs/architecture.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d+) \| ([^|]+) \|", text, re.M)
    return [
        {n if n == "rho_mission" else f"rho_mission.{n}" for n in re.findall(r"`([\w.]+)`", names)}
        for _, names in rows
    ]


def test_the_architecture_document_draws_the_contracts_layers() -> None:
    # docs/architecture.md is the newcomer's map: its table must be the contract's layers
    # (__main__, the entry point, is not drawn).
    layers = [layer for layer in _contract_layers() if layer != {"rho_mission.__main__"}]
    assert _drawn_layers() == layers


def _lint_copy(tmp_path: Path, planted: dict[str, str]) -> set[str]:
    """The contracts lint-imports finds broken in a copy of the packages with *planted* lines
    (path: source) added at the end of their files."""
    for package in PACKAGES:
        ignore = shutil.ignore_patterns("__pycache__")
        shutil.copytree(ROOT / package, tmp_path / package, ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    for path, source in planted.items():
        with (tmp_path / path).open("a", encoding="utf-8") as file:
            file.write(source)
    # A wide terminal: one contract's line is never wrapped.
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "COLUMNS": "500"}
    run = subprocess.run(
        [LINT_IMPORTS, "--no-cache", "--no-logo"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    broken = set(re.findall(r"^(.+) BROKEN$", run.stdout, re.M))
    assert (run.returncode != 0) == bool(broken), run.stdout + run.stderr
    return broken


# Each planted file, and the contracts it breaks (by id).
PLANTED = {
    "nothing": ({}, set()),
    "an upward import inside a function, relative": (
        {"rho_mission/git/_planted.py": "def f() -> None:\n    from ..engine import _loop\n"},
        {"layers", "acyclic"},  # the engine imports git: a circle too
    ),
    "one layer-10 package importing another": (
        {"rho_mission/serve/_planted.py": "import rho_mission.mcp_server\n"},
        {"layers"},
    ),
    "a module in no layer": ({"rho_mission/_planted.py": ""}, {"layers"}),
    "the public names importing the server": (
        {"rho_mission/__init__.py": "from .serve import _app\n"},
        {"public-names"},
    ),
    "the library importing its public names": (
        {"rho_mission/records/_planted.py": "from rho_mission import Mission\n"},
        {"protected-names", "layers"},  # through the public names, records reaches mission
    ),
    "the server importing the CLI": (
        {"rho_mission/serve/_planted.py": "from rho_mission.cli import _main\n"},
        {"layers", "no-cli", "acyclic"},
    ),
    "an executor importing the engine": (
        {"rho_mission/executors/_planted.py": "from rho_mission.engine import _loop\n"},
        {"layers", "executors", "acyclic"},
    ),
    "the planning stage importing the engine": (
        {"rho_mission/planning/_planted.py": "from rho_mission.engine import _loop\n"},
        {"planning"},
    ),
    "containment importing graph": (
        {"rho_mission/containment/_planted.py": "import graph\n"},
        {"low-layers-no-graph"},
    ),
    "taskstore importing graph": (
        {"taskstore/_planted.py": "import graph\n"},
        {"taskstore-leaf"},
    ),
    "graph importing rho_mission": (
        {"graph/_io.py": "from rho_mission import _errors\n"},
        {"graph-leaf"},
    ),
    "graph's format importing the cloud upload, inside a function": (
        {"graph/_render.py": "def f() -> None:\n    from graph.cloud import _prepare\n"},
        {"graph-parts", "graph-public-names"},  # the __init__ imports _render: a chain
    ),
    "the cloud upload importing the swarm graph": (
        {"graph/cloud/_planted.py": "from graph.swarm import _model\n"},
        {"graph-parts"},
    ),
    "the swarm graph importing the cloud upload": (
        {"graph/swarm/_checks.py": "from graph import cloud\n"},
        {"graph-parts"},
    ),
    "a module of graph in no concept": ({"graph/_planted.py": ""}, {"graph-parts"}),
    "graph's public names importing the swarm graph": (
        {"graph/__init__.py": "from . import swarm\n"},
        {"graph-public-names"},
    ),
    "two modules of the engine in a circle": (
        {
            "rho_mission/engine/_planted_a.py": "from . import _planted_b\n",
            "rho_mission/engine/_planted_b.py": "def f() -> None:\n    from . import _planted_a\n",
        },
        {"acyclic"},
    ),
}


@pytest.mark.parametrize(("planted", "ids"), PLANTED.values(), ids=PLANTED.keys())
def test_the_contracts_catch_a_wrong_import(
    tmp_path: Path, planted: dict[str, str], ids: set[str]
) -> None:
    contracts = _contracts()
    assert _lint_copy(tmp_path, planted) == {contracts[i]["name"] for i in ids}


def _circles_through_a_package(graph: grimp.ImportGraph) -> list[str]:
    """Each import of a package's own ``__init__`` by one of its modules, where the ``__init__``
    leads back to that module (a circle no contract sees), as ``module -> package``."""
    return sorted(
        f"{module} -> {package}"
        for module in graph.modules
        for package in graph.find_modules_directly_imported_by(module)
        if module.startswith(package + ".") and graph.chain_exists(package, module)
    )


def test_no_module_imports_in_a_circle_with_its_own_package() -> None:
    # Together with the contracts' acyclic_siblings, layers and leaves: no circle at all. Lazy
    # imports count (a circle broken only by importing inside a function is still one).
    assert _circles_through_a_package(grimp.build_graph(*PACKAGES, cache_dir=None)) == []


def test_the_circle_finder_finds_a_circle_through_a_package() -> None:
    graph = grimp.ImportGraph()
    graph.add_import(importer="p.sub", imported="p.sub._a")  # the __init__'s public names
    graph.add_import(importer="p.sub._a", imported="p.sub")  # the wrong arrow
    graph.add_import(importer="p.cli", imported="p")  # no circle: p never imports p.cli
    assert _circles_through_a_package(graph) == ["p.sub._a -> p.sub"]
