"""The fixed words and numbers of ``rho.tasks/v1``: statuses, dependency types, the caps.

A module of its own, with no imports, so that the light write path and the quick lane's option
checks read them without building the scheduler's classes (``_schedule``).

Decision: docs/decisions/0101-task-store-file.md
"""

__all__ = ["BLOCKS", "DEPENDENCY_TYPES", "MAX_EDGES", "MAX_TASKS", "STATUSES"]

MAX_TASKS = 1000
MAX_EDGES = 10000
STATUSES = frozenset(
    {"pending", "in_progress", "reviewing", "completed", "failed", "skipped", "cancelled"}
)
BLOCKS = "blocks"
# The three dependency types of rho.tasks/v1 (``_model.DependencyType``); only the first schedules.
DEPENDENCY_TYPES = (BLOCKS, "related", "parent-child")
