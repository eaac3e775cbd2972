"""rho-mission: run a task graph as waves of isolated git worktrees, with durable joins.

Public names load lazily so that ``rho task ...`` (which imports this package on its way to
the CLI) never pays for git, anyio or pydantic.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._errors import FeatureFailedError as FeatureFailedError
    from ._errors import FeatureResultError as FeatureResultError
    from ._errors import GitOperationError as GitOperationError
    from ._errors import InvalidMissionError as InvalidMissionError
    from ._errors import MergeConflictError as MergeConflictError
    from ._errors import MissionError as MissionError
    from ._errors import NotAGitRepositoryError as NotAGitRepositoryError
    from ._errors import NothingToRunError as NothingToRunError
    from ._errors import RefMovedError as RefMovedError
    from ._errors import SignedPlanError as SignedPlanError
    from ._errors import UnknownRefError as UnknownRefError
    from ._errors import UnsafePathError as UnsafePathError
    from ._fromtasks import mission_from_tasks as mission_from_tasks
    from ._mission import Mission as Mission
    from ._mission import list_missions as list_missions
    from ._models import Feature as Feature
    from ._models import Handoff as Handoff
    from ._models import HeldTask as HeldTask
    from ._models import MissionConfig as MissionConfig
    from ._models import MissionDocument as MissionDocument
    from ._models import WaveJoin as WaveJoin
    from ._names import MissionNotFoundError as MissionNotFoundError
    from ._names import resolve_mission as resolve_mission
    from ._projection import mission_graph as mission_graph
    from ._projection import task_store_graph as task_store_graph
    from ._seam import Observer as Observer
    from ._seam import Worker as Worker
    from ._seam import WorkerContext as WorkerContext
    from ._shell import shell_worker as shell_worker

_LOCATIONS = {
    "FeatureFailedError": "_errors",
    "FeatureResultError": "_errors",
    "Feature": "_models",
    "GitOperationError": "_errors",
    "Handoff": "_models",
    "HeldTask": "_models",
    "InvalidMissionError": "_errors",
    "MergeConflictError": "_errors",
    "Mission": "_mission",
    "MissionConfig": "_models",
    "MissionDocument": "_models",
    "MissionError": "_errors",
    "MissionNotFoundError": "_names",
    "NotAGitRepositoryError": "_errors",
    "NothingToRunError": "_errors",
    "Observer": "_seam",
    "RefMovedError": "_errors",
    "SignedPlanError": "_errors",
    "UnknownRefError": "_errors",
    "UnsafePathError": "_errors",
    "WaveJoin": "_models",
    "Worker": "_seam",
    "WorkerContext": "_seam",
    "list_missions": "_mission",
    "mission_from_tasks": "_fromtasks",
    "mission_graph": "_projection",
    "resolve_mission": "_names",
    "shell_worker": "_shell",
    "task_store_graph": "_projection",
}

__all__ = sorted(_LOCATIONS)


if not TYPE_CHECKING:
    # Hidden from mypy, which checks names against the imports above: a typo such as
    # ``from rho_mission import Misson`` is an error, not an ``Any``.
    def __getattr__(name: str) -> Any:
        module = _LOCATIONS.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return __all__
