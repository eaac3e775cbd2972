"""``rho worktrees prune``: the repository's pool of worktrees that missions share.

Decision: docs/decisions/0601-worktree-pool.md
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..records._places import pool_folder
from ._errors import CliError
from ._paths import find_repo_root

if TYPE_CHECKING:
    from ..setup._listing import PooledWorktree

__all__ = ["list_shared_pool", "prune_shared_pool", "worktrees"]


@click.group()
def worktrees() -> None:
    """The worktrees missions keep for the next mission (<repo>/.rho/worktrees/pool).

    A mission gives its worktrees back to the pool when it ends, up to $RHO_WORKTREE_POOL
    (default 8; 0 keeps none), so that the next one does not check out every file again
    (and, with --setup, does not set it up again while its setup key holds).

    Example: rho worktrees list
    """


@worktrees.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def list_(as_json: bool) -> None:
    """List the pooled worktrees: who holds each, its setup key (and the one mission it
    serves, when it ran on that mission's tasks' work), its size and its last use.

    Example: rho worktrees list
    """
    list_shared_pool(as_json)


def list_shared_pool(as_json: bool) -> None:
    """Print the shared pool's worktrees (a table, or JSON).

    Raises:
        CliError: the working folder is in no git repository.
    """
    import json
    from dataclasses import asdict

    from ..git._repo import GitRepo
    from ..setup._listing import pool_listing
    from ._plain import columns, shown

    root = find_repo_root()
    if root is None:
        raise CliError(f"not a git repository: {Path.cwd()}")
    listed = pool_listing(GitRepo.open(root))
    if as_json:
        click.echo(json.dumps({"worktrees": [asdict(tree) for tree in listed]}, indent=2))
        return
    if not listed:
        click.echo("no pooled worktree")
        return
    rows = [
        [
            (shown(tree.name), None),
            (shown(tree.holder), None),
            (_setup_of(tree), None),
            (_size(tree.size), None),
            (tree.last_used or "-", None),
        ]
        for tree in listed
    ]
    for line in columns(["worktree", "held by", "setup key", "size", "last use"], rows):
        click.echo(line)


def _setup_of(tree: PooledWorktree) -> str:
    """The setup key, and the one mission the setup serves when it ran on tasks' work."""
    if tree.setup_key is None:
        return "-"
    if tree.setup_mission is None:
        return tree.setup_key
    return f"{tree.setup_key} (mission {tree.setup_mission} only)"


def _size(count: int) -> str:
    """*count* bytes for people: B, KiB, MiB or GiB."""
    if count < 1024:
        return f"{count} B"
    value = count / 1024
    for unit in ("KiB", "MiB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


@worktrees.command("prune")
def prune() -> None:
    """Remove every pooled worktree that no running mission holds.

    Example: rho worktrees prune
    """
    prune_shared_pool()


def prune_shared_pool() -> None:
    """Remove the pooled worktrees nobody holds and say how many went.

    Raises:
        CliError: the working folder is in no git repository.
    """
    from ..git._repo import GitRepo
    from ..git._shared_pool import prune_pool

    root = find_repo_root()
    if root is None:
        raise CliError(f"not a git repository: {Path.cwd()}")
    repo = GitRepo.open(root)
    folder = pool_folder(repo.root)
    if not folder.is_dir():
        click.echo("no pooled worktree")
        return
    removed = prune_pool(repo, folder, idle_too=True)
    from ..git._shared_pool import pooled_worktrees
    from ..setup import drop_orphan_states

    # The setups of worktrees no longer in the pool go with them.
    drop_orphan_states(repo.root, {path.name for path, _ in pooled_worktrees(repo, folder)})
    click.echo(f"removed {len(removed)} pooled worktree(s)")
