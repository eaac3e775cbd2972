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

A resolution is taken when the resolver succeeded, its index lists no unmerged path, and no
conflicted path holds a line that is one of git's conflict markers. rho then stages what the
worktree holds from its own index (the one its merge wrote: a resolver's index may lie about
what changed, as a task's may), writes the tree and makes the merge commit of the head and the
feature's commit itself; HEAD, refs and any commit the resolver made are not taken. A merge
that would land a ``--copy`` file (which the resolve worktree never gets: one there is the
resolver's doing) is refused, as a feature's commits are (``setup._carried``). Anything else
is a failed resolution with its reason in one line.
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
from ..git._commit import path_text
from ..records._clock import now_rfc3339
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
# when nothing but blanks follows.
_MARKERS = ("^(<{7}|>{7}|[|]{7})( |$)", "^={7}[[:space:]]*$")


@dataclass(frozen=True)
class Resolution:
    """What a resolve stage came to: the merge commit rho made, or why there is none."""

    merge: str | None
    reason: str | None = None


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
        note_in_log(log, f"{feature.id} resolve attempt {at.attempt}: started {now_rfc3339()}")
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
            base = await anyio.to_thread.run_sync(self._start_merge, worktree, at)
        except MissionError as exc:
            return Resolution(None, str(exc))
        brief = self._write_brief(at, base)
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
            merge = await anyio.to_thread.run_sync(self._finish_merge, worktree, at)
        except MissionError as exc:
            return Resolution(None, str(exc))
        return Resolution(merge)

    def _ended(self, at: ConflictAt, log: Path, outcome: Resolution, started: float) -> Resolution:
        status = "resolved" if outcome.merge is not None else "failed"
        said = f": {outcome.reason}" if outcome.reason else ""
        note_in_log(log, f"{at.feature.id} resolve attempt {at.attempt} {status}{said}")
        self.journal.record(
            "resolve",
            now_rfc3339(),
            feature_id=at.feature.id,
            attempt=at.attempt,
            status=status,
            paths_count=len(at.paths),
            duration_ms=round((time.monotonic() - started) * 1000),
            error_sha256=digest(outcome.reason) if outcome.reason else None,
        )
        return outcome

    # -- git in the resolve worktree ---------------------------------------------------------

    def _start_merge(self, worktree: Path, at: ConflictAt) -> str:
        """Merge the feature's commit into the head, the conflict left in place; the merge base.

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
        return repo.run("merge-base", at.head, at.commit).strip()

    def _finish_merge(self, worktree: Path, at: ConflictAt) -> str:
        """The merge commit of what the resolver left.

        Raises:
            FeatureFailedError: an unmerged path or a conflict marker is left.
            MissionError: git refused, or the worktree is not the one rho made.
        """
        repo = self.runner.repo
        status, out, err = repo.run_status("ls-files", "--unmerged", "-z", cwd=worktree)
        if status != 0:
            raise FeatureFailedError(f"its index cannot be read: {err.strip() or status}")
        unmerged = sorted({path_text(line.split("\t", 1)[-1]) for line in out.split("\0") if line})
        if unmerged:
            raise FeatureFailedError(
                f"unmerged paths left: {', '.join(unmerged)} (mark each resolved with git add)"
            )
        try:
            self.runner.pool().own_index(worktree)
        except OSError as exc:
            raise FeatureFailedError(f"its index could not be put back: {exc.strerror}") from exc
        repo.run("add", "--all", cwd=worktree)
        tree = repo.run("write-tree", cwd=worktree).strip()
        marked = self._marked(tree, at.paths)
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

    def _marked(self, tree: str, paths: Sequence[str]) -> list[str]:
        """The conflicted *paths* whose blob in *tree* holds a conflict marker line.

        Read by git from the objects it just wrote (no file of the worktree is opened, so no
        link a resolver left is followed); binary files hold no markers.
        """
        patterns = [option for marker in _MARKERS for option in ("-e", marker)]
        args = ("grep", "-I", "-l", "-z", "-E", *patterns, tree)
        status, out, err = self.runner.repo.run_status(*args)
        if status not in (0, 1):
            raise GitOperationError(["git", *args], status, err)
        prefix = f"{tree}:"
        found = {path_text(name.removeprefix(prefix)) for name in out.split("\0") if name}
        return sorted(found & set(paths))

    # -- what the resolver is told -----------------------------------------------------------

    def _write_brief(self, at: ConflictAt, base: str) -> Path:
        feature = at.feature
        brief = {
            "feature": feature.id,
            "subject": feature.description,
            "description": feature.expected_behavior,
            "paths": list(at.paths),
            "merged": [{"id": f.id, "subject": f.description} for f in at.merged],
            "base": base,
            "ours": at.head,
            "theirs": at.commit,
        }
        text = json.dumps(brief, indent=2, ensure_ascii=False) + "\n"
        return _write(resolve_brief(self.folder, feature.id), text)

    def _write_prompt(self, at: ConflictAt) -> Path:
        feature = at.feature
        merged = "".join(f"- {f.id}: {f.description}\n" for f in at.merged) or (
            "- (the work already on the integration branch)\n"
        )
        paths = "".join(f"- {path}\n" for path in at.paths)
        text = (
            f"# Resolve a merge conflict: {feature.description}\n\n"
            f"Mission: {self.mission.prompt}\n\n"
            f"The work of task {feature.id} was merged into this worktree on top of the work "
            f"joined before it, and git left conflicts in:\n\n{paths}\n"
            f"What task {feature.id} set out to do:\n\n{feature.expected_behavior}\n\n"
            f"Merged before it:\n\n{merged}\n"
            "Keep both intents: edit each conflicted file so that it holds what both sides "
            "meant, leave no conflict markers (<<<<<<<, =======, >>>>>>>), and mark each file "
            "resolved with `git add`. Do not commit: rho commits the merge.\n"
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
