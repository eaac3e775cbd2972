"""Pydantic models of the task store file (``rho.tasks/v1``).

JSON keys are camelCase (``rho.tasks/v1``); Python attributes are snake_case. A store
written by hand or by an older version may hold an invalid status or a dangling blocker: the
model accepts any status string and leaves those checks to the scheduling validator.

Decision: docs/decisions/0101-task-store-file.md
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from ._triage import read_labels, read_priority

__all__ = ["SCHEMA_VERSION", "Dependency", "DependencyType", "StoreDocument", "Task"]

SCHEMA_VERSION: Literal["rho.tasks/v1"] = "rho.tasks/v1"
DependencyType = Literal["blocks", "related", "parent-child"]


# Where an importer marks a parent that is no work of its own (``Task.is_group``).
GROUP_KEY = "rho.group"


class Dependency(BaseModel):
    """One dependency of a task: ``type`` ``blocks`` means ``target_id`` blocks this task."""

    model_config = ConfigDict(
        extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True
    )

    target_id: str
    type: DependencyType


class Task(BaseModel):
    """A task of the store.

    Only ``id``, ``subject`` and ``status`` are required; unknown keys written by other tools
    are kept so that a rewrite never drops them.
    """

    model_config = ConfigDict(extra="allow", alias_generator=to_camel, populate_by_name=True)

    id: str
    parent_id: str | None = None
    subject: str
    description: str = ""
    active_form: str | None = None
    status: str
    owner: str | None = None
    dependencies: list[Dependency] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: str | None = None
    updated_at: str | None = None
    attempts: int = 0
    max_attempts: int | None = None
    last_error: str | None = None

    @property
    def blocker_ids(self) -> list[str]:
        """The trimmed targets of this task's ``blocks`` dependencies, in declared order."""
        return [d.target_id.strip() for d in self.dependencies if d.type == "blocks"]

    @property
    def is_group(self) -> bool:
        """A parent that is no work of its own (a tracker's epic, ``metadata["rho.group"]``):
        no mission runs it, ``ready`` never offers it, and it is done when its children are.
        A command of its own makes it work again."""
        return self.metadata.get(GROUP_KEY) is True and self.command is None

    @property
    def command(self) -> str | None:
        """The task's own shell command (``metadata.command``), if it is a non-empty string."""
        command = self.metadata.get("command")
        return command if isinstance(command, str) and command.strip() else None

    @property
    def priority(self) -> int:
        """``metadata.priority``: 0 (highest) to 4; 2 when absent or out of shape."""
        return read_priority(self.metadata)

    @property
    def labels(self) -> list[str]:
        """``metadata.labels``: the label names, sorted and unique."""
        return read_labels(self.metadata)

    def summary(self) -> dict[str, Any]:
        """The agent-facing view: ``{id, subject, status, owner, dependencies}``."""
        return {
            "id": self.id,
            "subject": self.subject,
            "status": self.status,
            "owner": self.owner,
            "dependencies": [d.model_dump(by_alias=True) for d in self.dependencies],
        }


class StoreDocument(BaseModel):
    """The whole store file; ``revision`` and ``next_id`` default when an old file lacks them."""

    model_config = ConfigDict(extra="forbid", alias_generator=None)

    schema_version: Literal["rho.tasks/v1"] = SCHEMA_VERSION
    revision: int = Field(default=0, ge=0)
    next_id: int = Field(default=1, ge=1)
    tasks: list[Task] = Field(default_factory=list)
