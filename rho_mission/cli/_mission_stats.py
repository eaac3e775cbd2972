"""``rho mission stats``: what integration cost across the missions of this repository, and how
well it went (``records._stats``: derived from each mission.json, never stored).

``_main`` adds the command to the ``rho mission`` group.

Decision: docs/decisions/0520-integration-stats.md
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

__all__ = ["stats", "stats_text"]


@click.command("stats")
@click.option(
    "--last",
    type=click.IntRange(min=1),
    metavar="N",
    help="Only the N newest missions [default: all of them].",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def stats(last: int | None, as_json: bool) -> int:
    """Sum the integration of this repository's missions: merges and conflicts (and how many
    landed without a person), check runs and failures, culprits, fixes, and per landed task
    the cost and the agent runs.

    Example: rho mission stats --last 10
    """
    from rho_mission import list_missions

    from ..records._stats import mission_stats, repository_stats

    found = list_missions(Path.cwd())[:last]
    each = [mission_stats(m.model_dump(mode="json")) for m in found]
    summed = repository_stats(each)
    summed["mission_ids"] = [m.id for m in found]
    if as_json:
        sys.stdout.write(json.dumps(summed, indent=2) + "\n")
        return 0
    sys.stdout.write(stats_text(summed))
    return 0


def stats_text(summed: Mapping[str, Any]) -> str:
    """The lines ``rho mission stats`` prints of *summed* (``records._stats.repository_stats``)."""
    from ..records._missionwords import dollars

    count = summed["missions"]
    if not count:
        return "no missions in this repository\n"
    conflicts, checks = summed["conflicts"], summed["checks"]
    outcomes = ", ".join(
        f"{conflicts[o]} {o}" for o in ("driver", "resolved", "replayed", "failed") if conflicts[o]
    )
    cost = summed["cost_per_landed"]
    lines = [
        f"{count} mission(s): {summed['merges']} merge(s), {summed['landed']} task(s) landed",
        f"conflicts: {conflicts['total']} ({_rate(summed['conflict_rate'])} of merges tried)"
        + (f": {outcomes}" if outcomes else ""),
        f"  landed without a person: {summed['conflicts_landed']}"
        f" ({_rate(summed['conflicts_landed_rate'])})",
        f"checks: {checks['runs']} run(s), {checks['failed']} failed"
        f" ({_rate(summed['check_failure_rate'])}), {checks['flaky']} flaky,"
        f" {checks['bisect']} for bisection; {summed['fixes']} fix run(s)",
        f"culprits: {summed['culprits']} ({_rate(summed['culprit_rate'])} of merges),"
        f" {summed['culprits_landed']} landed after replay",
        f"per landed task: {dollars(cost) if cost is not None else 'cost unknown'},"
        f" {_number(summed['agent_runs_per_landed'])} agent run(s)",
    ]
    return "\n".join(lines) + "\n"


def _rate(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:.0%}"


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"
