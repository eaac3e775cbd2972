"""``rho agents``: the agents rho knows by name (``--agent NAME``), as one table.

Decision: docs/decisions/0511-agent-profiles.md
"""

from __future__ import annotations

import json
import sys

import click

__all__ = ["agents"]


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def agents(as_json: bool) -> None:
    """List the agent profiles: each one's command line (outside --sandbox, and inside where it
    differs), whether its program is on PATH, what its --version says and whether the tests
    covered that version, its default --task-timeout, the flag that makes its output
    machine-readable, whether it reports a cost or tokens only, and the folders of its own it
    writes (a private copy per task under --sandbox).

    Example: rho mission --from-tasks --agent claude --budget-usd 5
    """
    from ..agents import COVERED, PROFILES, agent_status

    found = [agent_status(profile) for profile in PROFILES.values()]
    if as_json:
        rows = [
            {
                "name": status.profile.name,
                "command": status.profile.line(sandbox=False),
                "sandboxed_command": status.profile.line(sandbox=True),
                "task_timeout": status.profile.task_timeout,
                "home": [home.path for home in status.profile.home],
                "covered_versions": list(COVERED.get(status.profile.name, ())),
                "version_covered": status.covered,
                "output_flag": status.profile.output_flag,
                "reports": status.profile.reports,
                "budget_flag": status.profile.budget_flag,
                "path": status.path,
                "version": status.version,
            }
            for status in found
        ]
        sys.stdout.write(json.dumps({"agents": rows}, indent=2) + "\n")
        return
    for status in found:
        profile = status.profile
        where = status.path or "not on PATH"
        version = f" ({status.version}{_coverage(status.covered, profile.name)})"
        click.echo(f"{profile.name}: {where}{version if status.version else ''}")
        click.echo(f"  command: {profile.line(sandbox=False)}")
        if profile.sandboxed is not None:
            click.echo(f"  sandbox: {profile.line(sandbox=True)}")
        click.echo(f"  limit:   {profile.task_timeout:g}s a task, unless --task-timeout says")
        if profile.home:
            homes = ", ".join(f"~/{home.path}" for home in profile.home)
            click.echo(f"  writes:  {homes} (under --sandbox: a private copy per task)")
        click.echo(f"  output:  {profile.output_flag}; reports {profile.reports}")
        if profile.budget_flag:
            click.echo(f"  budget:  what is left of --budget-usd, as {profile.budget_flag}")


def _coverage(covered: bool | None, name: str) -> str:
    from ..agents import COVERED

    tested = ", ".join(COVERED.get(name, ())) or "none"
    if covered is None:
        return f"; tested: {tested}"
    return "; tested" if covered else f"; not a version the tests ran: {tested}"
