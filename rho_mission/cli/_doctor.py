"""``rho doctor``: what containment this machine gives a mission's tasks.

Decision: docs/decisions/0705-sandbox.md
"""

from __future__ import annotations

import click

__all__ = ["doctor"]


@click.command()
def doctor() -> None:
    """Say what keeps a task in on this machine: its supervisor, rho as subreaper, a cgroup
    per task (or why none), and whether --sandbox can run.

    Example: rho doctor
    """
    for name, fact in containment_facts():
        click.echo(f"{name}: {fact}")


def containment_facts() -> list[tuple[str, str]]:
    """(what, how it stands here), in the order ``rho doctor`` prints them."""
    from .._errors import InvalidMissionError
    from ..containment import require_bwrap
    from ..containment._cgroup import cgroup_support

    try:
        require_bwrap()
        sandbox = "available (bubblewrap)"
    except InvalidMissionError as exc:
        sandbox = f"not available: {exc}"
    return [
        ("supervisor", "one per task, the child subreaper of all the task starts"),
        ("orphans", "rho is the child subreaper above every supervisor"),
        ("cgroups", cgroup_support()),
        ("sandbox", sandbox),
    ]
