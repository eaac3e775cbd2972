"""Fixtures of the whole suite: tests that need a system package (chromium, bubblewrap).

On a machine without one, ``make test`` still passes: those tests skip, and pytest's summary
names each skip with its reason (``-rs`` in pyproject.toml). ``.ci/run`` installs the packages
and sets ``RHO_TESTS_REQUIRE_SYSTEM=1``: there a missing package fails the test instead, so CI
can never skip them.
"""

from __future__ import annotations

import os
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
