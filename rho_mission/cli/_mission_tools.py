"""``rho mission log``, ``diff``, ``merge`` and ``clean``: the user's loop after a run.

A run fails, ``log`` shows why; after a fix ``resume`` runs the rest; ``diff`` shows the work
(whole, or one task's); ``merge`` brings it into the user's branch (whole, some tasks, or
squashed); ``clean`` takes back the mission's branches and worktrees. Every command
names its mission as a folder, an id, a unique id prefix or ``latest``
(``rho_mission.mission._names``).

``_main`` adds these commands to the ``rho mission`` group (none joins it by being imported).

Decision: docs/decisions/0508-mission-commands.md
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ._errors import CliError
from ._mission_names import load_mission, mission_folder, next_commands
from ._plain import shown

if TYPE_CHECKING:
    from ..mission._cleanup import CleanReport
    from ..mission._conflicts import Overlap
    from ..mission._merge import MergeOutcome
    from ..mission._mission import Mission
    from ..records._document import Feature

__all__ = [
    "clean",
    "conflicts",
    "diff",
    "load_mission",
    "log",
    "merge",
    "mission_folder",
    "next_commands",
]

# Tasks an "unknown task" error names; the rest are counted.
_NAMED_TASKS = 10


# -- log -------------------------------------------------------------------------------------


@click.command("log")
@click.argument("name", metavar="MISSION")
@click.argument("task")
@click.option(
    "--follow", "-f", is_flag=True, help="Keep printing while the mission runs, until TASK ends."
)
def log(name: str, task: str, follow: bool) -> int:
    """Print the log of one task of a mission (its output, every attempt), then its resolve
    stage's when its merge conflicted and a resolver ran (--resolve).

    MISSION is a folder, a mission id, a unique prefix of one, or 'latest'. TASK may also be
    verify-N or fix-N: the checks (--verify) and fixes of wave N; verify-N-K: the Kth run of
    wave N's checks when a bisection looked for the tasks that broke them.

    Example: rho mission log latest task_4 --follow
    """
    from ..mission._mission import mission_is_running
    from ._logs import (
        conflict_advice,
        follow_log,
        log_path,
        print_log,
        print_stage_log,
        printed_nothing,
        stage_wave,
    )

    target = load_mission(name)
    if stage_wave(task) is not None:  # verify-<wave>[-<n>], fix-<wave>: a join's stages
        print_stage_log(target, task, follow)
        return 0
    feature = _feature(target, task)
    if follow and mission_is_running(target):
        follow_log(target, feature.id)
    elif not print_log(log_path(target, feature.id)):
        why = "it has not run yet" if feature.status == "pending" else "its worker wrote none"
        raise CliError(f"task {feature.id} of mission {target.id} has no log: {why}")
    elif printed_nothing(log_path(target, feature.id)):
        ended = f": {shown(feature.error)}" if feature.error else f"; it is {feature.status}"
        click.echo(f"(task {feature.id} printed nothing{ended})")
    advice = conflict_advice(target, feature.id)
    if advice is not None:
        click.echo(advice.strip())
    if not follow:
        _print_resolve_log(target, feature.id)
    return 0


def _print_resolve_log(target: Mission, feature_id: str) -> None:
    from ..records._places import stage_log_found
    from ._logs import print_log

    features = {feature.id for feature in target.features}
    path = stage_log_found(target.dir, "resolve", feature_id, features)
    if path.exists():
        click.echo(f"== the resolve stage of {feature_id}: {shown(str(path))} ==")
        print_log(path)


def _feature(target: Mission, task: str) -> Feature:
    from rho_mission._errors import quote

    try:
        return target.feature(task)
    except KeyError:
        pass
    ids = [f.id for f in target.features]
    more = f" and {len(ids) - _NAMED_TASKS} more" if len(ids) > _NAMED_TASKS else ""
    listed = ", ".join(ids[:_NAMED_TASKS]) + more if ids else "none"
    raise CliError(f"mission {target.id} has no task {quote(task)}; its tasks: {listed}")


# -- conflicts -------------------------------------------------------------------------------


@click.command("conflicts")
@click.argument("name", metavar="MISSION")
@click.option("--into", metavar="BRANCH", help="Compare with BRANCH instead of the current one.")
@click.option("--json", "as_json", is_flag=True, help="Print the overlaps as JSON.")
def conflicts(name: str, into: str | None, as_json: bool) -> int:
    """List where the work of a mission's tasks would conflict: each pair of tasks, and each
    task against your current branch (or --into BRANCH). Nothing changes: git computes every
    merge without a worktree.

    MISSION is a folder, a mission id, a unique prefix of one, or 'latest'.

    Example: rho mission conflicts latest
    """
    import json

    from ..git._repo import GitRepo
    from ..mission._conflicts import at_join, described, overlapping_work
    from ..mission._merge import current_branch

    target = load_mission(name)
    repo = GitRepo.open(target.repo)
    branch = into or current_branch(repo)
    sides, found = overlapping_work(target, repo, branch)
    if as_json:
        document = {"mission": target.id, "branch": branch, "conflicts": described(target, found)}
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
        return 0
    tasks = sum(1 for side in sides if not side.is_branch)
    against = f" and {branch}" if branch else ""
    if not found:
        click.echo(f"mission {target.id}: no overlapping work between {tasks} task(s){against}")
        return 0
    outcomes = [at_join(target, overlap) for overlap in found]
    head = f"mission {target.id}: {len(found)} overlap(s) between {tasks} task(s){against}"
    click.echo(shown(head + _overlaps_said(found, outcomes, branch)))
    for overlap, outcome in zip(found, outcomes, strict=True):
        # The paths are a task's names for its files: shown, never obeyed by the terminal.
        pair = f"{overlap.one.name} and {overlap.other.name}: {', '.join(overlap.paths)}"
        click.echo(shown(pair + (f" ({outcome} at its join)" if outcome else "")))
    return 0


def _overlaps_said(found: list[Overlap], outcomes: list[str | None], branch: str | None) -> str:
    """``: 140 resolved at their joins, 2 failed; none with main``: what came of them."""
    counts = Counter(outcome for outcome in outcomes if outcome)
    said = [f"{counts[o]} {o}" for o in ("resolved", "replayed", "failed") if counts[o]]
    words = f": {', '.join(said)} at their joins" if said else ""
    if branch:
        with_branch = sum(1 for overlap in found if overlap.other.is_branch)
        words += f"{';' if words else ':'} {with_branch or 'none'} with {branch}"
    return words


# -- merge -----------------------------------------------------------------------------------


@click.command("merge")
@click.argument("name", metavar="MISSION")
@click.option("--into", metavar="BRANCH", help="Merge into BRANCH instead of the current one.")
@click.option(
    "--only",
    "only",
    multiple=True,
    metavar="TASK",
    help="Merge just these tasks' work, as merged in the mission (repeatable, or a,b).",
)
@click.option("--squash", is_flag=True, help="One commit on your branch, without the history.")
def merge(name: str, into: str | None, only: tuple[str, ...], squash: bool) -> int:
    """Bring a mission's integration branch into your current branch (or --into BRANCH).

    Fast-forwards when it can, else makes a merge commit (--squash: one plain commit). A dirty
    work tree, untracked files in the way, a detached HEAD, a conflict or a running mission are
    refused, and nothing is changed. --only merges some tasks, refused when one needs the work
    of a task left out. --into a branch that is not checked out moves only that branch. This is
    the one rho command that touches your checkout. Review first with 'rho mission diff'.

    MISSION is a folder, a mission id, a unique prefix of one, or 'latest'.

    Example: rho mission merge latest --only task_3 --squash
    """
    from ..mission._merge import merge_mission
    from ._mission import split_ids

    target = load_mission(name)
    outcome = merge_mission(target, Path.cwd(), into, only=split_ids(only), squash=squash)
    for line in _merge_lines(target, outcome):
        click.echo(line)
    return 0


def _merge_lines(target: Mission, outcome: MergeOutcome) -> list[str]:
    branch, ident = outcome.branch, target.id
    if outcome.kind == "up to date":
        return [f"{branch} already holds the work of mission {ident}: nothing to merge"]
    what = (
        f"fast-forward {outcome.old[:12]}..{outcome.new[:12]}"
        if outcome.kind == "fast-forward"
        else f"{outcome.kind} {outcome.new[:12]}"
    )
    lines = [
        f"merged mission {ident} into {branch}: {what}, "
        f"{len(outcome.files_changed)} file(s) changed"
    ]
    with_work = {f.id for f in target.features if f.work_commit is not None}
    left = sorted(with_work - set(outcome.tasks))
    if left:
        lines.append(f"not merged: {', '.join(left)} (merge them later, or drop them with clean)")
        return [*lines, f"next: rho mission merge {ident}"]
    if target.status != "completed":
        lines.append(
            f"note: mission {ident} is {target.status}: this is the work of its completed tasks"
        )
    lines.append(f"next: rho mission clean {ident}")
    return lines


# -- diff ------------------------------------------------------------------------------------


@click.command("diff")
@click.argument("name", metavar="MISSION")
@click.argument("task", required=False)
@click.option("--stat", is_flag=True, help="Files and counts of lines only.")
def diff(name: str, task: str | None, stat: bool) -> int:
    """Show what a mission changed: its integration branch against its base, or one TASK's
    work as it was merged there. Nothing is changed.

    MISSION is a folder, a mission id, a unique prefix of one, or 'latest'.

    Example: rho mission diff latest task_2 --stat
    """
    from rho_mission._errors import quote

    from ..git._repo import GitRepo
    from ..mission._pick import task_step

    target = load_mission(name)
    repo = GitRepo.open(Path(target.repo))
    head = repo.branch_commit(target.integration_branch)
    if head is None:
        raise CliError(
            f"mission {target.id} has no integration branch "
            f"{quote(target.integration_branch)} (never ran, or cleaned): nothing to show"
        )
    before, after = target.base_commit, head
    if task is not None:
        step = task_step(repo, target, head, task)
        before, after = step.before, step.after
    options = ["--stat"] if stat else []
    sys.stdout.write(repo.run("diff", "--no-color", *options, before, after, "--"))
    return 0


# -- clean -----------------------------------------------------------------------------------


@click.command("clean")
@click.argument("name", metavar="[MISSION]", required=False)
@click.option("--finished", is_flag=True, help="Clean every mission that has ended.")
@click.option("--purge", is_flag=True, help="Delete the mission folder too.")
@click.option("--force", is_flag=True, help="Delete an integration branch that is not merged.")
@click.option(
    "--verbose",
    "-v",
    is_flag=True,
    help="List each branch, worktree and process, not only the sums.",
)
def clean(name: str | None, finished: bool, purge: bool, force: bool, verbose: bool) -> int:
    """Delete a mission's branches and worktrees, and end its leftover processes.

    A running mission is refused; so is one whose integration branch holds work no other
    branch has (merge it first, or pass --force). --purge deletes its folder too. --finished
    cleans every completed, failed, partial or cancelled mission, skipping (with a line each)
    those it must refuse, and then removes the repository's pooled worktrees that no running
    mission holds (as 'rho worktrees prune' does). Each mission gets one line saying what was
    removed; --verbose lists each branch, worktree and process first.

    MISSION is a folder, a mission id, a unique prefix of one, or 'latest'.

    Example: rho mission clean latest --purge
    """
    from ..mission._cleanup import clean_mission

    if (name is None) == (not finished):
        raise click.UsageError("name one MISSION, or pass --finished (not both)")
    if name is not None:
        _print_clean(clean_mission(load_mission(name), force=force, purge=purge), verbose)
        return 0
    return _clean_finished(force=force, purge=purge, verbose=verbose)


def _clean_finished(*, force: bool, purge: bool, verbose: bool) -> int:
    from ..mission._cleanup import (
        CleanRefusedError,
        MissionRunningError,
        clean_mission,
        finished_missions,
    )

    found = finished_missions(Path.cwd())
    if not found:
        click.echo("no finished mission to clean")
    for target in found:
        try:
            report = clean_mission(target, force=force, purge=purge)
        except (CleanRefusedError, MissionRunningError) as exc:
            click.echo(f"skipped mission {target.id}: {exc}")
            continue
        _print_clean(report, verbose)
    from ._worktrees import prune_shared_pool

    prune_shared_pool()
    return 0


def _print_clean(report: CleanReport, verbose: bool) -> None:
    if verbose:
        _print_clean_items(report)
    for problem in report.problems:
        click.echo(f"warning: {shown(problem)}", err=True)
    click.echo(_clean_summary(report))


def _print_clean_items(report: CleanReport) -> None:
    for pid in report.processes:
        click.echo(f"ended process {pid}")
    for path in report.worktrees:
        click.echo(f"removed worktree {path}")
    for branch, commit in report.branches.items():
        click.echo(f"deleted branch {branch} (was {commit[:12]})")
    for branch in report.remote_branches:
        click.echo(f"deleted branch {branch} on the remote of its Dask run")
    if report.leases is not None:
        click.echo(f"released the mission's task leases in {report.leases}")
    if report.folder is not None:
        click.echo(f"removed folder {report.folder}")


def _clean_summary(report: CleanReport) -> str:
    """``cleaned mission ID: 12 branch(es) deleted, ...``: what one clean removed, one line."""
    parts = [
        f"{count} {what}"
        for count, what in (
            (len(report.branches), "branch(es) deleted"),
            (len(report.remote_branches), "branch(es) deleted on the remote of its Dask run"),
            (len(report.worktrees), "worktree(s) removed"),
            (len(report.processes), "leftover process(es) ended"),
        )
        if count
    ]
    if report.leases is not None:
        parts.append("its task leases released")
    if report.folder is not None:
        parts.append(f"its folder {report.folder} removed")
    removed = report.processes or report.worktrees or report.branches or report.folder
    if not removed:
        return f"mission {report.mission_id}: nothing to clean"
    return f"cleaned mission {report.mission_id}: {', '.join(parts)}"
