"""``rho mission clean``: take back what a mission holds in the repository.

A mission leaves behind its branches (``rho-mission/<id>/...``), perhaps worktrees under
``<repo>/.rho/worktrees/<id>`` (kept ones, or those of a crashed run), processes a crash
orphaned, leases in the task store, and its folder. ``clean_mission`` checks everything first and
refuses, having changed nothing, when:

- the mission runs (its run lock is then held by this process for the whole clean, so no run of
  it can start meanwhile);
- a symbolic link stands where rho would delete (``.rho/worktrees/<id>``, a registered worktree,
  the folder to purge): nothing is ever removed through a link;
- a branch of the mission is checked out in a work tree that is not the mission's own;
- the integration branch holds commits that no local branch outside the mission has (the
  mission's work, not merged yet), unless forced.

Then it ends the mission's processes, removes its worktrees, deletes its branches (each one
noted in the journal first, then ``git update-ref -d REF OLD``: a compare-and-swap), releases its
leases and, when asked, deletes its folder.

Decision: docs/decisions/0508-mission-commands.md
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from filelock import Timeout

from taskstore import TaskStore, TaskStoreError

from .._errors import (
    CleanRefusedError,
    MissionRunningError,
    RefMovedError,
    UnsafePathError,
    quote,
)
from ..containment._folders import check_own_folder, folder_anchor, remove_tree
from ..containment._mission_processes import end_mission_processes
from ..engine._leases import LEASE_KEY, release_tasks
from ..git._refs import RefHistory, mission_ref_prefix
from ..git._repo import GitRepo
from ..git._runlock import run_lock
from ..git._shared_pool import drop_pooled, held_by
from ..records._clock import now_rfc3339_millis
from ..records._document import MergeRecord, MissionDocument
from ..records._journal import Journal
from ..records._persist import save_mission
from ..records._places import mission_worktrees, pool_folder
from ._mission import Mission, list_missions

__all__ = [
    "FINISHED_STATUSES",
    "CleanRefusedError",
    "CleanReport",
    "MissionRunningError",
    "clean_mission",
    "finished_missions",
    "idle_mission",
    "integration_unmerged",
]

#: The statuses of a mission that ended (``clean --finished`` takes these).
FINISHED_STATUSES = ("completed", "failed", "partial", "cancelled")


@dataclass
class CleanReport:
    """What ``clean_mission`` removed: process ids, worktree paths, branches and their commits."""

    mission_id: str
    processes: list[int] = field(default_factory=list)
    worktrees: list[Path] = field(default_factory=list)
    branches: dict[str, str] = field(default_factory=dict)
    leases: Path | None = None  # the task store whose leases of the mission were released
    folder: Path | None = None  # the mission folder, when purged
    problems: list[str] = field(default_factory=list)
    # The branches deleted on the remote a Dask run pushed them to (``config.remote``).
    remote_branches: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Plan:
    folder: Path  # <repo>/.rho/worktrees/<id>
    worktrees: list[Path]
    refs: dict[str, str]
    pooled: list[Path]  # worktrees of the shared pool a crashed run of it still held


@contextmanager
def idle_mission(repo: GitRepo, mission_id: str) -> Iterator[None]:
    """Hold the run lock of *mission_id* for the block, so that no run of it starts meanwhile.

    Raises:
        MissionRunningError: a process runs the mission (it holds the lock).
    """
    lock = run_lock(repo, mission_id)
    try:
        lock.acquire(timeout=0)
    except Timeout as exc:
        raise MissionRunningError(
            f"mission {mission_id} is running; wait for it to end (or cancel it) first"
        ) from exc
    try:
        yield
    finally:
        lock.release()


def clean_mission(
    mission: MissionDocument, *, force: bool = False, purge: bool = False
) -> CleanReport:
    """End the processes of *mission*, remove its worktrees, delete its branches and leases.

    With *purge*, delete its folder too. With *force*, an integration branch holding unmerged
    work is deleted as well. Blocking (it waits for processes to end): call it from a thread in
    async code.

    Raises:
        MissionRunningError: the mission runs.
        CleanRefusedError: unmerged work (without *force*), or a branch of the mission checked
            out in a work tree of the user's; nothing was removed.
        UnsafePathError: a symbolic link stands where rho would delete; nothing was removed.
        RefMovedError: a branch moved while rho deleted it; it was kept.
        NotAGitRepositoryError: the mission's repository is gone.
    """
    repo = GitRepo.open(Path(mission.repo))
    report = CleanReport(mission.id)
    with idle_mission(repo, mission.id):
        with repo.locked():
            _plan(repo, mission, force=force, purge=purge)  # every refusal before any change
        report.processes = anyio.run(end_mission_processes, mission.id, mission.config.grace_period)
        with repo.locked():
            plan = _plan(repo, mission, force=force, purge=purge)
            report.worktrees = _remove_worktrees(repo, plan)
            report.branches = _delete_branches(repo, mission, plan.refs)
        report.leases = _release_leases(mission, report.problems)
        report.remote_branches = _delete_remote_branches(repo, mission, report.problems)
        if purge:
            remove_tree(Path(mission.dir))
            report.folder = Path(mission.dir)
        else:  # under the run lock, like a run: the list says it was cleaned
            mission.cleaned_at = now_rfc3339_millis()
            save_mission(mission)
    return report


def _delete_remote_branches(
    repo: GitRepo, mission: MissionDocument, problems: list[str]
) -> list[str]:
    """Delete the mission's branches on the remote a Dask run pushed them to; a remote that
    cannot be reached is a problem to report, not a refusal (the local clean is done)."""
    remote = mission.config.remote
    if not remote:
        return []
    prefix = f"refs/heads/{mission_ref_prefix(mission.id)}"
    status, out, err = repo.run_status("ls-remote", "--heads", remote, f"{prefix}*")
    if status != 0:
        problems.append(f"the remote {remote} could not be reached: {_last_line(err)}")
        return []
    refs = sorted(line.split("\t", 1)[1] for line in out.splitlines() if "\t" in line)
    if not refs:
        return []
    status, _, err = repo.run_status("push", "--quiet", remote, *(f":{ref}" for ref in refs))
    if status != 0:
        problems.append(f"the branches on {remote} could not be deleted: {_last_line(err)}")
        return []
    return [ref.removeprefix("refs/heads/") for ref in refs]


def _last_line(text: str) -> str:
    return (text.strip().splitlines() or ["no answer"])[-1]


def finished_missions(repo: str | Path) -> list[Mission]:
    """The missions of the repository holding *repo* whose status says they ended, newest first.

    Raises:
        NotAGitRepositoryError: *repo* lies in no git work tree.
    """
    return [m for m in list_missions(repo) if m.status in FINISHED_STATUSES]


def integration_unmerged(repo: GitRepo, mission_id: str, head: str) -> bool:
    """Whether commit *head* holds commits that no local branch outside the mission holds."""
    prefix = mission_ref_prefix(mission_id)
    out = repo.run("rev-list", "--max-count=1", head, "--not", f"--exclude={prefix}*", "--branches")
    return bool(out.strip())


# -- checks ----------------------------------------------------------------------------------


def _plan(repo: GitRepo, mission: MissionDocument, *, force: bool, purge: bool) -> _Plan:
    folder = mission_worktrees(repo.root, mission.id)
    check_own_folder(folder, repo.root)
    trees = [Path(t.path) for t in repo.worktrees() if _below(t.path, folder)]
    for path in trees:
        if os.path.islink(path):
            raise UnsafePathError(path, "is a symbolic link")
    pooled = held_by(repo, pool_folder(repo.root), mission.id)
    refs = repo.refs_under(mission_ref_prefix(mission.id))
    _refuse_checked_out(repo, mission, refs, folder, pooled)
    if not force:
        _refuse_unmerged(repo, mission, refs.get(mission.integration_branch))
    if purge:
        _check_purge(repo, Path(os.path.abspath(mission.dir)))
    return _Plan(folder, sorted(trees), refs, pooled)


def _below(path: Path, folder: Path) -> bool:
    here = Path(os.path.abspath(path))
    return here != folder and here.is_relative_to(folder)


def _refuse_checked_out(
    repo: GitRepo, mission: MissionDocument, refs: dict[str, str], folder: Path, pooled: list[Path]
) -> None:
    for tree in repo.worktrees():
        ours = _below(tree.path, folder) or Path(os.path.abspath(tree.path)) in pooled
        if tree.branch in refs and not ours:
            raise CleanRefusedError(
                f"branch {quote(tree.branch)} of mission {mission.id} is checked out at "
                f"{tree.path}; switch that work tree to another branch first"
            )


def _refuse_unmerged(repo: GitRepo, mission: MissionDocument, head: str | None) -> None:
    if head is None or not integration_unmerged(repo, mission.id, head):
        return
    last = mission.merges[-1] if mission.merges else None
    # Merged by a squash or a subset: what it left out (the history, the other tasks' work)
    # was the user's choice. Merged while the branch is as it was then and a branch of the
    # user's still holds what the merge made.
    if (
        last is not None
        and last.integration_head == head
        and not integration_unmerged(repo, mission.id, last.commit)
    ):
        return
    raise CleanRefusedError(
        f"the integration branch {quote(mission.integration_branch)} holds work that no other "
        f"branch has; merge it first with '{_merge_advice(mission, last)}', or pass --force "
        "to delete it"
    )


def _merge_advice(mission: MissionDocument, last: MergeRecord | None) -> str:
    """The merge to suggest: the way the last one was made, so that a merge that left work
    out (``--squash``, ``--only``) is never undone by the advice."""
    command = f"rho mission merge {mission.id}"
    if last is None:
        return command
    into = f" --into {last.into}"
    if last.only:
        taken = ", ".join(last.only)
        return f"{command}{into} --only TASK (the tasks you want; the last merge took {taken})"
    return f"{command}{into}" + (" --squash" if last.squash else "")


def _check_purge(repo: GitRepo, folder: Path) -> None:
    if repo.root.is_relative_to(folder):
        raise CleanRefusedError(f"refusing to delete {folder}: it holds the repository")
    check_own_folder(folder, folder_anchor(folder, repo.root))


# -- changes ---------------------------------------------------------------------------------


def _remove_worktrees(repo: GitRepo, plan: _Plan) -> list[Path]:
    for path in plan.worktrees:
        # Locked by the run that made it (and double --force for its changes and the lock).
        repo.run_status("worktree", "unlock", str(path))
        status, _, _ = repo.run_status("worktree", "remove", "--force", "--force", str(path))
        if status != 0 and os.path.lexists(path) and not os.path.islink(path):
            remove_tree(path)
    if plan.worktrees:
        repo.run("worktree", "prune")
    removed = plan.worktrees + drop_pooled(repo, plan.pooled) + _remove_leftovers(plan.folder)
    with suppress(OSError):  # missing, or not empty: someone else's files, left alone
        plan.folder.rmdir()
    return sorted(removed)


def _remove_leftovers(folder: Path) -> list[Path]:
    """Delete what git no longer knows under *folder*; a link is removed, never followed."""
    if not folder.is_dir():
        return []
    leftovers = sorted(folder.iterdir())
    for child in leftovers:
        remove_tree(child)  # removes links inside, never their targets
    return leftovers


def _delete_branches(
    repo: GitRepo, mission: MissionDocument, refs: dict[str, str]
) -> dict[str, str]:
    history = RefHistory(Journal(Path(mission.dir) / "journal.jsonl"))
    # The integration branch last: a failure on the way keeps the mission's merged work.
    order = sorted(refs, key=lambda name: (name == mission.integration_branch, name))
    deleted: dict[str, str] = {}
    for name in order:
        old = refs[name]
        history.note(name, old, "delete")
        ref = f"refs/heads/{name}"
        status, _, _ = repo.run_status("update-ref", "-m", "rho-mission: clean", "-d", ref, old)
        if status != 0:
            found = repo.branch_commit(name)
            raise RefMovedError(
                name,
                f"moved while rho was deleting it (expected {old[:12]}, found "
                f"{found[:12] if found else 'no branch'}); it was kept",
            )
        deleted[name] = old
    return deleted


def _release_leases(mission: MissionDocument, problems: list[str]) -> Path | None:
    """Drop the mission's leases in its task store (an interrupted mission keeps them)."""
    if not mission.config.task_store:
        return None
    store = TaskStore(Path(mission.config.task_store))
    try:
        if not any(t.metadata.get(LEASE_KEY) == mission.id for t in store.load().tasks):
            return None
        release_tasks(store, mission.id)
    except TaskStoreError as exc:
        problems.append(f"task store leases not released: {exc}")
        return None
    return store.path
