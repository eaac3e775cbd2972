"""``rho mission merge``: bring a mission's integration branch into the user's branch.

The one command of rho that touches the user's checkout, and only when asked. Everything that
could refuse is decided before the checkout is touched:

- the mission must be at rest (its run lock is held for the whole merge) and have ended;
- into the current branch: HEAD on a branch, no tracked or staged change, and no untracked (or
  ignored) file where the merge puts one;
- the merge is computed without any work tree (``git merge-tree --write-tree`` +
  ``commit-tree``, see ``GitRepo.merge_commit``): a conflict refuses before anything changed.

Then the branch moves to the result, which always descends from it: in the user's checkout by
``git merge --ff-only --no-overwrite-ignore`` (git checks the work tree again as it goes), or, for
``--into`` a branch no work tree has checked out, by compare-and-swap (``git update-ref``).

Decision: docs/decisions/0508-mission-commands.md
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Literal

from taskstore import TaskStore

from .._errors import MergeConflictError, MergeRefusedError, RefMovedError, quote
from ..engine._carryover import record_work
from ..git._repo import GitRepo
from ..records._clock import now_rfc3339_millis
from ..records._document import MergeRecord, MissionDocument
from ..records._persist import save_mission
from ..records._places import RHO_DIR, RHO_PATTERN
from ._cleanup import idle_mission
from ._pick import compose_tasks

__all__ = [
    "MergeOutcome",
    "MergeRefusedError",
    "current_branch",
    "merge_mission",
    "tracked_records",
    "tracked_records_message",
    "uncommitted_paths",
]

MergeKind = Literal["up to date", "fast-forward", "merge commit", "squash"]
_NAMED = 5  # paths an error names; the rest are counted


@dataclass(frozen=True)
class MergeOutcome:
    """What ``merge_mission`` did: *branch* moved from *old* to *new*.

    ``checkout`` says whether the user's work tree was updated (the branch is checked out
    there); ``files_changed`` lists the paths that differ between *old* and *new*; ``tasks``
    the tasks whose work the merge brought (sorted, or in merge order with ``only``).
    """

    branch: str
    old: str
    new: str
    kind: MergeKind
    checkout: bool
    files_changed: list[str]
    tasks: list[str] = field(default_factory=list)


def merge_mission(
    mission: MissionDocument,
    where: str | Path = ".",
    into: str | None = None,
    *,
    only: Sequence[str] = (),
    squash: bool = False,
) -> MergeOutcome:
    """Merge *mission*'s integration branch into the branch checked out at *where*, or *into*.

    Fast-forward when the branch has not moved since the mission's base, else a merge commit.
    A branch checked out at *where* is updated in that work tree; *into* a branch that no work
    tree has checked out moves only the branch. With *only*, just those tasks' work, as merged
    in the integration branch (``_pick``); with *squash*, one commit on the branch whose only
    parent is the branch's head. Either way the task store then records that the merged tasks'
    work is in the new commit (a later mission from the branch finds it there).

    Raises:
        MissionRunningError: the mission runs.
        MergeRefusedError: the mission never ran, was interrupted or lost its integration
            branch; a detached HEAD; a dirty work tree; untracked files in the way; a conflict;
            *into* names no branch, a mission's branch, or one checked out elsewhere. Nothing
            was changed.
        RefMovedError: the target branch moved while rho moved it; nothing was overwritten.
        PickRefusedError: *only* names a task that is not completed, or that needs the work
            of a task not named.
    """
    repo = GitRepo.open(Path(where))
    _refuse_other_repository(repo, mission)
    with idle_mission(repo, mission.id), repo.locked():
        source = integration = _integration_head(repo, mission)
        current = current_branch(repo)
        target = into or current
        if target is None:
            raise MergeRefusedError(
                "HEAD is detached: check out the branch to merge into, or pass --into BRANCH"
            )
        old = _target_head(repo, mission, target)
        in_checkout = target == current
        if in_checkout:
            _refuse_dirty(repo, mission)
        else:
            _refuse_checked_out(repo, mission, target)
        merged_tasks = _completed_with_work(mission)
        if only:
            source, merged_tasks = compose_tasks(repo, mission, source, only)
        new = _merged(repo, mission, target, old, source)
        if squash and new != old:
            new = _squashed(repo, mission, target, old, new, merged_tasks)
        kind: MergeKind = "up to date" if new == old else "fast-forward"
        if new not in (old, source):
            kind = "squash" if squash else "merge commit"
        if new != old:
            _move(repo, mission, target, old, new, in_checkout)
            if only or squash:
                _note_merged_work(mission, merged_tasks, new)
            record = _merge_record(target, kind, new, integration, merged_tasks, only, squash)
            mission.merges = [*mission.merges, record]
            save_mission(mission)  # under the run lock: clean and the views read it
        changed = _changed(repo, old, new)
    return MergeOutcome(target, old, new, kind, in_checkout and new != old, changed, merged_tasks)


def _merge_record(
    target: str,
    kind: MergeKind,
    new: str,
    integration: str,
    tasks: list[str],
    only: Sequence[str],
    squash: bool,
) -> MergeRecord:
    return MergeRecord(
        into=target,
        kind=kind,
        commit=new,
        integration_head=integration,
        squash=squash,
        only=sorted(only),
        tasks=tasks,
        merged_at=now_rfc3339_millis(),
    )


def _completed_with_work(mission: MissionDocument) -> list[str]:
    return sorted(f.id for f in mission.features if f.work_commit is not None)


def _squashed(
    repo: GitRepo, mission: MissionDocument, target: str, old: str, merged: str, tasks: list[str]
) -> str:
    """One commit on *old* with the tree of *merged*: the mission's work, its history left out."""
    tree = repo.run("rev-parse", f"{merged}^{{tree}}").strip()
    # One line per task, its subject after its id, as each task's own commit says it.
    listed = "".join(f"- {i}: {mission.feature(i).subject}\n" for i in tasks[:50])
    more = f"- and {len(tasks) - 50} more\n" if len(tasks) > 50 else ""
    message = (
        f"rho mission {mission.id}: {len(tasks)} task(s), squashed into {target}\n\n"
        f"{listed}{more}" + ("" if tasks else "No task brought work.\n")
    )
    return repo.commit_tree(tree, [old], message)


