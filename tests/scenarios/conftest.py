"""Fixtures of the tests in scenarios: every fixture of ``support.fixtures`` (hermetic
git, real repositories, background ``rho`` runs), found by pytest in this conftest."""

from support.fixtures import *  # noqa: F403
