"""The resolve stage: a conflicted merge at a join, handed to a resolver with the conflict in place.

When a feature's work conflicts with the head a join built so far, `ConflictResolver` prepares
a worktree of the stages' pool (``_stage_runner``) on ``rho-mission/<m>/resolve`` at that head
and runs ``git merge --no-commit`` of the feature's commit there: git's own markers in the
files, the unmerged paths in the index. The resolver (``--resolve CMD``, or a library worker)
runs in it like a task (supervisor, timeout, sandbox, log cap), told what met what by a JSON
brief (``RHO_CONFLICT_FILE``, ``prompts/resolve/<feature>.conflict.json``) and a Markdown prompt
(``RHO_TASK_PROMPT_FILE``, ``prompts/resolve/<feature>.md``), its output in
``logs/resolve/<feature>.log``: a stage's folder, where no task's id can name a file
(``records._places``).

The resolver's last step is rho's: a resolver need only edit files, not ``git add`` them
(real agents are often not allowed to: claude under ``acceptEdits`` is denied the command,
codex's own sandbox cannot write the index lock), and one that does, or that commits (aider),
changes nothing of what is taken. When the resolver exited 0, rho puts back its own index (the
one its merge wrote, the unmerged entries in it: a resolver's index may lie about what changed,
as a task's may; after a resolver's commit it is moved to that commit's tree) and stages the
worktree whole, as it stages a task's work (``git._commit.stage_all``): every conflicted path
as the resolver left it, and whatever else it changed, but the ``--copy`` paths, which are
never staged (the resolve worktree gets no copies nor setup: anything there is the
resolver's). Then it writes the tree and makes the merge commit of the head and the
feature's commit itself; HEAD, refs and any commit the resolver made are not taken. The
resolution is refused, with its reason in one line, when:

- a path both sides hold in the conflicted merge (a content or an add/add conflict: the
  unmerged index holds "ours" and "theirs") is gone: deleting it drops a side's work. A path
  one side deleted (a modify/delete conflict) may go: deleting it is one side's resolution;
- a conflicted path holds a line that is one of git's conflict markers at a line's start
  (``<<<<<<<``, ``>>>>>>>`` or diff3's ``|||||||``, then a blank or the line's end); a line of
  seven ``=`` and nothing but blanks counts only when neither side's version of the path holds
  one (a Markdown heading's underline is no marker);
- the merge would land a ``--copy`` file (a resolver's commit of one), as a feature's commits
  are (``setup._carried``).

Paths the merge left clean are the resolver's to change like any other file: a resolver that
deletes one (or throws the merge away with ``git merge --abort``) is not caught here, but by
the join's checks (``--verify``).

Decision: docs/decisions/0505-conflicts.md
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import anyio

from graph import sha256_hex as digest

from .._errors import FeatureFailedError, GitOperationError, MissionError
from ..agents._reading import usage_ask
from ..containment._folders import open_private
from ..containment._process import note_in_log
from ..executors._contract import Worker, WorkerContext
from ..executors._shell import run_in_worktree, worker_environment
from ..git._commit import LITERAL_PATHSPECS, path_text, stage_all
from ..records._clock import now_rfc3339_millis
from ..records._document import Feature, MissionDocument
from ..records._journal import Journal
from ..records._places import resolve_brief, resolve_log, resolve_prompt
from ..records._usage import AttemptUsage
from ..setup import carried_copy, carried_text
from ._stage_runner import StageRunner

__all__ = [
    "ConflictResolver",
    "Resolution",
    "resolve_environment",
    "resolve_shell_worker",
]

# Lines git writes around a conflict (diff3's base marker too); a line of seven "=" is one only
# when nothing but blanks follows, and only where neither side held one (``_marked``).
_MARKERS = "^(<{7}|>{7}|[|]{7})( |$)"
_SEPARATOR = "^={7}[[:space:]]*$"
# The index stages of an unmerged path: 2 is "ours" (the head), 3 "theirs" (the feature).
_OURS, _THEIRS = "2", "3"


@dataclass(frozen=True)
class Resolution:
    """What a resolve stage came to: the merge commit rho made, or why there is none."""

    merge: str | None
    reason: str | None = None


@dataclass(frozen=True)
class _Merging:
    """The merge in the resolve worktree as git left it: its base, the paths it left unmerged
    (as git names them) and those of them both sides hold."""

    base: str
    unmerged: tuple[str, ...]
    both: tuple[str, ...]


@dataclass(frozen=True)
class ConflictAt:
    """One conflicted merge of a join: the head so far, the feature's commit, what met."""

    feature: Feature
    head: str
    commit: str
    paths: Sequence[str]
    merged: Sequence[Feature]  # merged before it in this join, in its order
    attempt: int


