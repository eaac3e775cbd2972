"""The package's lazy public names: one table, and the imports mypy reads agree with it."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import taskstore


def _type_checking_imports() -> dict[str, str]:
    """``{name: module}`` of the ``if TYPE_CHECKING:`` imports of ``taskstore/__init__.py``."""
    tree = ast.parse(Path(taskstore.__file__).read_text())
    block = next(
        node
        for node in tree.body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
    )
    found: dict[str, str] = {}
    for statement in block.body:
        assert isinstance(statement, ast.ImportFrom)
        for alias in statement.names:
            assert alias.asname == alias.name, "re-exported as itself"
            found[alias.name] = str(statement.module)
    return found


def test_type_checking_imports_the_table_and_all_agree() -> None:
    assert _type_checking_imports() == taskstore._LOCATIONS
    assert taskstore.__all__ == sorted(taskstore._LOCATIONS)


def test_every_public_name_comes_from_its_module() -> None:
    for name, module in taskstore._LOCATIONS.items():
        assert getattr(taskstore, name) is getattr(
            importlib.import_module(f"taskstore.{module}"), name
        )
