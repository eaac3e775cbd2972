"""The direction of imports between the project's packages, read from the source.

Every import counts, the ones inside functions too (a lazy import is still an arrow):

- ``taskstore`` and ``graph`` are leaves: neither imports ``rho_mission`` nor the other;
- the library never imports the CLI: no module of ``rho_mission`` outside ``rho_mission.cli``
  (and ``__main__``, its entry point) imports ``rho_mission.cli``. So the server, the MCP tools
  and the client read logs and build graphs through the library, as the CLI does;
- the executors never import the engine (``rho_mission.engine``): the engine hands them
  attempts through the executors' contract (``executors._contract``);
- the library's packages are layers (``LAYERS``, bottom first, as docs/architecture.md draws
  them): each imports only the layers below it, and every module of ``rho_mission`` is in one.
  The packages of one layer never import each other: ``serve``, ``mcp_server`` and ``client``
  use the library, not one another. The CLI, the top, starts the server and the MCP server.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("rho_mission", "taskstore", "graph")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> Iterator[tuple[int, str]]:
    """Every module *path* imports (line, absolute dotted name), relative imports resolved."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            yield node.lineno, target
            for alias in node.names:  # "from . import x" may name a module
                yield node.lineno, f"{target}.{alias.name}"


def _arrows() -> list[tuple[str, int, str]]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            source = _module_name(path)
            found += [(source, line, target) for line, target in _imports(path)]
    return found


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


ARROWS = _arrows()
MODULES = {_module_name(p) for package in PACKAGES for p in (ROOT / package).rglob("*.py")}


def _targets(source: str) -> set[str]:
    return {target for name, _, target in ARROWS if name == source}


def test_the_arrows_are_read() -> None:
    # What the rules rely on: an import inside a function is seen (load_source imports the
    # graph source lazily), and a relative one resolved ("from ._git import GitRepo").
    assert "rho_mission.mission._graphsource" in _targets("rho_mission.cli._graph")
    assert "rho_mission.git._repo.GitRepo" in _targets("rho_mission.engine._loop")
    assert "rho_mission.cli._errors" in _targets("rho_mission.cli._graph")


@pytest.mark.parametrize(
    ("leaf", "others"),
    [("taskstore", ("rho_mission", "graph")), ("graph", ("rho_mission", "taskstore"))],
)
def test_taskstore_and_graph_are_leaves(leaf: str, others: tuple[str, ...]) -> None:
    wrong = [
        f"{source}:{line} imports {target}"
        for source, line, target in ARROWS
        if _within(source, leaf) and any(_within(target, other) for other in others)
    ]
    assert wrong == []


def test_the_library_never_imports_the_cli() -> None:
    wrong = [
        f"{source}:{line} imports {target}"
        for source, line, target in ARROWS
        if _within(source, "rho_mission")
        and not _within(source, "rho_mission.cli")
        and source != "rho_mission.__main__"
        and _within(target, "rho_mission.cli")
    ]
    assert wrong == []


def test_the_executors_never_import_the_engine() -> None:
    wrong = [
        f"{source}:{line} imports {target}"
        for source, line, target in ARROWS
        if _within(source, "rho_mission.executors") and _within(target, "rho_mission.engine")
    ]
    assert wrong == []


# Bottom first. A module belongs to the longest unit its name is within ("rho_mission" itself:
# its __init__ only, the public names).
LAYERS: list[tuple[str, ...]] = [
    ("rho_mission._errors",),
    ("rho_mission.containment",),
    ("rho_mission.records",),
    ("rho_mission.agents",),
    ("rho_mission.git",),
    ("rho_mission.setup",),
    ("rho_mission.executors",),
    ("rho_mission.engine",),
    ("rho_mission.planning",),
    ("rho_mission.mission",),
    ("rho_mission", "rho_mission.client", "rho_mission.serve", "rho_mission.mcp_server"),
    ("rho_mission.cli",),
    ("rho_mission.__main__",),
]


def _unit(module: str) -> str | None:
    units = [u for layer in LAYERS for u in layer if u != "rho_mission" and _within(module, u)]
    if units:
        return max(units, key=len)
    return "rho_mission" if module == "rho_mission" else None


def _layer(unit: str) -> int:
    return next(i for i, layer in enumerate(LAYERS) if unit in layer)


def _layer_breaches(arrows: list[tuple[str, int, str]]) -> list[str]:
    """Each arrow to a unit of the same layer or of a higher one, as ``source:line imports x``."""
    wrong = []
    for source, line, target in arrows:
        if not (_within(source, "rho_mission") and _within(target, "rho_mission")):
            continue
        mine, theirs = _unit(source), _unit(_owner(target))
        if mine is None or theirs is None or mine == theirs:
            continue
        if _layer(theirs) >= _layer(mine):
            wrong.append(f"{source}:{line} imports {target}")
    return wrong


def _owner(target: str) -> str:
    """The module *target* is or is a name inside (``rho_mission.git._repo.GitRepo``: the
    module ``rho_mission.git._repo``; ``rho_mission.Mission``: the package's public names)."""
    while target and target not in MODULES:
        target = target.rpartition(".")[0]
    return target


def test_each_package_imports_only_the_layers_below_it() -> None:
    assert _layer_breaches(ARROWS) == []


def test_every_module_of_the_library_is_in_a_layer() -> None:
    # A new subpackage must take its place in LAYERS (and in docs/architecture.md).
    assert sorted(m for m in MODULES if _within(m, "rho_mission") and _unit(m) is None) == []


def test_the_architecture_document_draws_these_layers() -> None:
    # docs/architecture.md is the newcomer's map: its table of layers must be this one.
    rows = re.findall(r"^\| (\d+) \| ([^|]+) \|", (ROOT / "docs/architecture.md").read_text(), re.M)
    drawn = [
        tuple(
            "rho_mission" if n == "rho_mission" else f"rho_mission.{n}"
            for n in re.findall(r"`([\w.]+)`", names)
        )
        for _, names in rows
    ]
    assert drawn == [layer for layer in LAYERS if layer != ("rho_mission.__main__",)]


def test_the_layer_check_sees_a_wrong_arrow() -> None:
    upward = ("rho_mission.git._repo", 7, "rho_mission.engine._loop.WaveEngine")
    sideways = ("rho_mission.serve._app", 9, "rho_mission.mcp_server._server")
    downward = ("rho_mission.engine._loop", 3, "rho_mission.git._repo.GitRepo")
    assert _layer_breaches([upward, sideways, downward]) == [
        "rho_mission.git._repo:7 imports rho_mission.engine._loop.WaveEngine",
        "rho_mission.serve._app:9 imports rho_mission.mcp_server._server",
    ]


def _module_graph() -> dict[str, set[str]]:
    """Which of the project's modules each one imports (a name inside a module: that module)."""
    graph: dict[str, set[str]] = {name: set() for name in MODULES}
    for source, _, name in ARROWS:
        target = _owner(name)
        if target and target != source:
            graph[source].add(target)
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_module_imports_in_a_circle() -> None:
    # Lazy imports count: a circle broken only by importing inside a function is still one.
    assert _circles(_module_graph()) == []


def test_the_circle_finder_finds_circles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(graph) == [["a", "b", "c"]]
