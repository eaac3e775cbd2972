"""``rho mcp``: serve the task store and the missions to an agent as MCP tools, over stdio.

A thin shell: resolve the store and the repository, then hand stdin and stdout to the server
(``rho_mission.mcp_server``). The SDK is imported only when the command runs.

Decision: docs/decisions/0803-mcp.md
"""

from __future__ import annotations

from pathlib import Path

import click

from ._errors import CliError
from ._paths import command_store_path, find_repo_root

__all__ = ["mcp"]


@click.command("mcp")
@click.option(
    "--tools",
    "which",
    type=click.Choice(["core", "all"]),
    default="core",
    show_default=True,
    help="core: TaskList, TaskGet, TaskCreate, TaskUpdate; all: and MissionList, MissionShow, "
    "MissionLog.",
)
@click.option("--read-only", is_flag=True, help="Offer no tool that changes the task store.")
@click.option("--store", "store_path", type=click.Path(dir_okay=False, path_type=Path))
def mcp(which: str, read_only: bool, store_path: Path | None) -> None:
    """Serve the task store (and missions) as MCP tools over stdio, for a coding agent.

    Register it once: 'claude mcp add rho -- rho mcp' (Claude Code), or in Codex's
    ~/.codex/config.toml: [mcp_servers.rho] command = "rho", args = ["mcp"]. Each write takes
    the store's lock, as 'rho task' does.

    Example: rho mcp --tools all --read-only
    """
    try:
        from rho_mission.mcp_server import CORE_TOOLS, TOOLS, serve
    except ImportError as exc:  # pragma: no cover - the SDK is a dependency; a broken install
        raise CliError(f"rho mcp needs the 'mcp' package: {exc}") from exc
    from ..git._exclude import exclude_rho_of_store

    store = command_store_path(store_path)
    if not read_only:
        exclude_rho_of_store(store)  # the server's writes are rho's writes in the repository
    serve(
        store, find_repo_root(), names=TOOLS if which == "all" else CORE_TOOLS, read_only=read_only
    )
