"""``rho graph export`` and ``rho cloud ...``: the portable graph and Rho Cloud, from the CLI.

Both sources (a mission folder, a task store) are scoped to a repository: ``--repository`` or,
by default, the basename of the repository folder the graph comes from. ``rho cloud login`` and
``rho cloud connect`` keep an endpoint, a token and a project id in ``<repo>/.rho/cloud.json``
(see ``graph.cloud._settings``), so that ``rho cloud graph sync`` needs no flag; flags still win.

Decision: docs/decisions/0201-portable-graph.md, docs/decisions/0301-cloud-settings.md
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ..records._places import RHO_PATTERN
from ._errors import CliError
from ._paths import command_store_path, find_repo_root

if TYPE_CHECKING:
    from graph import GraphDocument
    from graph.cloud import CloudSettings, PreparedGraph

__all__ = ["cloud", "graph"]

_FORMATS = ("json", "mermaid", "dot")
_TOKEN_ENV = "RHO_CLOUD_TOKEN"
# A token is at most 8,192 characters; a file or a pipe this large is not a token.
_MAX_TOKEN_INPUT = 64 * 1024


F = TypeVar("F", bound=Callable[..., Any])


def _source_options(command: F) -> F:
    command = click.option(
        "--repository",
        metavar="SCOPE",
        help="Repository id of the graph's scope (default: the repository folder's basename).",
    )(command)
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


def load_source(
    mission_dir: Path | None, store_path: Path | None, repository: str | None = None
) -> GraphDocument:
    """The graph of a mission folder, or the projection of the command's task store, scoped to
    a repository (see ``mission._graphsource``).

    Raises:
        CliError: both sources given, or the store file does not exist.
        GraphError, TaskStoreError: the source cannot be read or is not valid, or *repository*
            is not a usable id.
    """
    from ..mission._graphsource import (
        StoreNotFoundError,
        mission_source_graph,
        store_source_graph,
    )

    if mission_dir is not None and store_path is not None:
        raise CliError("pass either --mission-dir or --store, not both")
    if mission_dir is not None:
        return mission_source_graph(mission_dir, repository)
    if repository is not None:
        from graph import check_repository_id

        check_repository_id(repository)  # before the store is looked for, as before
    try:
        return store_source_graph(command_store_path(store_path, reading=True), repository)
    except StoreNotFoundError as exc:
        raise CliError(str(exc)) from exc


@click.group()
def graph() -> None:
    """The portable graph (rho.graph/v1) of a mission or a task store.

    Example: rho graph export --mission-dir .rho/missions/1a2b3c4d
    """


@graph.command("export")
@_source_options
@click.option("--format", "fmt", type=click.Choice(_FORMATS), default="json", show_default=True)
def export(
    mission_dir: Path | None, store_path: Path | None, repository: str | None, fmt: str
) -> None:
    """Print the graph as JSON, a Mermaid flowchart or Graphviz dot.

    Example: rho graph export --format dot | dot -Tsvg > tasks.svg
    """
    from graph import dump_graph, render_dot, render_mermaid

    document = load_source(mission_dir, store_path, repository)
    if fmt == "json":
        sys.stdout.write(dump_graph(document).decode())
    else:
        text = render_mermaid(document) if fmt == "mermaid" else render_dot(document)
        sys.stdout.write(text if text.endswith("\n") else text + "\n")


@click.group()
def cloud() -> None:
    """Rho Cloud: connect a repository once; nothing is sent without 'rho cloud graph sync'.

    Example: rho cloud login --endpoint URL < token.txt
    """


@cloud.group("graph")
def cloud_graph() -> None:
    """Upload a privacy-normalized graph.

    Example: rho cloud graph sync --store .rho/tasks.json --repository app
    """


@cloud_graph.command("sync")
@_source_options
@click.option("--endpoint", help="Base URL of Rho Cloud (default: the one 'login' saved).")
@click.option("--project", "project_id", help="Project id (default: the one 'connect' saved).")
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="File holding the API token (default: $RHO_CLOUD_TOKEN, else the saved token).",
)
@click.option("--timeout", type=click.FloatRange(min=0.1, max=300), default=10.0, show_default=True)
@click.option(
    "--summary",
    is_flag=True,
    help="Upload the mission and its wave joins only, features folded into per-wave counts.",
)
def sync(
    mission_dir: Path | None,
    store_path: Path | None,
    repository: str | None,
    endpoint: str | None,
    project_id: str | None,
    token_file: Path | None,
    timeout: float,
    summary: bool,
) -> None:
    """Prepare the graph (limits, digests for sensitive values) and upload it once.

    Each of --endpoint, --project and the token falls back to what 'rho cloud login' and
    'rho cloud connect' saved for the repository; the saved token goes only to the saved
    endpoint.

    Example: rho cloud graph sync --mission-dir .rho/missions/1a2b3c4d
    """
    from graph import check_repository_id
    from graph.cloud import sync_graph

    if summary and mission_dir is None:
        raise click.UsageError("--summary needs --mission-dir (it summarizes a mission)")
    if repository is not None:  # before the token is looked for: bad input is bad input
        check_repository_id(repository)
    target = _connection(endpoint, project_id, token_file)
    prepared = _prepared(load_source(mission_dir, store_path, repository), summary, mission_dir)
    result = sync_graph(
        prepared,
        endpoint=target.endpoint,
        project_id=target.project_id,
        token=target.token,
        timeout=timeout,
    )
    click.echo(result.message())


def _prepared(document: GraphDocument, summary: bool, mission_dir: Path | None) -> PreparedGraph:
    """*document* (or its summary) prepared for Rho Cloud; over a count bound, a mission's error
    says what fits instead."""
    from graph.cloud import GraphLimitError, prepare_for_cloud, summarize_mission_graph

    try:
        return prepare_for_cloud(summarize_mission_graph(document) if summary else document)
    except GraphLimitError as exc:
        if mission_dir is not None and not summary and exc.fact == "graph":
            exc.hint = "--summary uploads the mission and its wave joins only, which always fits"
        raise


@cloud.command("login")
@click.option("--endpoint", required=True, help="Base URL of Rho Cloud.")
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="File holding the API token (default: read it from standard input).",
)
def login(endpoint: str, token_file: Path | None) -> None:
    """Save the endpoint and API token of Rho Cloud for this repository.

    The token comes from --token-file or standard input, never from a flag (a flag would
    stay in the shell's history and show in the process list). It is kept in .rho/cloud.json
    (mode 0600, .rho excluded from git) and never printed.

    Example: rho cloud login --endpoint https://rho.example.com < ~/.rho-token
    """
    from graph.cloud import CloudSettings, check_endpoint

    root = _repository_root()
    check_endpoint(endpoint)
    token = _login_token(token_file)
    saved = _trusted_settings(root) or CloudSettings()
    path = _save(root, CloudSettings(endpoint=endpoint, project_id=saved.project_id, token=token))
    click.echo(f"Logged in to Rho Cloud at {endpoint}; saved in {path}")
    if saved.project_id is None:
        click.echo("Next: rho cloud connect --project ID")


@cloud.command("connect")
@click.option("--project", "project_id", required=True, help="Project id on Rho Cloud.")
def connect(project_id: str) -> None:
    """Connect this repository to a Rho Cloud project: uploads go there by default.

    Example: rho cloud connect --project proj_42
    """
    from graph.cloud import CloudSettings, check_project_id

    root = _repository_root()
    check_project_id(project_id)
    saved = _trusted_settings(root) or CloudSettings()
    path = _save(root, saved.model_copy(update={"project_id": project_id}))
    click.echo(f"Connected to Rho Cloud project {project_id}; saved in {path}")
    if saved.endpoint is None or saved.token is None:
        click.echo("Next: rho cloud login --endpoint URL")


@cloud.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def status(as_json: bool) -> None:
    """Say what this repository is connected to; the token is never shown.

    Example: rho cloud status --json
    """
    from graph import repository_id_for_folder
    from graph.cloud import cloud_settings_path

    root = _repository_root()
    saved = _trusted_settings(root)
    report: dict[str, Any] = {
        "settings": str(cloud_settings_path(root)),
        "repository_id": repository_id_for_folder(root),
        "endpoint": saved.endpoint if saved else None,
        "project_id": saved.project_id if saved else None,
        "token": _token_origin(saved),
    }
    report["connected"] = None not in (report["endpoint"], report["project_id"], report["token"])
    if as_json:
        click.echo(json.dumps(report, indent=2))
    else:
        click.echo(_status_text(report))


def _status_text(report: dict[str, Any]) -> str:
    tokens = {"saved": "saved (not shown)", "environment": f"from ${_TOKEN_ENV} (not shown)"}
    lines = [
        f"settings:   {report['settings']}",
        f"endpoint:   {report['endpoint'] or 'not set (rho cloud login --endpoint URL)'}",
        f"project:    {report['project_id'] or 'not set (rho cloud connect --project ID)'}",
        f"token:      {tokens.get(report['token'] or '', 'not set (rho cloud login)')}",
        f"repository: {report['repository_id'] or 'none (pass --repository to sync)'}",
    ]
    if report["connected"]:
        lines.append("Connected: 'rho cloud graph sync' needs no other flag.")
    else:
        lines.append("Not connected: 'rho cloud graph sync' needs the missing values as flags.")
    return "\n".join(lines)


def _token_origin(saved: CloudSettings | None) -> str | None:
    if os.environ.get(_TOKEN_ENV, "").strip():
        return "environment"
    return "saved" if saved is not None and saved.token is not None else None


# -- where a sync goes -------------------------------------------------------------------------


@dataclass(frozen=True)
class _Target:
    endpoint: str
    project_id: str
    token: str


def _connection(endpoint: str | None, project_id: str | None, token_file: Path | None) -> _Target:
    """Flags first, then ``$RHO_CLOUD_TOKEN`` (token only), then the repository's settings."""
    from graph.cloud import check_endpoint, check_project_id

    token = _explicit_token(token_file)
    saved = None
    if endpoint is None or project_id is None or token is None:
        saved = _saved_settings()
    endpoint = check_endpoint(endpoint) if endpoint is not None else _saved_endpoint(saved)
    if project_id is not None:
        check_project_id(project_id)
    elif saved is None or saved.project_id is None:
        raise CliError(
            "no Rho Cloud project: pass --project ID or run 'rho cloud connect --project ID'"
        )
    else:
        project_id = saved.project_id
    return _Target(endpoint, project_id, token or _saved_token(saved, endpoint))


def _saved_settings() -> CloudSettings | None:
    root = find_repo_root()
    return None if root is None else _trusted_settings(root)


def _trusted_settings(root: Path) -> CloudSettings | None:
    """The repository's saved settings, refused when git tracks the file (the repository, not
    the user, would be choosing where the user's token goes)."""
    from graph.cloud import CLOUD_SETTINGS_FILENAME, read_cloud_settings

    from ..git._repo import GitRepo

    status, _, _ = GitRepo.open(root).run_status(
        "ls-files", "--error-unmatch", "--", f".rho/{CLOUD_SETTINGS_FILENAME}"
    )
    if status == 0:
        raise CliError(
            f"refusing to use {root / '.rho' / CLOUD_SETTINGS_FILENAME}: git tracks it, so the "
            "repository carries it; rho trusts only settings it wrote (remove it from git, "
            "then 'rho cloud login')"
        )
    return read_cloud_settings(root)


def _saved_endpoint(saved: CloudSettings | None) -> str:
    if saved is None or saved.endpoint is None:
        raise CliError(
            "no Rho Cloud endpoint: pass --endpoint URL or run 'rho cloud login --endpoint URL'"
        )
    return saved.endpoint


def _saved_token(saved: CloudSettings | None, endpoint: str) -> str:
    if saved is None or saved.token is None:
        raise CliError(
            f"no Rho Cloud token: pass --token-file, set {_TOKEN_ENV}"
            " or run 'rho cloud login --endpoint URL'"
        )
    # A token saved for one server is never sent to another one named by a flag.
    if saved.endpoint is None or saved.endpoint.rstrip("/") != endpoint.rstrip("/"):
        raise CliError(
            f"no Rho Cloud token for {endpoint}: the saved token is for"
            f" {saved.endpoint or 'no endpoint'}; pass --token-file or set {_TOKEN_ENV}"
        )
    return saved.token


def _explicit_token(token_file: Path | None) -> str | None:
    """The token of ``--token-file``, else of ``$RHO_CLOUD_TOKEN``, else None."""
    if token_file is not None:
        return _checked_token(_read_token_file(token_file), f"token file {token_file}")
    from_env = os.environ.get(_TOKEN_ENV, "").strip()
    return _checked_token(from_env, f"${_TOKEN_ENV}") if from_env else None


def _checked_token(token: str, origin: str) -> str:
    from graph.cloud import CloudSettingsError, check_token

    try:
        return check_token(token)
    except CloudSettingsError as exc:
        raise CliError(f"{origin}: {exc}") from None


def _read_token_file(path: Path) -> str:
    try:
        with path.open("rb") as handle:
            data = handle.read(_MAX_TOKEN_INPUT + 1)
    except OSError as exc:
        reason = (exc.strerror or str(exc)).lower()
        raise CliError(f"cannot read token file {path}: {reason}") from None
    return _token_text(data, f"token file {path}")


def _token_text(data: bytes, origin: str) -> str:
    if len(data) > _MAX_TOKEN_INPUT:
        raise CliError(f"{origin}: larger than 64 KiB; a token is at most 8192 characters")
    try:
        return data.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise CliError(f"{origin}: token is not UTF-8 text") from None


# -- login and connect -------------------------------------------------------------------------


def _repository_root() -> Path:
    root = find_repo_root()
    if root is None:
        raise CliError(
            f"not in a git repository: {Path.cwd()}; Rho Cloud settings belong to a repository"
        )
    return root


def _login_token(token_file: Path | None) -> str:
    if token_file is not None:
        return _checked_token(_read_token_file(token_file), f"token file {token_file}")
    if sys.stdin is None:
        raise CliError("no token: pass --token-file FILE or pipe the token to standard input")
    if sys.stdin.isatty():
        token: str = click.prompt("Rho Cloud token", hide_input=True, err=True)
        return _checked_token(token.strip(), "token")
    data = sys.stdin.buffer.read(_MAX_TOKEN_INPUT + 1)
    token = _token_text(data, "standard input")
    if not token:
        raise CliError("no token on standard input: pipe the token in or pass --token-file FILE")
    return _checked_token(token, "standard input")


def _save(root: Path, settings: CloudSettings) -> Path:
    """Write *settings*, after making sure ``.rho/`` (where the token lies) is kept out of git."""
    from graph.cloud import write_cloud_settings

    from ..git._repo import GitRepo

    GitRepo.open(root).exclude(RHO_PATTERN)
    return write_cloud_settings(root, settings)
