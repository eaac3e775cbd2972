"""The task store file: locked, revisioned, atomic reads and writes of ``rho.tasks/v1``.

``add`` and ``update`` make their change through ``_edits``, the one implementation the light
write path (``_fastwrite``) calls too: the task's dump is changed and validated back.

Decision: docs/decisions/0101-task-store-file.md, docs/decisions/0804-quick-lane.md
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import TypeVar

from filelock import FileLock

from . import _edits
from ._atomic import ensure_private_dir, ensure_private_file, write_atomic
from ._document import parse_document
from ._dumpcache import DumpCache
from ._errors import (
    ClaimError,
    InvalidTaskError,
    ScheduleError,
    StoreReadError,
    StoreWriteError,
    quote,
)
from ._guard import check_caps
from ._limits import check_fields, check_imported
from ._links import Deletion, delete_task, find_task, link, unlink
from ._model import GROUP_KEY, StoreDocument, Task
from ._rules import (
    check_status,
    counter_after,
    now_rfc3339_seconds,
    require_text,
)
from ._schedule import Schedule, compute_schedule
from ._triage import check_triage

__all__ = ["StatusChange", "TaskStore", "now_rfc3339_seconds"]

R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class StatusChange:
    """One progress report for ``TaskStore.record_progress``."""

    task_id: str
    status: str
    attempts: int | None = None
    last_error: str | None = None


class TaskStore:
    """A task store file with a cross-process lock for writers.

    Readers never lock: writers replace the file atomically, so a reader sees the old or the new
    document. A missing file reads as an empty store.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock_path = Path(str(self.path) + ".lock")
        self._lock = FileLock(str(self._lock_path), mode=0o600)
        # The document this object last wrote, and the file's identity just after: a writer
        # that rewrites often (a mission, a status at a time) parses a 1,000-task store once.
        self._written: tuple[tuple[int, ...], StoreDocument] | None = None
        # ...and its tasks' text, so that a write naming the tasks it changed dumps only those.
        self._dumps = DumpCache()

    # -- reading -----------------------------------------------------------------------------

    def load(self) -> StoreDocument:
        """Read and parse the whole store.

        Raises:
            StoreReadError: the file is unreadable, not JSON, or not a task store.
        """
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return StoreDocument()
        except OSError as exc:
            raise StoreReadError(str(self.path), exc.strerror or str(exc)) from exc
        return parse_document(raw, str(self.path))

    def tasks(self) -> list[Task]:
        """Every task of the store, sorted by id (a hand-written file may hold any order)."""
        return sorted(self.load().tasks, key=attrgetter("id"))

    def get(self, task_id: str) -> Task:
        """The task with id *task_id*.

        Raises:
            TaskNotFoundError: no task has that id.
        """
        return find_task(self.load(), task_id)

    def schedule(self) -> Schedule[Task]:
        """Validate the blocking graph and return its waves and ready tasks.

        Raises:
            ScheduleError: the validator's first finding (see ``compute_schedule``).
        """
        return compute_schedule(self.tasks())

    def ready_work(self) -> list[Task]:
        """The ready tasks, or an empty list when the graph is invalid (fails closed)."""
        try:
            return self.schedule().ready
        except ScheduleError:
            return []

    # -- writing -----------------------------------------------------------------------------

    def mutate(
        self,
        change: Callable[[StoreDocument], R],
        *,
        unchanged: Callable[[R], bool] | None = None,
        touched: Collection[str] | None = None,
    ) -> R:
        """Apply *change* to the document under the lock, then write it back atomically.

        If *change* raises, nothing is written. The revision is bumped on every write. When
        *unchanged* says of the change's result that it changed nothing, nothing is written
        either (a change that can tell, such as an import of a file imported before).
        *touched*, when given, holds the id of every task *change* may edit (it adds and
        removes none): the others' text is reused from the last write (``_dumpcache``).

        Raises:
            StoreReadError, StoreWriteError: the file cannot be read or replaced.
            TaskStoreError: whatever *change* refuses.
        """
        try:
            ensure_private_dir(self.path.parent)
            # filelock keeps the mode of a lock file that already exists (left by an older rho).
            ensure_private_file(self._lock_path)
            self._lock.acquire()
        except OSError as exc:  # the folder or its lock file cannot be made (a file in the way)
            raise StoreWriteError(str(self.path), exc.strerror or str(exc)) from exc
        try:
            document = self._unchanged_since_written() or self.load()
            self._written = None  # *change* edits it in place: kept again only once written
            result = change(document)
            if unchanged is not None and unchanged(result):
                return result
            document.revision += 1
            document.tasks.sort(key=lambda task: task.id)
            self._write(document, touched)
            self._written = (_identity(self.path), document)
        finally:
            self._lock.release()
        return result

    def _unchanged_since_written(self) -> StoreDocument | None:
        """The document this object wrote last, if the file is still that write: same inode
        (every write replaces the file), size, modification and change times."""
        if self._written is None:
            return None
        identity, document = self._written
        try:
            return document if _identity(self.path) == identity else None
        except OSError:
            return None

    def _write(self, document: StoreDocument, touched: Collection[str] | None = None) -> None:
        try:
            write_atomic(self.path, self._dumps.dump(document, touched))
        except OSError as exc:
            raise StoreWriteError(str(self.path), exc.strerror or str(exc)) from exc

    def add(
        self,
        subject: str,
        *,
        description: str = "",
        blocked_by: Iterable[str] = (),
        related: Iterable[str] = (),
        parent: str | None = None,
        command: str | None = None,
        priority: int | None = None,
        labels: Iterable[str] = (),
    ) -> Task:
        """Add a pending task and return it.

        Its id is ``task_<n>`` from the store counter, or ``<parent>.<k>`` for the k-th child of
        *parent*, which also gets a ``parent-child`` dependency on it. *priority* (0 highest to
        4) and *labels* go to ``metadata``; a task without a priority has priority 2.

        Raises:
            InvalidTaskError: a blank subject, a NUL character in a text, a child id that
                would be longer than ``MAX_TASK_ID_CHARS``, a priority outside 0..4, or a bad
                label name (see ``taskstore._triage``).
            FieldLimitError: a text or label longer than its limit, or too many labels.
            TaskNotFoundError: *parent* or a related id names no task.
            ScheduleError: a blocker that is missing, or a cap that would be exceeded.
        """
        addition = _edits.Addition(
            subject,
            description=description,
            blocked_by=blocked_by,
            related=related,
            parent=parent,
            command=command,
            priority=priority,
            labels=labels,
        )

        def change(document: StoreDocument) -> Task:
            made, document.next_id = addition.apply(document.tasks, document.next_id)
            task = Task.model_validate(made)
            document.tasks.append(task)
            return task

        return self.mutate(change)

    def update(
        self,
        task_id: str,
        *,
        status: str | None = None,
        subject: str | None = None,
        description: str | None = None,
        add_blockers: Iterable[str] = (),
        remove_blockers: Iterable[str] = (),
        add_related: Iterable[str] = (),
        command: str | None = None,
        last_error: str | None = None,
        attempts: int | None = None,
        priority: int | None = None,
        add_labels: Iterable[str] = (),
        remove_labels: Iterable[str] = (),
        labels: Iterable[str] | None = None,
        owner: str | None = None,
    ) -> Task:
        """Change fields of one task and return it.

        Labels in *remove_labels* are removed before those of *add_labels* are added; *labels*
        replaces them all (in the same locked write). *owner* sets the owner ("" clears it).

        Raises:
            TaskNotFoundError: *task_id* or a named blocker or related id names no task.
            InvalidTaskError: an unknown status, a blank subject, a NUL character in a text,
                removing a non-blocker or a label the task lacks, a priority outside 0..4, or
                a bad label name.
            FieldLimitError: a text or label longer than its limit, or too many labels.
            ScheduleError: a new blocker that is itself, missing, or closes a cycle.
        """
        update = _edits.Update(
            task_id,
            status=status,
            subject=subject,
            description=description,
            add_blockers=add_blockers,
            remove_blockers=remove_blockers,
            add_related=add_related,
            command=command,
            last_error=last_error,
            attempts=attempts,
            priority=priority,
            add_labels=add_labels,
            remove_labels=remove_labels,
            labels=labels,
            owner=owner,
        )

        def change(document: StoreDocument) -> Task:
            found = find_task(document, task_id)
            # The one implementation edits JSON objects: this task's dump, validated back.
            edited = found.model_dump(by_alias=True, exclude_none=True)
            nodes = [_edits.TaskNode(edited) if t is found else t for t in document.tasks]
            task = Task.model_validate(update.apply(nodes, edited))
            place = next(n for n, other in enumerate(document.tasks) if other is found)
            document.tasks[place] = task
            return task

        return self.mutate(change)

    def claim(self, task_id: str, owner: str) -> Task:
        """Atomically take a ready task: ``pending`` -> ``in_progress``, owned by *owner*.

        Ready as ``ready`` says: pending, and every blocker completed. One locked write, so of
        two claims racing for one task exactly one wins.

        Raises:
            TaskNotFoundError: no such task.
            InvalidTaskError: a blank owner.
            ClaimError: the task is claimed already, not pending, or waits for a blocker.
        """
        require_text("owner", owner)
        check_fields({"owner": owner})

        def change(document: StoreDocument) -> Task:
            task = find_task(document, task_id)
            _refuse_claim(document, task)
            task.status = "in_progress"
            task.owner = owner
            task.updated_at = now_rfc3339_seconds()
            return task

        return self.mutate(change)

    def add_dependency(self, task_id: str, target: str, kind: str = "blocks") -> Task:
        """Give task *task_id* a dependency of type *kind* on *target* and return the task.

        ``blocks`` (target blocks the task) is checked as ``add(blocked_by=...)`` checks it;
        ``related`` needs an existing target; ``parent-child`` makes the task a subtask of
        *target* (``parentId``). A dependency already there is kept as it is.

        Raises:
            TaskNotFoundError: *task_id*, or a related or parent target, names no task.
            ScheduleError: a blocker that is blank, itself, missing or closes a cycle (the
                cycle named), or one blocking edge beyond the cap.
            InvalidTaskError: an unknown type, a link to itself, a second parent, or a parent
                that lies inside the task.
        """

        def change(document: StoreDocument) -> Task:
            task = find_task(document, task_id)
            link(document, task, target, kind)
            if kind == "blocks":  # the only links the caps count
                check_caps(document.tasks)
            task.updated_at = now_rfc3339_seconds()
            return task

        return self.mutate(change)

    def remove_dependency(self, task_id: str, target: str, kind: str = "blocks") -> Task:
        """Remove task *task_id*'s dependencies of type *kind* on *target*; return the task.

        The target need not exist any more (a dangling link is how a store gets repaired).
        Removing ``parent-child`` on the task's parent also clears its ``parentId``.

        Raises:
            TaskNotFoundError: *task_id* names no task.
            InvalidTaskError: an unknown type, or no such dependency.
        """

        def change(document: StoreDocument) -> Task:
            task = find_task(document, task_id)
            unlink(task, target, kind)
            task.updated_at = now_rfc3339_seconds()
            return task

        return self.mutate(change)

    def delete(self, task_id: str, *, force: bool = False) -> Deletion:
        """Remove task *task_id*; refused while other tasks link to it unless *force*.

        With *force*, every other task's dependencies on it (``blocks``, ``related``,
        ``parent-child``) go in the same write. A task with subtasks is refused even then.

        Raises:
            TaskNotFoundError: *task_id* names no task.
            TaskInUseError: it has subtasks, or (without *force*) other tasks link to it;
                ``.subtasks`` and ``.dependents`` say which.
        """
        return self.mutate(lambda document: delete_task(document, task_id, force=force))

    def record_progress(self, changes: Sequence[StatusChange]) -> list[str]:
        """Apply status changes (with attempts and ``lastError``) in one locked rewrite.

        For callers that follow running work, like a mission: a task that no longer exists is
        skipped, and its id returned, rather than failing the whole batch.

        Raises:
            InvalidTaskError: an unknown status; nothing is written.
            StoreReadError, StoreWriteError: the file cannot be read or replaced.
        """
        for change in changes:
            check_status(change.status)

        def apply(document: StoreDocument) -> list[str]:
            by_id = {task.id: task for task in document.tasks}
            missing: list[str] = []
            for change in changes:
                task = by_id.get(change.task_id)
                if task is None:
                    missing.append(change.task_id)
                    continue
                task.status = change.status
                if change.last_error is not None:
                    task.last_error = change.last_error
                if change.attempts is not None:
                    task.attempts = change.attempts
                task.updated_at = now_rfc3339_seconds()
            return missing

        return self.mutate(apply, touched=frozenset(change.task_id for change in changes))

    def merge_tasks(self, tasks: list[Task], status_key: str) -> tuple[list[str], list[str]]:
        """Add *tasks*, or update the ones the store has (same id): the ids added and updated.

        For re-imports of a tracker's file: importing it twice changes nothing the second time.
        *status_key* is the metadata key where the tracker's own status is kept (see
        ``_merge_into``).

        Raises:
            InvalidTaskError, FieldLimitError: as ``import_tasks``.
            ScheduleError: the merged graph is invalid.
        """
        for task in tasks:
            check_imported(task)
            check_triage(task.metadata, task.id)

        def change(document: StoreDocument) -> tuple[list[str], list[str]]:
            by_id = {task.id: task for task in document.tasks}
            added, updated = [], []
            stamp = now_rfc3339_seconds()
            for task in tasks:
                old = by_id.get(task.id)
                if old is None:
                    task.created_at = task.created_at or stamp  # the tracker's, when it says
                    task.updated_at = stamp
                    document.tasks.append(task)
                    by_id[task.id] = task
                    added.append(task.id)
                    document.next_id = max(document.next_id, counter_after(task.id))
                    continue
                before = old.model_dump()
                _merge_into(old, task, status_key)
                if old.model_dump() != before:
                    old.updated_at = stamp
                    updated.append(task.id)
            compute_schedule(document.tasks)
            return added, updated

        return self.mutate(change, unchanged=lambda result: not (result[0] or result[1]))

    def import_tasks(self, tasks: list[Task]) -> list[Task]:
        """Add *tasks* as they are (ids kept) and return them.

        The merged store must pass the scheduling validator; the counter moves past any
        imported ``task_<n>`` id.

        Raises:
            InvalidTaskError: an imported id is already in the store, or is not a safe name.
            FieldLimitError: an id, a text or metadata beyond its limit (``taskstore._limits``).
            ScheduleError: the merged graph is invalid.
        """
        for task in tasks:
            check_imported(task)
            check_triage(task.metadata, task.id)

        def change(document: StoreDocument) -> list[Task]:
            known = {task.id for task in document.tasks}
            stamp = now_rfc3339_seconds()
            for task in tasks:
                if task.id in known:
                    raise InvalidTaskError(f"task {quote(task.id)} already exists")
                known.add(task.id)
                task.created_at = task.created_at or stamp
                task.updated_at = task.updated_at or stamp
                document.next_id = max(document.next_id, counter_after(task.id))
            document.tasks.extend(tasks)
            compute_schedule(document.tasks)
            return tasks

        return self.mutate(change)


