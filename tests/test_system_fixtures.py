"""One place decides about system packages: ``tests/conftest.py``.

A test that needs chromium, bubblewrap, Graphviz, Node, Go or a real agent CLI asks for the
suite's fixture (``browser``, ``bwrap``, ``graphviz_dot``, ``node_and_npm``, ``go_tool``,
``agent_cli``), which skips where the program is missing and fails under
``RHO_TESTS_REQUIRE_SYSTEM=1``. A module that looked for one
itself could fail where it should skip (as a browser fixture of its own once did), or skip in CI
where nothing may. This test reads every test module's source and finds none that does.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
THE_PLACE = TESTS / "conftest.py"
SYSTEM_PROGRAMS = frozenset({"chromium", "bwrap", "dot", "node", "npm", "go"})
# Names through which a module would start a browser or test for a program on its own.
FORBIDDEN_NAMES = frozenset(
    {
        "sync_playwright",
        "async_playwright",
        "require_bwrap",
        "require_system",
        "REQUIRE_SYSTEM",
        "cgroup_support",
        "agents_bin",
        "AGENTS_BIN",
    }
)
FIXTURES = (
    "browser",
    "bwrap",
    "graphviz_dot",
    "node_and_npm",
    "go_tool",
    "task_cgroups",
    "agent_cli",
)


def _modules() -> Iterator[Path]:
    for path in sorted(TESTS.rglob("*.py")):
        if path != THE_PLACE and ".venv" not in path.parts and "node_modules" not in path.parts:
            yield path


def _text(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return node.id if isinstance(node, ast.Name) else ""


def own_checks(tree: ast.AST) -> list[str]:
    """What in *tree* looks for a system program or starts a browser by itself."""
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _dotted(node.func).endswith("which") and node.args:
            name = _text(node.args[0])
            if name in SYSTEM_PROGRAMS:
                found.append(f"line {node.lineno}: which({name!r})")
        elif isinstance(node, ast.Name | ast.alias):
            name = node.id if isinstance(node, ast.Name) else node.name
            if name in FORBIDDEN_NAMES:
                found.append(f"line {node.lineno}: {name}")
        elif isinstance(node, ast.Attribute) and node.attr in ("chromium", "system_requirement"):
            found.append(f"line {node.lineno}: .{node.attr}")
        elif isinstance(node, ast.arg) and node.arg == "system_requirement":
            found.append(f"line {node.lineno}: the system_requirement fixture")
        if isinstance(node, ast.FunctionDef) and node.name in FIXTURES:
            found.append(f"line {node.lineno}: a fixture of its own named {node.name}")
    return found


def test_no_test_module_looks_for_a_system_program_itself() -> None:
    offenders = {
        str(path.relative_to(TESTS)): checks
        for path in _modules()
        if (checks := own_checks(ast.parse(path.read_text(encoding="utf-8"))))
    }
    assert offenders == {}


@pytest.mark.parametrize(
    "source",
    [
        'import shutil\nshutil.which("chromium")\n',
        "from playwright.sync_api import sync_playwright\n",
        "def test_x(system_requirement):\n    pass\n",
        "import pytest\n@pytest.fixture\ndef browser():\n    pass\n",
        "def f(p):\n    return p.chromium.launch()\n",
        'from shutil import which\nwhich("go")\n',
    ],
)
def test_the_reader_finds_each_way_of_looking_by_oneself(source: str) -> None:
    assert own_checks(ast.parse(source)) != []


def test_the_reader_lets_a_program_of_the_project_be_looked_up() -> None:
    source = 'import shutil\nshutil.which("rho", path="/usr/bin")\nshutil.which("git")\n'
    assert own_checks(ast.parse(source)) == []


def test_the_place_has_every_fixture() -> None:
    tree = ast.parse(THE_PLACE.read_text(encoding="utf-8"))
    defined = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
    assert set(FIXTURES) <= defined
