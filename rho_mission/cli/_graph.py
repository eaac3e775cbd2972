"""``rho graph export`` and ``rho cloud graph sync``: the portable graph from the command line."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ._errors import CliError
from ._paths import command_store_path

if TYPE_CHECKING:
    from graph import GraphDocument

__all__ = ["cloud", "graph"]

_FORMATS = ("json", "mermaid", "dot")


F = TypeVar("F", bound=Callable[..., Any])


def _source_options(command: F) -> F:
    command = click.option(
        "--store",
        "store_path",
        type=click.Path(dir_okay=False, path_type=Path),
        help="Project this task store (default: the repository's store).",
    )(command)
    return click.option(
        "--mission-dir",
        type=click.Path(path_type=Path),
        help="Read DIR/mission-graph.json of a mission.",
    )(command)


def load_source(mission_dir: Path | None, store_path: Path | None) -> GraphDocument:
    """The graph of a mission folder, or the projection of a task store.

    Raises:
        CliError: both sources given, or the store file does not exist.
        GraphError, TaskStoreError: the source cannot be read or is not valid.
    """
    if mission_dir is not None and store_path is not None:
        raise CliError("pass either --mission-dir or --store, not both")
    if mission_dir is not None:
        from graph import load_mission_graph

        return load_mission_graph(mission_dir)
    from rho_mission import task_store_graph
    from taskstore import TaskStore

    path = command_store_path(store_path)
    if not path.is_file():
        # Reading a missing store as empty suits `rho task`; exporting or uploading an empty
        # graph because of a typo does not.
        raise CliError(f"task store not found: {path}")
    return task_store_graph(TaskStore(path).tasks())


@click.group()
def graph() -> None:
    """The portable graph (rho.graph/v1) of a mission or a task store.

    Example: rho graph export --mission-dir .rho/missions/1a2b3c4d --format mermaid
    """


@graph.command("export")
@_source_options
@click.option("--format", "fmt", type=click.Choice(_FORMATS), default="json", show_default=True)
def export(mission_dir: Path | None, store_path: Path | None, fmt: str) -> None:
    """Print the graph as JSON, a Mermaid flowchart or Graphviz dot.

    Example: rho graph export --store .rho/tasks.json --format dot | dot -Tsvg > tasks.svg
    """
    from graph import dump_graph, render_dot, render_mermaid

    document = load_source(mission_dir, store_path)
    if fmt == "json":
        sys.stdout.write(dump_graph(document).decode())
    else:
        text = render_mermaid(document) if fmt == "mermaid" else render_dot(document)
        sys.stdout.write(text if text.endswith("\n") else text + "\n")


@click.group()
def cloud() -> None:
    """Explicit uploads to Rho Cloud; nothing is ever sent without one of these commands.

    Example: rho cloud graph sync --mission-dir .rho/missions/1a2b3c4d --endpoint URL --project P
    """


@cloud.group("graph")
def cloud_graph() -> None:
    """Upload a privacy-normalized graph.

    Example: rho cloud graph sync --store .rho/tasks.json --endpoint URL --project P
    """


@cloud_graph.command("sync")
@_source_options
@click.option("--endpoint", required=True, help="Base URL of Rho Cloud.")
@click.option("--project", "project_id", required=True, help="Project id on Rho Cloud.")
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="File holding the API token (default: $RHO_CLOUD_TOKEN).",
)
@click.option("--timeout", type=click.FloatRange(min=0.1, max=300), default=10.0, show_default=True)
def sync(
    mission_dir: Path | None,
    store_path: Path | None,
    endpoint: str,
    project_id: str,
    token_file: Path | None,
    timeout: float,
) -> None:
    """Prepare the graph (limits, digests for sensitive values) and upload it once.

    Example: RHO_CLOUD_TOKEN=... rho cloud graph sync --mission-dir DIR --endpoint URL --project P
    """
    from graph import prepare_for_cloud, sync_graph

    if not endpoint.startswith(("http://", "https://")):
        raise CliError(f"endpoint must be an http:// or https:// URL, not {endpoint!r}")
    token = _token(token_file)
    prepared = prepare_for_cloud(load_source(mission_dir, store_path))
    result = sync_graph(
        prepared, endpoint=endpoint, project_id=project_id, token=token, timeout=timeout
    )
    click.echo(result.message())


def _token(token_file: Path | None) -> str:
    if token_file is not None:
        try:
            token = token_file.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise CliError(f"read token file {token_file}: {exc.strerror or exc}") from exc
    else:
        token = os.environ.get("RHO_CLOUD_TOKEN", "").strip()
    if not token:
        raise CliError("no Rho Cloud token: set RHO_CLOUD_TOKEN or pass --token-file")
    return token
