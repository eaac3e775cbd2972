"""Executors: what runs a feature's attempt for the wave engine, and the contract between them.

- ``_contract``: the seam: ``Worker``, ``WorkerContext``, ``Observer``, ``Executor``,
  ``Attempt`` and ``AttemptResult``;
- ``_local``: ``LocalExecutor`` (the default), each attempt in a pooled worktree of the user's
  repository; ``_attempt``: one attempt there (worktree, worker, commit);
- ``_dask``, ``_remote`` and ``_dasklog``: ``DaskExecutor``, each attempt on a Dask cluster's
  worker, through a git remote every worker reaches;
- ``_shell``: the default worker, the task's shell command in its worktree;
- ``_worker_call``: calling a worker (async or plain), and what its failure leaves behind.

Direction: imports ``git``, ``records``, ``containment`` and ``rho_mission._errors``; never the
engine, the planning stage or the mission (the engine hands attempts in through the contract).
Public names load on first use, so that importing the contract does not load Dask's executor.

Decision: docs/decisions/0503-executors.md
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._contract import Attempt as Attempt
    from ._contract import AttemptResult as AttemptResult
    from ._contract import Executor as Executor
    from ._dask import DaskExecutor as DaskExecutor
    from ._dask import DaskUnavailableError as DaskUnavailableError
    from ._local import LocalExecutor as LocalExecutor

__all__ = [
    "Attempt",
    "AttemptResult",
    "DaskExecutor",
    "DaskUnavailableError",
    "Executor",
    "LocalExecutor",
]

if not TYPE_CHECKING:
    import lazy_loader

    __getattr__, __dir__, _ = lazy_loader.attach(
        __name__,
        submod_attrs={
            "_contract": ["Attempt", "AttemptResult", "Executor"],
            "_dask": ["DaskExecutor", "DaskUnavailableError"],
            "_local": ["LocalExecutor"],
        },
    )
