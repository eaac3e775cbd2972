"""``rho worktrees prune``: the repository's pool of worktrees that missions share."""

from __future__ import annotations

from pathlib import Path

import click

from ..records._places import pool_folder
from ._errors import CliError
from ._paths import find_repo_root

__all__ = ["prune_shared_pool", "worktrees"]


@click.group()
def worktrees() -> None:
    """The worktrees missions keep for the next mission (<repo>/.rho/worktrees/pool).

    A mission gives its worktrees back to the pool when it ends, up to $RHO_WORKTREE_POOL
    (default 8; 0 keeps none), so that the next one does not check out every file again.

    Example: rho worktrees prune
    """


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
    from ..git._worktrees import prune_pool

    root = find_repo_root()
    if root is None:
        raise CliError(f"not a git repository: {Path.cwd()}")
    repo = GitRepo.open(root)
    folder = pool_folder(repo.root)
    if not folder.is_dir():
        click.echo("no pooled worktree")
        return
    removed = prune_pool(repo, folder, idle_too=True)
    click.echo(f"removed {len(removed)} pooled worktree(s)")
