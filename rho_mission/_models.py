"""The mission.json document: Mission, Feature, Handoff, WaveJoin, MissionConfig.

Keys are snake_case as written in DESIGN §3. ``Mission`` is both the persisted document and the
object a library caller drives (``Mission.new(...)``, ``await mission.run_staged(...)``); the
behaviour lives in ``_engine`` and is attached in ``_mission``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "FEATURE_STATUSES",
    "MISSION_SCHEMA",
    "Feature",
    "FeatureStatus",
    "Handoff",
    "MissionConfig",
    "MissionDocument",
    "MissionStatus",
    "WaveJoin",
]

MISSION_SCHEMA: Literal["rho.mission/v1"] = "rho.mission/v1"
MissionStatus = Literal["planning", "executing", "completed", "failed", "partial", "cancelled"]
FeatureStatus = Literal["pending", "in_progress", "completed", "failed", "cancelled"]
FEATURE_STATUSES: tuple[FeatureStatus, ...] = (
    "pending",
    "in_progress",
    "completed",
    "failed",
    "cancelled",
)


class Handoff(BaseModel):
    """What a completed feature hands to the features after it."""

    model_config = ConfigDict(extra="forbid")

    commit_id: str | None = None
    files_changed: list[str] = Field(default_factory=list)
    summary: str = ""
    tests_passed: bool | None = None


class Feature(BaseModel):
    """One unit of work of a mission (one task of the store, with ``--from-tasks``).

    ``Feature("task_1", "Write the parser")`` works positionally, like the library API promises.
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    id: str
    description: str = ""
    expected_behavior: str = ""
    command: str | None = None
    blocked_by: list[str] = Field(default_factory=list)
    branch: str | None = None
    status: FeatureStatus = "pending"
    attempts: int = 0
    error: str | None = None
    handoff: Handoff | None = None
    started_at: str | None = None
    completed_at: str | None = None
    log: str | None = None

    def __init__(
        self, id: str, description: str = "", expected_behavior: str = "", **data: Any
    ) -> None:
        super().__init__(
            id=id,
            description=description,
            expected_behavior=expected_behavior or description,
            **data,
        )


class WaveJoin(BaseModel):
    """The record of one wave's end; every id list sorted.

    ``cancelled_ids`` is an addition to DESIGN §3: a cancelled feature is neither completed nor
    failed, and the join says so.
    """

    model_config = ConfigDict(extra="forbid")

    wave: int = Field(ge=1)
    feature_ids: list[str]
    completed_ids: list[str]
    failed_ids: list[str]
    cancelled_ids: list[str] = Field(default_factory=list)
    blocked_ids: list[str]
    started_at: str
    completed_at: str
    summary: str


class MissionConfig(BaseModel):
    """How a mission runs. Durations are seconds; ``None`` means no limit."""

    model_config = ConfigDict(extra="forbid")

    max_workers: int = Field(default=4, ge=1, le=64)
    retries: int = Field(default=0, ge=0, le=100)
    task_timeout: float | None = Field(default=None, gt=0)
    timeout: float | None = Field(default=None, gt=0)
    keep_worktrees: bool = False
    grace_period: float = Field(default=5.0, gt=0)
    run_command: str | None = None
    task_store: str | None = None


class MissionDocument(BaseModel):
    """The fields of mission.json, in the order they are written."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    schema_version: Literal["rho.mission/v1"] = MISSION_SCHEMA
    id: str = Field(pattern=r"^[0-9a-f]{8}$")
    prompt: str
    dir: str
    repo: str
    base_commit: str
    integration_branch: str
    integration_head: str | None = None
    features: list[Feature] = Field(default_factory=list)
    waves: list[list[str]] = Field(default_factory=list)
    wave_joins: list[WaveJoin] = Field(default_factory=list)
    status: MissionStatus = "planning"
    started_at: str | None = None
    completed_at: str | None = None
    config: MissionConfig = Field(default_factory=MissionConfig)

    def feature(self, feature_id: str) -> Feature:
        """The feature with id *feature_id*.

        Raises:
            KeyError: no such feature.
        """
        for feature in self.features:
            if feature.id == feature_id:
                return feature
        raise KeyError(feature_id)
