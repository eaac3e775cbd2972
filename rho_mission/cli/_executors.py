"""``--executor local|dask`` and its options, shared by ``rho mission`` and ``resume``.

Decision: docs/decisions/0503-executors.md
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from rho_mission.executors import Executor

__all__ = ["executor_from", "executor_options"]

F = TypeVar("F", bound=Callable[..., Any])


def executor_options(command: F) -> F:
    """Add ``--executor``, ``--scheduler``, ``--local-cluster`` and ``--remote`` to *command*."""
    options = [
        click.option(
            "--executor",
            "executor_name",
            type=click.Choice(["local", "dask"]),
            default="local",
            show_default=True,
            help="Where tasks run: this machine's worktrees, or a Dask cluster's workers.",
        ),
        click.option(
            "--scheduler", metavar="ADDRESS", help="Dask scheduler, e.g. tcp://10.0.0.5:8786."
        ),
        click.option(
            "--local-cluster",
            type=click.IntRange(1, 64),
            metavar="N",
            help="Start a Dask LocalCluster of N worker processes on this machine.",
        ),
        click.option(
            "--remote",
            metavar="URL",
            help="Git remote every Dask worker can reach [default: the repository's origin].",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def executor_from(
    executor_name: str, scheduler: str | None, local_cluster: int | None, remote: str | None
) -> Executor | None:
    """The executor the options ask for (None: the default, local).

    Raises:
        click.UsageError: Dask options without ``--executor dask``, or ``dask`` without
            exactly one of ``--scheduler`` and ``--local-cluster``.
        DaskUnavailableError: ``dask`` asked for and ``distributed`` not installed.
    """
    if executor_name == "local":
        given = [name for name, value in _dask_options(scheduler, local_cluster, remote) if value]
        if given:
            raise click.UsageError(f"{given[0]} needs --executor dask")
        return None
    if (scheduler is None) == (local_cluster is None):
        raise click.UsageError("--executor dask needs --scheduler ADDRESS or --local-cluster N")
    from rho_mission.executors import DaskExecutor

    return DaskExecutor(scheduler=scheduler, local_cluster=local_cluster, remote=remote)


def _dask_options(
    scheduler: str | None, local_cluster: int | None, remote: str | None
) -> list[tuple[str, object]]:
    return [
        ("--scheduler", scheduler),
        ("--local-cluster", local_cluster),
        ("--remote", remote),
    ]