def _note_merged_work(mission: MissionDocument, tasks: list[str], commit: str) -> None:
    """Point the merged tasks' ``rho.commit`` at *commit*: their integration head is no
    ancestor of a squash or of a subset's commit, and a later mission checks that."""
    store = mission.config.task_store
    if store and tasks and Path(store).is_file():
        record_work(TaskStore(Path(store)), tasks, commit, mission.id)


# -- checks ----------------------------------------------------------------------------------


def _refuse_other_repository(repo: GitRepo, mission: MissionDocument) -> None:
    if GitRepo.open(Path(mission.dir)).common_dir != repo.common_dir:
        raise MergeRefusedError(
            f"mission {mission.id} belongs to the repository at {mission.repo}; run the merge there"
        )


def _integration_head(repo: GitRepo, mission: MissionDocument) -> str:
    if mission.status == "planning" or mission.started_at is None:
        raise MergeRefusedError(f"mission {mission.id} never ran: there is nothing to merge")
    if mission.status == "executing":  # at rest (the run lock is ours): killed or crashed
        raise MergeRefusedError(
            f"mission {mission.id} was interrupted; resume it first with "
            f"'rho mission resume {mission.id}'"
        )
    head = repo.branch_commit(mission.integration_branch)
    if head is None:
        raise MergeRefusedError(
            f"mission {mission.id} has no integration branch {quote(mission.integration_branch)} "
            "any more (cleaned?): there is nothing to merge"
        )
    recorded = mission.integration_head
    if recorded and not repo.is_ancestor(recorded, head):
        raise RefMovedError(
            mission.integration_branch,
            f"was rewritten ({recorded[:12]} -> {head[:12]}, which does not contain it); "
            "refusing to merge it: merge the commits you want with git itself",
        )
    return head


def current_branch(repo: GitRepo) -> str | None:
    """The branch checked out in *repo*'s main work tree; None when HEAD is detached."""
    status, out, _ = repo.run_status("symbolic-ref", "--quiet", "HEAD")
    ref = out.strip()
    return (
        ref.removeprefix("refs/heads/") if status == 0 and ref.startswith("refs/heads/") else None
    )


def _target_head(repo: GitRepo, mission: MissionDocument, target: str) -> str:
    if target.startswith("rho-mission/"):
        raise MergeRefusedError(
            f"refusing to merge into {quote(target)}: it is a branch of a mission, not yours"
        )
    old = repo.branch_commit(target)
    if old is None:
        raise MergeRefusedError(f"no branch {quote(target)} to merge mission {mission.id} into")
    return old


def _refuse_dirty(repo: GitRepo, mission: MissionDocument) -> None:
    # --no-optional-locks: even this look must not rewrite the user's index.
    out = repo.run("--no-optional-locks", "status", "--porcelain=v1", "-z", "--untracked-files=no")
    paths = _status_paths(out)
    records = [path for path in paths if path == RHO_DIR or path.startswith(RHO_PATTERN)]
    if records:
        raise MergeRefusedError(tracked_records_message(records))
    if paths:
        raise MergeRefusedError(
            f"your work tree has uncommitted changes ({_some(paths)}); commit or stash them, "
            f"then run 'rho mission merge {mission.id}' again"
        )


def uncommitted_paths(repo: GitRepo) -> list[str]:
    """The paths of the work tree with changes no commit holds (untracked files too, not the
    ignored ones nor ``.rho/``): what a mission's worktrees will not see."""
    out = repo.run(
        "--no-optional-locks", "status", "--porcelain=v1", "-z", "--untracked-files=normal"
    )
    paths = _status_paths(out)
    return [path for path in paths if path != RHO_DIR and not path.startswith(RHO_PATTERN)]