def _merge_into(old: Task, new: Task, status_key: str) -> None:
    """Take *new*'s tracker fields into *old*; rho's own metadata (command, rho.*) stays.

    The status is taken only when the tracker's own word for it changed since the last import:
    a task a mission completed stays completed while the tracker has not said otherwise.
    """
    if new.metadata.get(status_key) != old.metadata.get(status_key):
        old.status = new.status
    old.subject, old.description = new.subject, new.description
    old.parent_id, old.dependencies = new.parent_id, new.dependencies
    if new.owner is not None:  # who holds it, as the tracker says now
        old.owner = new.owner
    for key in ("priority", "labels", GROUP_KEY):  # the tracker's say, as it is now
        old.metadata.pop(key, None)
    old.metadata.update(new.metadata)


def _refuse_claim(document: StoreDocument, task: Task) -> None:
    if task.status == "in_progress":
        by = f" by {quote(task.owner)}" if task.owner else ""
        raise ClaimError(f"task {quote(task.id)} is claimed already{by}")
    if task.status != "pending":
        raise ClaimError(f"task {quote(task.id)} is {task.status}, not pending")
    statuses = {other.id: other.status for other in document.tasks}
    waiting = sorted(b for b in set(task.blocker_ids) if statuses.get(b) != "completed")
    if waiting:
        blocker = waiting[0]
        raise ClaimError(
            f"task {quote(task.id)} is not ready: its blocker {quote(blocker)} is "
            f"{statuses.get(blocker, 'missing')}"
        )


def _identity(path: Path) -> tuple[int, ...]:
    """What tells one version of a file from another without reading it."""
    found = os.stat(path)
    return (found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns)
