"""``rho agents``: the agents rho knows by name (``--agent NAME``), as one table."""

from __future__ import annotations

import json
import sys

import click

__all__ = ["agents"]


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def agents(as_json: bool) -> None:
    """List the agent profiles: each one's command line, whether its program is on PATH and
    what its --version says, the flag that makes its output machine-readable, and whether it
    reports a cost or tokens only.

    Example: rho mission --from-tasks --agent claude --budget-usd 5
    """
    from ..agents import PROFILES, agent_status

    found = [agent_status(profile) for profile in PROFILES.values()]
    if as_json:
        rows = [
            {
                "name": status.profile.name,
                "command": status.profile.command,
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
        version = f" ({status.version})" if status.version else ""
        click.echo(f"{profile.name}: {where}{version}")
        click.echo(f"  command: {profile.command}")
        click.echo(f"  output:  {profile.output_flag}; reports {profile.reports}")
        if profile.budget_flag:
            click.echo(f"  budget:  what is left of --budget-usd, as {profile.budget_flag}")
