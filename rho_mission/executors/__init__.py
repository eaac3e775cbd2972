"""Executors: what runs a feature's attempt for the wave engine (see ``rho_mission._seam``).

`LocalExecutor` (the default) runs each attempt in a pooled worktree of the user's repository;
`DaskExecutor` runs it on a Dask cluster's worker, through a git remote every worker reaches.
"""

from __future__ import annotations

from .._seam import Attempt as Attempt
from .._seam import AttemptResult as AttemptResult
from .._seam import Executor as Executor
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