class ConflictResolver:
    """Runs the resolve stage of one run's conflicted merges, one at a time."""

    def __init__(
        self,
        mission: MissionDocument,
        runner: StageRunner,
        worker: Worker,
        journal: Journal,
        note_usage: Callable[[Feature, AttemptUsage], None],
    ) -> None:
        self.mission = mission
        self.runner = runner
        self.worker = worker
        self.journal = journal
        self.folder = Path(mission.dir)
        # Keeps what a resolve attempt spent, with the feature's (``_loop``).
        self.note_usage = note_usage

    async def resolve(self, at: ConflictAt) -> Resolution:
        """Hand *at* to the resolver; a cancellation ends its processes and propagates."""
        runner, feature = self.runner, at.feature
        started = time.monotonic()
        branch = runner.branch("resolve")
        log = resolve_log(self.folder, feature.id)
        stamp = now_rfc3339_millis()
        note_in_log(log, f"{feature.id} resolve attempt {at.attempt}: started {stamp}")
        try:
            worktree = await runner.acquire(branch, at.head)
        except MissionError as exc:
            return self._ended(at, log, Resolution(None, str(exc)), started)
        try:
            outcome = await self._resolve_in(worktree, at, log)
        finally:
            with anyio.CancelScope(shield=True):
                await runner.release(branch, worktree)
        return self._ended(at, log, outcome, started)

    async def _resolve_in(self, worktree: Path, at: ConflictAt, log: Path) -> Resolution:
        try:
            merging = await anyio.to_thread.run_sync(self._start_merge, worktree, at)
        except MissionError as exc:
            return Resolution(None, str(exc))
        brief = self._write_brief(at, merging.base)
        context = WorkerContext(
            mission=self.mission,
            feature=at.feature,
            worktree=worktree,
            base_commit=at.head,
            attempt=at.attempt,
            log_path=log,
            on_process_start=lambda pgid: self.runner.started(at.feature.id, pgid),
            prompt_file=self._write_prompt(at),
            conflict_file=brief,
        )
        config = self.mission.config
        number = at.feature.next_usage_attempt("resolve")
        ask = usage_ask(config, "resolve", number, config.resolve_agent)
        keep = partial(self.note_usage, at.feature)
        error = await self.runner.run(self.worker, context, (ask, keep))
        if error is not None:
            return Resolution(None, error)
        try:
            merge = await anyio.to_thread.run_sync(self._finish_merge, worktree, at, merging)
        except MissionError as exc:
            return Resolution(None, str(exc))
        return Resolution(merge)

    def _ended(self, at: ConflictAt, log: Path, outcome: Resolution, started: float) -> Resolution:
        status = "resolved" if outcome.merge is not None else "failed"
        said = f": {outcome.reason}" if outcome.reason else ""
        note_in_log(log, f"{at.feature.id} resolve attempt {at.attempt} {status}{said}")
        self.journal.record(
            "resolve",
            now_rfc3339_millis(),
            feature_id=at.feature.id,
            attempt=at.attempt,
            status=status,
            paths_count=len(at.paths),
            duration_ms=round((time.monotonic() - started) * 1000),
            error_sha256=digest(outcome.reason) if outcome.reason else None,
        )
        return outcome

    # -- git in the resolve worktree ---------------------------------------------------------

    def _start_merge(self, worktree: Path, at: ConflictAt) -> _Merging:
        """Merge the feature's commit into the head, the conflict left in place.

        Raises:
            GitOperationError: git could not merge at all.
        """
        repo = self.runner.repo
        message = f"rho-mission {self.mission.id}: merge {at.feature.id}"
        args = ("merge", "--no-ff", "--no-commit", "--no-edit", "-m", message, at.commit)
        status, _, err = repo.run_status(*args, cwd=worktree, env=repo.identity_env())
        if status not in (0, 1):  # 1: the conflict, as expected
            raise GitOperationError(["git", *args], status, err)
        # The index the merge wrote is rho's own: what is staged after the resolver starts
        # from it, not from what the resolver's git left.
        self.runner.pool().note_index(worktree, at.head)
        base = repo.run("merge-base", at.head, at.commit).strip()
        return _Merging(base, *self._unmerged(worktree))

    def _unmerged(self, worktree: Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The paths rho's index in *worktree* holds unmerged, and those of them that hold both
        "ours" and "theirs", each as git names it.

        Raises:
            GitOperationError: git could not read the index.
        """
        stages: dict[str, set[str]] = {}
        listed = self.runner.repo.run("ls-files", "--unmerged", "-z", cwd=worktree)
        for line in filter(None, listed.split("\0")):
            entry, path = line.split("\t", 1)
            stages.setdefault(path, set()).add(entry.split()[-1])
        both = [path for path, held in stages.items() if {_OURS, _THEIRS} <= held]
        return tuple(sorted(stages)), tuple(sorted(both))

    def _finish_merge(self, worktree: Path, at: ConflictAt, merging: _Merging) -> str:
        """The merge commit of what the resolver left, staged by rho.

        Raises:
            FeatureFailedError: a path both sides need is gone, or a conflict marker is left.
            MissionError: git refused, or the worktree is not the one rho made.
        """
        repo = self.runner.repo
        try:
            self.runner.pool().own_index(worktree)
        except OSError as exc:
            raise FeatureFailedError(f"its index could not be put back: {exc.strerror}") from exc
        spared = {*self.runner.spared(worktree), *self.mission.config.copy_paths}
        stage_all(repo, worktree, tuple(sorted(spared)))
        tree = repo.run("write-tree", cwd=worktree).strip()
        gone = self._gone(tree, merging.both)
        if gone:
            raise FeatureFailedError(
                f"conflicted paths deleted that both sides hold: {', '.join(gone)}"
            )
        marked = self._marked(tree, at, merging.unmerged)
        if marked:
            raise FeatureFailedError(f"conflict markers left in {', '.join(marked)}")
        message = f"rho-mission {self.mission.id}: merge {at.feature.id} (resolved)"
        merge = repo.commit_tree(tree, (at.head, at.commit), message)
        self._refuse_carried(at, merge)
        return merge

    def _refuse_carried(self, at: ConflictAt, merge: str) -> None:
        """Refuse a resolution that would land a ``--copy`` file (``setup.carried_copy``): the
        resolve worktree gets no copies, so one there is the resolver's (or its commits').

        Raises:
            FeatureFailedError: the merge, or a commit it brings, holds one.
        """
        paths = self.mission.config.copy_paths
        found = carried_copy(self.runner.repo, paths, at.head, merge)
        if found is not None:
            commit, path = found
            where = "its resolution" if commit == merge else f"commit {commit[:12]}"
            raise FeatureFailedError(carried_text(where, path))

    def _gone(self, tree: str, paths: Sequence[str]) -> list[str]:
        """Those of *paths* that *tree* holds no file (or link) at: a folder or a nested
        repository there is none."""
        if not paths:
            return []
        args = ("ls-tree", "-z", "--full-tree", tree, "--", *paths)
        out = self.runner.repo.run(*args, env=LITERAL_PATHSPECS)
        entries = (line.split("\t", 1) for line in out.split("\0") if line)
        files = {path for entry, path in entries if entry.split()[1] == "blob"}
        return [path_text(path) for path in paths if path not in files]

    def _marked(self, tree: str, at: ConflictAt, paths: Sequence[str]) -> list[str]:
        """The conflicted *paths* whose blob in *tree* holds a conflict marker line.

        Read by git from the objects (no file of the worktree is opened, so no link a
        resolver left is followed); binary files hold no markers.
        """
        if not paths:
            return []
        marked = self._grep(_MARKERS, (tree,), paths)[tree]
        separated = self._grep(_SEPARATOR, (tree, at.head, at.commit), paths)
        marked |= separated[tree] - separated[at.head] - separated[at.commit]
        return sorted(path_text(path) for path in marked)

    def _grep(
        self, pattern: str, trees: Sequence[str], paths: Sequence[str]
    ) -> dict[str, set[str]]:
        """For each of *trees*, those of *paths* with a line matching *pattern*.

        Raises:
            GitOperationError: git could not search.
        """
        args = ("grep", "-I", "-l", "-z", "-E", "-e", pattern, *trees, "--", *paths)
        status, out, err = self.runner.repo.run_status(*args, env=LITERAL_PATHSPECS)
        if status not in (0, 1):
            raise GitOperationError(["git", *args], status, err)
        found: dict[str, set[str]] = {tree: set() for tree in trees}
        for name in out.split("\0"):
            tree, _, path = name.partition(":")
            if path:
                found[tree].add(path)
        return found

    # -- what the resolver is told -----------------------------------------------------------

    def _write_brief(self, at: ConflictAt, base: str) -> Path:
        feature = at.feature
        brief = {
            "feature": feature.id,
            "subject": feature.subject,
            "description": feature.description,
            "paths": list(at.paths),
            "merged": [{"id": f.id, "subject": f.subject} for f in at.merged],
            "base": base,
            "ours": at.head,
            "theirs": at.commit,
        }
        text = json.dumps(brief, indent=2, ensure_ascii=False) + "\n"
        return _write(resolve_brief(self.folder, feature.id), text)

    def _write_prompt(self, at: ConflictAt) -> Path:
        feature = at.feature
        merged = "".join(f"- {f.id}: {f.subject}\n" for f in at.merged) or (
            "- (the work already on the integration branch)\n"
        )
        paths = "".join(f"- {path}\n" for path in at.paths)
        text = (
            f"# Resolve a merge conflict: {feature.subject}\n\n"
            f"Mission: {self.mission.prompt}\n\n"
            f"The work of task {feature.id} was merged into this worktree on top of the work "
            f"joined before it, and git left conflicts in:\n\n{paths}\n"
            f"What task {feature.id} set out to do:\n\n{feature.description}\n\n"
            f"Merged before it:\n\n{merged}\n"
            "Keep both intents: edit each conflicted file so that it holds what both sides "
            "meant, and leave no conflict markers (<<<<<<<, =======, >>>>>>>). Editing the "
            "files is all: rho stages what you leave (there is no need to run `git add`) and "
            "commits the merge; do not commit, and do not delete a conflicted file that both "
            "sides hold.\n"
        )
        return _write(resolve_prompt(self.folder, feature.id), text)


def _write(path: Path, text: str) -> Path:
    fd = open_private(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path


async def resolve_shell_worker(ctx: WorkerContext) -> None:
    """Run the mission's ``resolve_command`` in the resolve worktree.

    Raises:
        FeatureFailedError: no command, a non-zero exit, or death by a signal.
    """
    command = ctx.mission.config.resolve_command
    if not command:
        raise FeatureFailedError(f"mission {ctx.mission.id} has no resolve command")
    await run_in_worktree(ctx, command, resolve_environment(ctx))


def resolve_environment(ctx: WorkerContext) -> dict[str, str]:
    """A task's environment (``executors._shell.worker_environment``) for the conflicted
    feature, plus ``RHO_STAGE=resolve`` and ``RHO_CONFLICT_FILE``."""
    assert ctx.prompt_file is not None  # both written by the resolver before it runs
    assert ctx.conflict_file is not None
    env = worker_environment(ctx, ctx.prompt_file)
    env.update(RHO_STAGE="resolve", RHO_CONFLICT_FILE=str(ctx.conflict_file))
    return env
