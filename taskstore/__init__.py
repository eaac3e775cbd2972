"""The structured task store and its scheduling validator (waves, ready).

Public names load lazily, so that ``compute_schedule`` and the fast read path do not pay for
pydantic or filelock on import: ``rho task ready --json`` is called by agents in loops.

Decision: docs/decisions/0101-task-store-file.md
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._atomic import StagedFile as StagedFile
    from ._atomic import commit_in_order as commit_in_order
    from ._atomic import ensure_private_dir as ensure_private_dir
    from ._atomic import stage_atomic as stage_atomic
    from ._atomic import write_atomic as write_atomic
    from ._beneath import open_beneath as open_beneath
    from ._beneath import open_folder as open_folder
    from ._decode import loads_strict as loads_strict
    from ._document import dump_document as dump_document
    from ._document import parse_document as parse_document
    from ._document import validate_document as validate_document
    from ._errors import ClaimError as ClaimError
    from ._errors import EmptyBlockerError as EmptyBlockerError
    from ._errors import FieldLimitError as FieldLimitError
    from ._errors import InvalidTaskError as InvalidTaskError
    from ._errors import MissingBlockerError as MissingBlockerError
    from ._errors import ScheduleCycleError as ScheduleCycleError
    from ._errors import ScheduleError as ScheduleError
    from ._errors import ScheduleLimitError as ScheduleLimitError
    from ._errors import SelfBlockerError as SelfBlockerError
    from ._errors import StoreReadError as StoreReadError
    from ._errors import StoreWriteError as StoreWriteError
    from ._errors import TaskIdentityError as TaskIdentityError
    from ._errors import TaskInUseError as TaskInUseError
    from ._errors import TaskNotFoundError as TaskNotFoundError
    from ._errors import TaskStatusError as TaskStatusError
    from ._errors import TaskStoreError as TaskStoreError
    from ._errors import quote as quote
    from ._fastread import TaskView as TaskView
    from ._fastread import read_task_dicts as read_task_dicts
    from ._fastread import read_task_views as read_task_views
    from ._fastwrite import fast_add as fast_add
    from ._fastwrite import fast_update as fast_update
    from ._groups import complete_groups as complete_groups
    from ._groups import leaves_of as leaves_of
    from ._groups import standing_for as standing_for
    from ._limits import MAX_ACTIVE_FORM_CHARS as MAX_ACTIVE_FORM_CHARS
    from ._limits import MAX_COMMAND_CHARS as MAX_COMMAND_CHARS
    from ._limits import MAX_DESCRIPTION_CHARS as MAX_DESCRIPTION_CHARS
    from ._limits import MAX_METADATA_DEPTH as MAX_METADATA_DEPTH
    from ._limits import MAX_OWNER_CHARS as MAX_OWNER_CHARS
    from ._limits import MAX_SUBJECT_CHARS as MAX_SUBJECT_CHARS
    from ._limits import MAX_TASK_ID_CHARS as MAX_TASK_ID_CHARS
    from ._links import Deletion as Deletion
    from ._model import Dependency as Dependency
    from ._model import StoreDocument as StoreDocument
    from ._model import Task as Task
    from ._plan import PLAN_SCHEMA as PLAN_SCHEMA
    from ._plan import InvalidPlanError as InvalidPlanError
    from ._plan import PlanDocument as PlanDocument
    from ._plan import PlanFeature as PlanFeature
    from ._plan import check_plan as check_plan
    from ._plan import plan_tasks as plan_tasks
    from ._plan import read_plan as read_plan
    from ._plan import validate_plan as validate_plan
    from ._schedule import Schedule as Schedule
    from ._schedule import compute_schedule as compute_schedule
    from ._schedule import waves_to_run as waves_to_run
    from ._store import StatusChange as StatusChange
    from ._store import TaskStore as TaskStore
    from ._tasklist import TaskList as TaskList
    from ._triage import DEFAULT_PRIORITY as DEFAULT_PRIORITY
    from ._triage import MAX_LABEL_CHARS as MAX_LABEL_CHARS
    from ._triage import MAX_LABELS as MAX_LABELS
    from ._triage import PRIORITIES as PRIORITIES
    from ._triage import read_labels as read_labels
    from ._triage import read_priority as read_priority
    from ._vocabulary import DEPENDENCY_TYPES as DEPENDENCY_TYPES
    from ._vocabulary import MAX_EDGES as MAX_EDGES
    from ._vocabulary import MAX_TASKS as MAX_TASKS
    from ._vocabulary import STATUSES as STATUSES

_LOCATIONS = {
    "quote": "_errors",
    "PLAN_SCHEMA": "_plan",
    "InvalidPlanError": "_plan",
    "PlanDocument": "_plan",
    "PlanFeature": "_plan",
    "check_plan": "_plan",
    "plan_tasks": "_plan",
    "read_plan": "_plan",
    "validate_plan": "_plan",
    "DEFAULT_PRIORITY": "_triage",
    "DEPENDENCY_TYPES": "_vocabulary",
    "Deletion": "_links",
    "Dependency": "_model",
    "EmptyBlockerError": "_errors",
    "FieldLimitError": "_errors",
    "ClaimError": "_errors",
    "InvalidTaskError": "_errors",
    "MAX_ACTIVE_FORM_CHARS": "_limits",
    "MAX_COMMAND_CHARS": "_limits",
    "MAX_DESCRIPTION_CHARS": "_limits",
    "MAX_EDGES": "_vocabulary",
    "MAX_LABELS": "_triage",
    "MAX_LABEL_CHARS": "_triage",
    "MAX_METADATA_DEPTH": "_limits",
    "MAX_OWNER_CHARS": "_limits",
    "MAX_SUBJECT_CHARS": "_limits",
    "MAX_TASKS": "_vocabulary",
    "MAX_TASK_ID_CHARS": "_limits",
    "MissingBlockerError": "_errors",
    "PRIORITIES": "_triage",
    "STATUSES": "_vocabulary",
    "Schedule": "_schedule",
    "ScheduleCycleError": "_errors",
    "ScheduleError": "_errors",
    "ScheduleLimitError": "_errors",
    "SelfBlockerError": "_errors",
    "StatusChange": "_store",
    "StoreDocument": "_model",
    "StoreReadError": "_errors",
    "StoreWriteError": "_errors",
    "Task": "_model",
    "TaskIdentityError": "_errors",
    "TaskInUseError": "_errors",
    "TaskList": "_tasklist",
    "TaskNotFoundError": "_errors",
    "TaskStatusError": "_errors",
    "TaskStore": "_store",
    "TaskStoreError": "_errors",
    "TaskView": "_fastread",
    "compute_schedule": "_schedule",
    "waves_to_run": "_schedule",
    "complete_groups": "_groups",
    "leaves_of": "_groups",
    "standing_for": "_groups",
    "dump_document": "_document",
    "ensure_private_dir": "_atomic",
    "loads_strict": "_decode",
    "open_beneath": "_beneath",
    "open_folder": "_beneath",
    "parse_document": "_document",
    "read_labels": "_triage",
    "read_priority": "_triage",
    "fast_add": "_fastwrite",
    "fast_update": "_fastwrite",
    "read_task_dicts": "_fastread",
    "read_task_views": "_fastread",
    "validate_document": "_document",
    "write_atomic": "_atomic",
    "stage_atomic": "_atomic",
    "StagedFile": "_atomic",
    "commit_in_order": "_atomic",
}

__all__ = sorted(_LOCATIONS)


if not TYPE_CHECKING:  # mypy sees the imports above, so a misspelt name is an error there
    import lazy_loader

    __getattr__, __dir__, _ = lazy_loader.attach(
        __name__,
        submod_attrs={
            module: [n for n in _LOCATIONS if _LOCATIONS[n] == module]
            for module in set(_LOCATIONS.values())
        },
    )
