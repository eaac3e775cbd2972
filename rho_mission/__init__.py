"""rho-mission: run a task graph as waves of isolated git worktrees, with durable joins.

The library is built in layers, bottom first: ``_errors``, ``containment``, ``records``,
``agents``, ``git``, ``setup``, ``executors``, ``engine``, ``planning``, ``mission``; then
``serve``, ``mcp_server``, ``client`` and these public names (never one another); then ``cli``.
Each imports only the layers below it: docs/architecture.md draws them, import-linter's
contracts in ``pyproject.toml`` hold them (``lint-imports``), and
``tests/test_import_direction.py`` holds the drawing to the contracts.

Public names load lazily so that ``rho task ...`` (which imports this package on its way to
the CLI) never pays for git, anyio or pydantic.

Decision: docs/decisions/0901-layers.md
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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
    from .executors._contract import Observer as Observer
    from .executors._contract import Worker as Worker
    from .executors._contract import WorkerContext as WorkerContext
    from .executors._shell import shell_worker as shell_worker
    from .mission._fromtasks import mission_from_tasks as mission_from_tasks
    from .mission._mission import Mission as Mission
    from .mission._mission import list_missions as list_missions
    from .mission._names import MissionNotFoundError as MissionNotFoundError
    from .mission._names import resolve_mission as resolve_mission
    from .records._document import Feature as Feature
    from .records._document import Handoff as Handoff
    from .records._document import HeldTask as HeldTask
    from .records._document import MissionConfig as MissionConfig
    from .records._document import MissionDocument as MissionDocument
    from .records._document import WaveJoin as WaveJoin
    from .records._projection import mission_graph as mission_graph
    from .records._projection import task_store_graph as task_store_graph

_LOCATIONS = {
    "FeatureFailedError": "_errors",
    "FeatureResultError": "_errors",
    "Feature": "records._document",
    "GitOperationError": "_errors",
    "Handoff": "records._document",
    "HeldTask": "records._document",
    "InvalidMissionError": "_errors",
    "MergeConflictError": "_errors",
    "Mission": "mission._mission",
    "MissionConfig": "records._document",
    "MissionDocument": "records._document",
    "MissionError": "_errors",
    "MissionNotFoundError": "mission._names",
    "NotAGitRepositoryError": "_errors",
    "NothingToRunError": "_errors",
    "Observer": "executors._contract",
    "RefMovedError": "_errors",
    "SignedPlanError": "_errors",
    "UnknownRefError": "_errors",
    "UnsafePathError": "_errors",
    "WaveJoin": "records._document",
    "Worker": "executors._contract",
    "WorkerContext": "executors._contract",
    "list_missions": "mission._mission",
    "mission_from_tasks": "mission._fromtasks",
    "mission_graph": "records._projection",
    "resolve_mission": "mission._names",
    "shell_worker": "executors._shell",
    "task_store_graph": "records._projection",
}

__all__ = sorted(_LOCATIONS)


if not TYPE_CHECKING:
    # Hidden from mypy, which checks names against the imports above: a typo such as
    # ``from rho_mission import Misson`` is an error, not an ``Any``.
    import lazy_loader

    __getattr__, __dir__, _ = lazy_loader.attach(
        __name__,
        submod_attrs={
            module: [n for n in _LOCATIONS if _LOCATIONS[n] == module]
            for module in set(_LOCATIONS.values())
        },
    )