def tracked_records(repo: GitRepo) -> list[str]:
    """The files under ``.rho/`` that the repository's index tracks (none, normally)."""
    out = repo.run("--no-optional-locks", "ls-files", "-z", "--", RHO_DIR)
    return sorted(path for path in out.split("\0") if path)


def tracked_records_message(paths: list[str]) -> str:
    """What to do when rho's own records (``.rho/``) were committed to the repository."""
    return (
        f"rho's records are tracked by git ({_some(paths)}): they change with every mission "
        "and must not be committed; untrack them with 'git rm --cached -r .rho' and commit "
        "(rho keeps .rho/ out of git from then on)"
    )


def _status_paths(porcelain: str) -> list[str]:
    tokens = iter(porcelain.split("\0"))
    paths: list[str] = []
    for token in tokens:
        if len(token) > 3:
            paths.append(token[3:])
            if token[0] in "RC":
                next(tokens, None)  # a rename's or copy's source path
    return paths


def _refuse_checked_out(repo: GitRepo, mission: MissionDocument, target: str) -> None:
    for tree in repo.worktrees():
        if tree.branch == target:
            raise MergeRefusedError(
                f"branch {quote(target)} is checked out at {tree.path}; run "
                f"'rho mission merge {mission.id}' there"
            )


def _merged(repo: GitRepo, mission: MissionDocument, target: str, old: str, source: str) -> str:
    done = sum(1 for feature in mission.features if feature.status == "completed")
    message = (
        f"Merge rho mission {mission.id} into {target}\n\n"
        f"Branch '{mission.integration_branch}': {done} of {len(mission.features)} "
        f"feature(s) completed ({mission.status}).\n"
    )
    try:
        return repo.merge_commit(old, source, message, (target, mission.integration_branch))
    except MergeConflictError as exc:
        raise MergeRefusedError(
            f"merging {quote(mission.integration_branch)} into {quote(target)} conflicts in "
            f"{_some(exc.files)}; nothing was changed: merge it by hand with "
            f"'git merge {mission.integration_branch}'"
        ) from exc


# -- the move --------------------------------------------------------------------------------


def _move(
    repo: GitRepo, mission: MissionDocument, target: str, old: str, new: str, in_checkout: bool
) -> None:
    if not in_checkout:
        repo.move_branch(target, new, old, f"merge mission {mission.id}")
        return
    in_the_way = _untracked_in_the_way(repo, old, new)
    if in_the_way:
        raise MergeRefusedError(
            f"the merge would overwrite untracked files in your work tree ({_some(in_the_way)}); "
            f"move them away, then run 'rho mission merge {mission.id}' again"
        )
    args = ("merge", "--ff-only", "--no-overwrite-ignore", "--no-autostash", "--quiet", new)
    status, _, err = repo.run_status(*args)
    if status != 0:  # git checks the work tree again; it changes nothing when it refuses
        reason = next((line for line in err.splitlines() if line.strip()), f"exit {status}")
        raise MergeRefusedError(f"git refused to update your checkout: {reason.strip()}")


def _untracked_in_the_way(repo: GitRepo, old: str, new: str) -> list[str]:
    """Paths the merge adds where the work tree holds something untracked (or ignored)."""
    out = repo.run("diff", "--name-status", "--no-renames", "-z", old, new)
    tokens = out.split("\0")
    pairs = list(zip(tokens[0::2], tokens[1::2], strict=False))
    removed = {path for status, path in pairs if status == "D"}
    found = {_blocker(repo, path, removed) for status, path in pairs if status == "A"}
    return sorted(path for path in found if path is not None)


def _blocker(repo: GitRepo, path: str, removed: set[str]) -> str | None:
    parts = PurePosixPath(path).parts
    for end in range(1, len(parts) + 1):
        relative = "/".join(parts[:end])
        full = repo.root / relative
        if not os.path.lexists(full) or relative in removed:
            return None  # free, or a tracked file the merge takes away
        real_folder = full.is_dir() and not full.is_symlink()
        if end < len(parts) and real_folder:
            continue
        if end == len(parts) and real_folder and not _untracked_under(repo, relative):
            return None  # a folder of tracked files only, all of them removed by the merge
        return relative
    return None


def _untracked_under(repo: GitRepo, relative: str) -> bool:
    # Without --exclude-standard, ls-files --others lists ignored files too.
    out = repo.run("--literal-pathspecs", "ls-files", "--others", "-z", "--", relative)
    return bool(out)


def _changed(repo: GitRepo, old: str, new: str) -> list[str]:
    out = repo.run("diff", "--name-only", "--no-renames", "-z", old, new)
    return sorted(name for name in out.split("\0") if name)


def _some(paths: list[str]) -> str:
    more = f" and {len(paths) - _NAMED} more" if len(paths) > _NAMED else ""
    return ", ".join(paths[:_NAMED]) + more
