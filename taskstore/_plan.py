"""The plan a planning stage writes (``rho.plan/v1``): a PRD and the features that build it.

A plan is a task list in another shape, so it is read and checked here, by the store's own
rules: ``plan_tasks`` turns its features into pending tasks (``metadata.command`` from a
feature's command, a ``blocks`` dependency per blocker), every field within the store's limits,
and ``check_plan`` validates their blocking graph with the scheduler (caps, ids, missing and
self blockers, cycles), so a plan fails with the words a store would.

A document::

    {
      "schema_version": "rho.plan/v1",
      "prd": "# Greeting\\n\\nA hello and a goodbye file.",
      "features": [
        {"id": "hello", "subject": "Write hello.txt", "command": "echo hello > hello.txt"},
        {"id": "bye", "subject": "Write bye.txt", "blockers": ["hello"]}
      ]
    }

Direction: uses this package's model, limits and scheduler only.

Decision: docs/decisions/0507-planning.md
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ._errors import InvalidTaskError
from ._limits import check_imported
from ._model import Dependency, Task
from ._schedule import Schedule, compute_schedule

__all__ = [
    "PLAN_SCHEMA",
    "InvalidPlanError",
    "PlanDocument",
    "PlanFeature",
    "check_plan",
    "plan_tasks",
    "read_plan",
    "validate_plan",
]

PLAN_SCHEMA: Literal["rho.plan/v1"] = "rho.plan/v1"
# Far beyond any plan of 1,000 features (the scheduler's cap): a runaway planner is refused.
MAX_PLAN_BYTES = 64 * 1024 * 1024


class InvalidPlanError(InvalidTaskError):
    """The plan is not a ``rho.plan/v1`` document, or its features break the store's rules."""


class PlanFeature(BaseModel):
    """One feature of a plan: a task of the store once imported."""

    model_config = ConfigDict(extra="forbid")

    id: str
    subject: str
    description: str = ""
    command: str | None = None
    blockers: list[str] = Field(default_factory=list)


class PlanDocument(BaseModel):
    """A plan: the PRD (product requirements, free text) and the features, at least one."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal["rho.plan/v1"] = PLAN_SCHEMA
    prd: str
    features: list[PlanFeature] = Field(min_length=1)

    @property
    def plain(self) -> bool:
        """No feature has a blocker: the features run as one batch."""
        return not any(feature.blockers for feature in self.features)


def read_plan(data: bytes | str, source: str) -> PlanDocument:
    """Parse *data* as a plan; *source* names it in messages.

    Raises:
        InvalidPlanError: not JSON, or not a ``rho.plan/v1`` document (the first problem named).
    """
    if len(data) > MAX_PLAN_BYTES:
        raise InvalidPlanError(f"plan {source} is {len(data)} bytes; the limit is {MAX_PLAN_BYTES}")
    try:
        value = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidPlanError(f"plan {source} is not JSON: {exc}") from exc
    except RecursionError as exc:
        raise InvalidPlanError(f"plan {source} is nested too deeply") from exc
    return validate_plan(value, source)


def validate_plan(value: Any, source: str) -> PlanDocument:
    """Check JSON data as a plan (see ``read_plan``)."""
    try:
        return PlanDocument.model_validate(value)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or "document"
        raise InvalidPlanError(f"invalid plan {source}: {where}: {error['msg'].lower()}") from exc


def plan_tasks(plan: PlanDocument) -> list[Task]:
    """The plan's features as pending store tasks, in the plan's order.

    Raises:
        FieldLimitError, InvalidTaskError: an id, a text or a command beyond the store's
            limits, or an id that is no safe name (the store's own messages).
    """
    tasks = []
    for feature in plan.features:
        metadata = {"command": feature.command} if feature.command is not None else {}
        task = Task(
            id=feature.id,
            subject=feature.subject,
            description=feature.description,
            status="pending",
            dependencies=[Dependency(target_id=b, type="blocks") for b in feature.blockers],
            metadata=metadata,
        )
        check_imported(task)
        tasks.append(task)
    return tasks


def check_plan(plan: PlanDocument) -> tuple[list[Task], Schedule[Task]]:
    """The plan's tasks and their validated schedule.

    Raises:
        FieldLimitError, InvalidTaskError: see ``plan_tasks``.
        ScheduleError: the scheduler refuses the graph (too many features or edges, an id used
            twice, a missing or self blocker, a cycle), in the store's words.
    """
    tasks = plan_tasks(plan)
    return tasks, compute_schedule(tasks)
