"""``Mission``: the mission.json document plus the library API that runs it.

Decision: docs/decisions/0501-missions.md
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import anyio
from filelock import Timeout
from pydantic import PrivateAttr, ValidationError

from taskstore import InvalidPlanError, PlanDocument, read_plan

from .._errors import (
    InvalidMissionError,
    MissionError,
    NotAGitRepositoryError,
    UnknownRefError,
    quote,
)
from ..containment import hold_guarantees, require_bwrap
from ..containment._gitconfig import hold_config
from ..containment._mission_processes import kill_mission_processes
from ..engine._loop import run_waves
from ..executors import LocalExecutor
from ..executors._contract import Executor, Observer, Worker
from ..git._repo import GitRepo
from ..git._runlock import is_running, run_lock
from ..notify import attention
from ..planning import Planner, run_planning
from ..records._clock import now_rfc3339_millis
from ..records._document import Feature, MissionConfig, MissionDocument, feature_id_problem
from ..records._journal import Journal
from ..records._persist import prepare_mission_dir
from ..records._places import feature_branch, integration_branch, mission_folder, missions_folder
from ..setup import check_setup_inputs
from ._resume_refresh import refresh_features, store_features
from ._stageworkers import StageWorkers, setup_step
from ._waves import staged_plan

__all__ = ["Mission", "list_missions", "mission_is_running", "mission_state"]

MISSION_FILE = "mission.json"
_T = TypeVar("_T")


class Mission(MissionDocument):
    """A mission: features run in waves of isolated git worktrees, joined durably.

    Build one with ``Mission.new``, run it with ``await mission.run_staged(worker, waves=...)``
    (or ``run_staged_sync``), reopen one with ``Mission.load(dir)``. After a run, ``status``,
    ``features`` and ``wave_joins`` hold the outcome.

    Running one (``run_staged``, ``resume``, ``plan`` and their ``_sync`` forms) changes the
    calling process, for the rest of its life unless said:

    - The first task makes it a child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``, never
      undone; ``containment._orphans``): any orphaned descendant, a task's or one of the
      caller's own subprocesses' children, is re-parented to it instead of PID 1. rho ends
      and reaps a task's orphans when the task's supervisor dies by a signal, including a
      process the caller started in a session of its own while a task ran and whose parent
      died; the caller reaps any other. A caller that cannot have that runs rho in a process
      of its own.
    - The first task starts one helper process, the zygote, which forks each task's supervisor;
      it ends with the interpreter (an ``atexit`` handler, and its parent-death signal).
    - The first save starts one thread, ``rho-save``, kept for the process.
    - While waves run, ``sys.setswitchinterval`` is lowered to 0.5 ms (put back after).
    - No signal handler is installed in the calling process: Ctrl-C or SIGTERM reach the
      caller as usual, and a mission interrupted by them is resumed with ``resume``.

    Decision: docs/decisions/0704-supervisor.md, docs/decisions/0501-missions.md
    """

    _warnings: list[str] = PrivateAttr(default_factory=list)

    @classmethod
    def new(
        cls,
        repo: str | Path,
        prompt: str,
        features: Sequence[Feature] | None = None,
        config: MissionConfig | None = None,
        *,
        base: str = "HEAD",
        mission_id: str | None = None,
    ) -> Mission:
        """Plan a mission on the repository containing *repo*, starting at *base*.

        Nothing is written until the mission runs.

        Raises:
            NotAGitRepositoryError: *repo* is not inside a git work tree.
            UnknownRefError: *base* names no commit.
            InvalidMissionError: the repository has no commit yet (*base* ``HEAD``), or a
                ``copy_paths`` or ``setup_key`` path of *config* cannot be used (see
                ``setup.check_setup_inputs``).
        """
        git = GitRepo.open(Path(repo))
        ident = mission_id or secrets.token_hex(4)
        folder = mission_folder(git.root, ident)
        if os.path.lexists(folder):
            # Reusing it would overwrite that mission's record and reset its branches.
            raise InvalidMissionError(f"mission id {ident} is taken: {folder} exists")
        base_commit = _base_commit(git, base)
        mission = cls(
            id=ident,
            prompt=prompt,
            dir=str(folder),
            repo=str(git.root),
            base_commit=base_commit,
            integration_branch=integration_branch(ident),
            config=check_setup_inputs(git, config or MissionConfig(), base_commit),
        )
        for feature in features or ():
            mission.add_feature(feature)
        return mission

    @classmethod
    def load(cls, directory: str | Path) -> Mission:
        """Read ``DIR/mission.json``, with its paths taken from where DIR is now.

        A copied folder, or a repository that moved, works where it is: ``dir`` becomes DIR,
        ``repo`` the repository holding it, and a task store that was inside the old
        repository is looked for at the same place in the new one. Nothing is written.

        Raises:
            InvalidMissionError: the folder or file is missing, or the file is not a mission
                (its refs outside ``rho-mission/<id>/`` included).
        """
        path = Path(directory) / MISSION_FILE
        try:
            mission = cls.model_validate_json(path.read_bytes())
        except FileNotFoundError as exc:
            raise InvalidMissionError(f"no mission at {directory}: {MISSION_FILE} missing") from exc
        except (IsADirectoryError, NotADirectoryError) as exc:
            raise InvalidMissionError(f"no mission at {directory}") from exc
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "document"
            raise InvalidMissionError(f"invalid {path}: {where}: {first['msg'].lower()}") from exc
        except RecursionError as exc:
            raise InvalidMissionError(f"invalid {path}: nested too deeply") from exc
        mission._relocate(Path(directory))
        return mission

    def _relocate(self, folder: Path) -> None:
        here = Path(os.path.abspath(folder))
        if str(here) == self.dir:
            return
        try:
            root = GitRepo.open(here).root
        except NotAGitRepositoryError:
            root = None  # still readable (show, list); a run will say it is in no repository
        old_repo = Path(self.repo)
        self.dir = str(here)
        if root is None or root == old_repo:
            return
        self.repo = str(root)
        store = self.config.task_store
        if store and Path(store).is_relative_to(old_repo):
            moved = root / Path(store).relative_to(old_repo)
            self.config = self.config.model_copy(update={"task_store": str(moved)})

    def add_feature(self, feature: Feature) -> Feature:
        """Add *feature*, giving it its branch ``rho-mission/<mission>/<feature>``.

        Raises:
            InvalidMissionError: a feature with that id exists.
        """
        if any(existing.id == feature.id for existing in self.features):
            raise InvalidMissionError(f"feature {quote(feature.id)} already exists")
        problem = feature_id_problem(feature.id)
        if problem is not None:
            raise InvalidMissionError(problem)
        feature.branch = feature_branch(self.id, feature.id)
        self.features.append(feature)
        return feature

    async def run_staged(
        self,
        worker: Worker | None = None,
        *,
        waves: Sequence[Sequence[str]] | None = None,
        observer: Observer | None = None,
        executor: Executor | None = None,
        verify: Worker | None = None,
        fix: Worker | None = None,
        plan: Planner | None = None,
        resolve: Worker | None = None,
        setup: Worker | None = None,
        bisect: bool | None = None,
    ) -> Mission:
        """Run the features wave after wave, and return this mission.

        Changes the calling process (a child subreaper, a helper process, a thread, the switch
        interval while waves run): see ``Mission``.

        *waves* names the features of each wave; without it, the mission's own waves, else
        waves cut from the features' ``blocked_by`` by the task store's validator. Without
        *worker*, the shell worker runs each feature's command (or ``config.run_command``); a
        worker may be ``async def`` or plain (run in a thread). A mission without features
        gets one per id named in *waves*. *executor* runs each attempt (default: a
        ``LocalExecutor``, this machine's worktrees; ``DaskExecutor`` runs them on a cluster).

        *verify* checks the integration head after each wave's merges (default: the shell runs
        ``config.verify_command``, if set): a worker that returns passes, one that raises fails.
        *fix* (default: ``config.fix_command``) may repair a failed check, at most
        ``config.max_fix_attempts`` times: what it leaves in its worktree is merged and the
        check runs again. Both get a ``WorkerContext`` whose ``wave`` is set, and a fix's
        ``verify_log`` names the failed output. A failed verification stops the mission after
        that wave. Stages run on this machine, whatever the executor.

        *plan* (default: the shell runs ``config.planner_command``, if set) is the planning
        stage of a mission made from its prompt: run first, once (see ``plan``); the features
        and waves are then the plan's, and *waves* must be None.

        *resolve* (default: the shell runs ``config.resolve_command``, if set) gets a merge that
        conflicts at a join: a ``WorkerContext`` whose worktree holds the integration head so
        far with the feature's work merged in and the conflict left in place, ``conflict_file``
        a JSON brief and ``prompt_file`` a prompt for an agent. A worker that returns with no
        unmerged path and no conflict marker left has resolved it: rho commits the merge and
        the feature completes without running again. ``config.replay_conflicts`` runs a
        conflicted feature's task again from the joined head instead (after the resolver).

        *setup* (default: the shell runs ``config.setup_command``, if set) gets each pooled
        worktree ready before the first attempt that uses it: a ``WorkerContext`` whose feature
        is ``setup``. What it leaves that git ignores is kept in the worktree for the next
        features while the setup key holds (its name, ``python:<module>.<name>``, and the
        ``config.setup_key`` files at the feature's start commit) and nothing changed it.

        *bisect* (default: ``config.bisect``, on) sets ``config.bisect``, which ``resume``
        keeps: checks that fail on a join's merged head are run on the wave's base and on
        prefixes of its merge order; the features after whose merge they fail are ``failed``
        and the join lands the head without them (``engine._bisect``).

        Raises:
            InvalidMissionError: empty waves, an unknown or repeated id, a feature in or before
                the wave of one of its blockers, (shell worker) a feature with no command, or a
                fix stage without a verify stage, all before any work starts.
            PlanningFailedError: the planner failed or wrote no valid plan (recorded).
            MissionError: another process is running this mission.
        """
        self._set_bisect(bisect)
        workers = StageWorkers(worker, verify, fix, plan, resolve, setup)
        return await self._run(workers, waves, observer, None, executor)

    def _set_bisect(self, bisect: bool | None) -> None:
        if bisect is not None:
            self.config = self.config.model_copy(update={"bisect": bisect})

    async def plan(self, planner: Planner | None = None) -> PlanDocument:
        """Run the planning stage alone, once, and return the plan; nothing else runs.

        *planner* gets a ``WorkerContext`` whose ``prompt_file`` holds the prompt (and the plan
        format) and whose ``plan_file`` is where the plan goes; it returns the plan (a
        ``taskstore.PlanDocument`` or its JSON data) or None after writing that file. Default:
        the shell runs ``config.planner_command`` in the planning worktree. A mission planned
        already returns its plan (``plan.json``) without planning again; ``run_staged`` or
        ``resume`` then runs it.

        Raises:
            InvalidMissionError: no planner and no ``config.planner_command``.
            PlanningFailedError: the planner failed or wrote no valid plan (recorded).
            MissionError: another process is running this mission.
        """
        if self._planned():
            return self.kept_plan()
        if planner is None and not self.config.planner_command:
            raise InvalidMissionError(f"mission {self.id} has no planner: pass one")
        with _exclusive(self):
            return await run_planning(self, planner, need_commands=False)

    def plan_sync(self, planner: Planner | None = None) -> PlanDocument:
        """``plan`` for callers without an event loop."""
        return _blocking("plan_sync", "plan", lambda: self.plan(planner))

    def kept_plan(self) -> PlanDocument:
        """The plan this mission's planning stage kept (``plan.json`` of its folder).

        Raises:
            InvalidMissionError: the mission was not planned, or its plan file is unreadable.
        """
        if not self._planned():
            raise InvalidMissionError(f"mission {self.id} has no plan")
        path = Path(self.dir) / "plan.json"
        try:
            return read_plan(path.read_bytes(), str(path))
        except (OSError, InvalidPlanError) as exc:
            raise InvalidMissionError(f"mission {self.id}: its plan cannot be read: {exc}") from exc

    def _planned(self) -> bool:
        return self.planning is not None and self.planning.status == "completed"

    def _planning_due(self, planner: Planner | None) -> bool:
        # Never twice: a mission planned already runs its plan (a resume included).
        wanted = planner is not None or bool(self.config.planner_command)
        return wanted and not self._planned()

    async def _run(
        self,
        workers: StageWorkers,
        waves: Sequence[Sequence[str]] | None,
        observer: Observer | None,
        fresh: Sequence[Feature] | None,
        executor: Executor | None,
    ) -> Mission:
        planning = self._planning_due(workers.plan)
        if planning and waves is not None:
            raise InvalidMissionError("a planned mission's waves are its plan's: pass no waves")
        plan = [] if planning else staged_plan(self, waves)
        stages = workers.stages(self.config)
        executor = executor or LocalExecutor()
        step = setup_step(self.config, workers.setup, executor)
        if workers.worker is None and fresh is None and not planning:
            self.check_runnable(plan)  # before anything is written
        with _exclusive(self):
            # The notifier (if any) hears of culprits as joins find them, and of the end.
            async with attention(self, observer, self.warnings) as watched:
                if planning:
                    await run_planning(self, workers.plan, need_commands=workers.worker is None)
                    plan = staged_plan(self, None)
                if fresh is not None:
                    self._refresh(fresh)
                    if workers.worker is None:
                        self.check_runnable(plan)
                await run_waves(
                    self,
                    workers.task_worker(),
                    plan,
                    executor=executor,
                    observer=watched,
                    warnings=self.warnings,
                    stages=stages,
                    resolve=workers.resolver(self.config),
                    setup=step,
                )
        return self

    def _refresh(self, fresh: Sequence[Feature]) -> None:
        changed = refresh_features(self, fresh)
        Journal(Path(self.dir) / "journal.jsonl").record(
            "refreshed", now_rfc3339_millis(), changed=list(changed), commands_sha256=changed
        )

    def run_staged_sync(
        self,
        worker: Worker | None = None,
        *,
        waves: Sequence[Sequence[str]] | None = None,
        observer: Observer | None = None,
        executor: Executor | None = None,
        verify: Worker | None = None,
        fix: Worker | None = None,
        plan: Planner | None = None,
        resolve: Worker | None = None,
        setup: Worker | None = None,
        bisect: bool | None = None,
    ) -> Mission:
        """``run_staged`` for callers without an event loop.

        Raises:
            MissionError: called from inside a running event loop (await ``run_staged``).
        """
        self._set_bisect(bisect)
        workers = StageWorkers(worker, verify, fix, plan, resolve, setup)
        return _blocking(
            "run_staged_sync",
            "run_staged",
            lambda: self._run(workers, waves, observer, None, executor),
        )

    async def resume(
        self,
        worker: Worker | None = None,
        *,
        observer: Observer | None = None,
        refresh: bool | Sequence[Feature] = False,
        executor: Executor | None = None,
        verify: Worker | None = None,
        fix: Worker | None = None,
        plan: Planner | None = None,
        resolve: Worker | None = None,
        setup: Worker | None = None,
    ) -> Mission:
        """Continue from the first unfinished wave; completed features stay completed.

        *refresh* first takes the subject, description and command of every feature not
        completed from the mission's task store (True) or from the given features; a change of
        shape (features added or removed, blockers changed) is refused. *verify* and *fix* are
        ``run_staged``'s: a wave whose verification failed, was cancelled or was cut short by
        a crash is verified again first, on the integration head as it is now (a hand fix on
        the integration branch is adopted); so is the last joined wave's head when it was not
        verified and this run verifies. A mission whose planning stage never ended (a crash)
        or failed plans first, with *plan* or ``config.planner_command``; a planned one never
        plans again.

        Raises:
            InvalidMissionError: *refresh* changes the mission's shape, or is True for a
                mission made without a task store; a fix stage without a verify stage.
            MissionError: another process is running this mission.
        """
        workers = StageWorkers(worker, verify, fix, plan, resolve, setup)
        return await self._resume(workers, observer, refresh, executor)

    async def _resume(
        self,
        workers: StageWorkers,
        observer: Observer | None,
        refresh: bool | Sequence[Feature],
        executor: Executor | None,
    ) -> Mission:
        fresh: Sequence[Feature] | None = None
        if refresh is True:
            if not self.config.task_store:
                raise InvalidMissionError(
                    f"mission {self.id} has no task store to refresh from; pass the features"
                )
            fresh = store_features(self)
        elif refresh is not False:
            if self.config.signed_plan:
                raise InvalidMissionError(
                    f"mission {self.id} is bound to a signed plan: it refreshes from its task"
                    " store only (refresh=True)"
                )
            fresh = refresh
        waves = self.waves or None  # None: a mission still to plan gets its plan's
        return await self._run(workers, waves, observer, fresh, executor)

    def resume_sync(
        self,
        worker: Worker | None = None,
        *,
        observer: Observer | None = None,
        refresh: bool | Sequence[Feature] = False,
        executor: Executor | None = None,
        verify: Worker | None = None,
        fix: Worker | None = None,
        plan: Planner | None = None,
        resolve: Worker | None = None,
        setup: Worker | None = None,
    ) -> Mission:
        """``resume`` for callers without an event loop.

        Raises:
            MissionError: called from inside a running event loop (await ``resume``).
        """
        workers = StageWorkers(worker, verify, fix, plan, resolve, setup)
        return _blocking(
            "resume_sync", "resume", lambda: self._resume(workers, observer, refresh, executor)
        )

    def kill_processes(self) -> list[int]:
        """SIGKILL every process this mission's tasks started, at once; return their pids.

        What a second Ctrl-C does: the running ``run_staged`` then records every cancelled
        feature and the join as after the first. Safe to call from a signal handler's task or
        another thread.
        """
        return kill_mission_processes(self.id)

    def check_runnable(self, waves: Sequence[Sequence[str]] | None = None) -> None:
        """Refuse, before any work starts, a feature the shell worker could not run.

        Raises:
            InvalidMissionError: a feature still to run has no command and there is no
                ``config.run_command``.
        """
        if self.config.run_command:
            return
        for feature_id in (i for wave in (waves or self.waves) for i in wave):
            feature = self.feature(feature_id)
            if feature.status != "completed" and not feature.command:
                raise InvalidMissionError(self._no_command(feature_id))

    def _no_command(self, feature_id: str) -> str:
        """What to do about a task with no command: the commands that give it one."""
        fix = "pass --run CMD (the command every task without one runs)"
        if self.config.task_store:  # a task of the store: its own command is set there
            fix = f"give it one with 'rho task update {feature_id} --command CMD', or {fix}"
        return f"task {quote(feature_id)} has no command; {fix}"

    @property
    def warnings(self) -> list[str]:
        """Problems of the last run that did not stop it (e.g. a task store left unwritable)."""
        return self._warnings


def _base_commit(git: GitRepo, base: str) -> str:
    """The commit *base* names; a repository without a commit yet is told how to make one."""
    try:
        return git.resolve_commit(base)
    except UnknownRefError:
        if base == "HEAD" and git.run_status("rev-parse", "--verify", "--quiet", "HEAD")[0] != 0:
            raise InvalidMissionError(
                f"the repository {git.root} has no commit yet: a mission starts from one; "
                "make a first commit (git commit --allow-empty -m 'first commit')"
            ) from None
        raise


def list_missions(repo: str | Path) -> list[Mission]:
    """The missions under ``<repo root>/.rho/missions``, newest first; unreadable ones skipped.

    Raises:
        NotAGitRepositoryError: *repo* is not inside a git work tree.
    """
    root = missions_folder(GitRepo.open(Path(repo)).root)
    found: list[Mission] = []
    for folder in sorted(root.glob("*/")) if root.is_dir() else []:
        try:
            found.append(Mission.load(folder))
        except InvalidMissionError:
            continue
    return sorted(found, key=lambda m: (m.started_at or "", m.id), reverse=True)


def _blocking(name: str, instead: str, run: Callable[[], Awaitable[_T]]) -> _T:
    """Run *run* in an event loop of its own, refusing to nest in a running one."""
    try:
        asyncio.get_running_loop()  # rho runs on asyncio; a caller inside one must await
    except RuntimeError:
        return anyio.run(run)
    raise MissionError(
        f"{name} cannot run inside a running event loop; use 'await mission.{instead}(...)'"
    )


def mission_is_running(mission: MissionDocument) -> bool:
    """Whether some process holds *mission*'s run lock (a live run of it, anywhere)."""
    try:
        return is_running(GitRepo.open(Path(mission.dir)), mission.id)
    except NotAGitRepositoryError:
        return False


def mission_state(mission: MissionDocument) -> str:
    """The mission's status, or ``interrupted`` for one recorded as running that no process runs.

    A crash (kill -9, power loss) leaves ``executing`` in mission.json with worktrees still
    locked: such a mission waits to be resumed or cleaned.
    """
    planning = mission.planning is not None and mission.planning.status == "running"
    if (mission.status == "executing" or planning) and not mission_is_running(mission):
        return "interrupted"
    return mission.status


@contextmanager
def _exclusive(mission: Mission) -> Iterator[None]:
    """Hold the mission's run lock so that two processes never run one mission at once.

    Raises:
        MissionError: another process runs this mission.
        InvalidMissionError: the mission never ran but its folder holds a mission already.
        UnsafePathError: a symbolic link stands where the mission's folders go.
    """
    folder = Path(mission.dir)
    repo = GitRepo.open(Path(mission.repo))
    lock = run_lock(repo, mission.id)
    try:
        lock.acquire(timeout=0)
    except Timeout as exc:
        raise MissionError(f"mission {mission.id} is already running") from exc
    try:
        unplanned = mission.planning is None  # a planning stage writes mission.json first
        if mission.started_at is None and unplanned and os.path.lexists(folder / MISSION_FILE):
            raise InvalidMissionError(f"mission id {mission.id} is taken: {folder} holds one")
        first_run = mission.started_at is None
        hold_guarantees(repo.common_dir, mission.id, mission.config, first_run=first_run)
        if mission.config.sandbox:
            require_bwrap()  # before anything runs: one line naming the package
        new = not os.path.lexists(folder)
        prepare_mission_dir(folder, repo.root)
        try:
            with hold_config(repo.common_dir):  # rho's git runs no command a task wrote
                yield
        except BaseException:
            if new:
                _remove_if_empty(folder)
            raise
    finally:
        lock.release()


def _remove_if_empty(folder: Path) -> None:
    """Take back the folders of a run refused before it wrote anything (rmdir: empty only)."""
    for path in (folder / "logs", folder / "prompts", folder):
        with contextlib.suppress(OSError):
            path.rmdir()
