"""Fixtures of the whole suite: tests that need a system package (chromium, bubblewrap).

On a machine without one, ``make test`` still passes: those tests skip, and pytest's summary
names each skip with its reason (``-rs`` in pyproject.toml). ``.ci/run`` installs the packages
and sets ``RHO_TESTS_REQUIRE_SYSTEM=1``: there a missing package fails the test instead, so CI
can never skip them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

import pytest

REQUIRE_SYSTEM = "RHO_TESTS_REQUIRE_SYSTEM"


def require_system(what: str, problem: str | None) -> None:
    """Skip the calling test because *problem* keeps *what* from running (fail it in CI)."""
    if problem is None:
        return
    if os.environ.get(REQUIRE_SYSTEM) == "1":
        pytest.fail(f"{what} must run here ({REQUIRE_SYSTEM}=1), but {problem}")
    pytest.skip(f"{what} skipped: {problem}")


@pytest.fixture(scope="session")
def system_requirement() -> Callable[[str, str | None], None]:
    """``system_requirement(what, problem)``: skip (or, in CI, fail) when *problem* is set."""
    return require_system


def table_rows(text: str, first: str = "id") -> list[list[str]]:
    """The rows of the first plain table in *text* whose header starts with the column *first*
    (its header included), cut into cells where the header's columns start (headers are one or
    two words, two spaces apart); the table ends at a blank line or at a line of another shape."""
    lines = text.splitlines()
    at = next(n for n, line in enumerate(lines) if line.startswith(f"{first}  "))
    starts = [match.start() for match in re.finditer(r"(?:^|(?<=  ))\S", lines[at])]
    bounds = [*starts[1:], None]
    rows = [[lines[at][a:b].strip() for a, b in zip(starts, bounds, strict=True)]]
    for line in lines[at + 1 :]:
        if not line.strip() or line.startswith(("wave ", "interrupted: ")) or ":" in line[:12]:
            break
        rows.append([line[a:b].strip() for a, b in zip(starts, bounds, strict=True)])
    return rows


@pytest.fixture(scope="session")
def plain_table() -> Callable[..., list[list[str]]]:
    """``table_rows``: the rows of a plain table that ``rho`` printed."""
    return table_rows
