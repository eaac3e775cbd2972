"""``rho serve``: the repository's missions and task store over HTTP, read-only, and a page.

A thin shell: check the options, get the token, bind, print the URL once, run the server
(``rho_mission.serve``). Starlette and uvicorn are imported only here, when the command runs.

Decision: docs/decisions/0801-serve.md
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ._errors import CliError
from ._paths import command_store_path, find_repo_root

__all__ = ["serve"]


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8765,
    show_default=True,
    help="Port to listen on (0: any free port, printed at start).",
)
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="File holding the token to require (default: a new random one in .rho/serve.token).",
)
def serve(host: str, port: int, token_file: Path | None) -> None:
    """Serve this repository's missions and task store, read-only, and a live mission page.

    Every /v1 route needs the token, as 'Authorization: Bearer TOKEN' or 'X-API-Key: TOKEN'.
    Without --token-file a new random token is made at every start, saved in
    .rho/serve.token (mode 0600) and printed once, in the page's URL. Listening on an address
    other than a loopback one needs --token-file. The server never takes a lock: missions
    running in other processes are shown as they go.

    Example: rho serve --port 8765   (then open the URL it prints)
    """
    from ..serve._app import create_app
    from ..serve._run import allowed_hosts, bind, is_loopback, page_url, run_server
    from ..serve._source import Repository
    from ..serve._token import new_token, read_token_file

    if token_file is None and not is_loopback(host):
        raise CliError(
            f"listening on {host} (not a loopback address) needs --token-file: "
            "the token then never needs to be printed"
        )
    given = read_token_file(token_file) if token_file is not None else None
    root = _repository_root()
    repository = Repository(root, command_store_path(None).absolute())
    # Bound first: a server that cannot listen (the address in use by another rho serve)
    # must not replace the token that server's clients hold.
    sock = bind(host, port)
    token, saved = (given, None) if given is not None else new_token(root)
    url = page_url(sock)

    def announce() -> None:
        if saved is None:
            click.echo(f"rho serve: {url} (token from {token_file})")
        else:
            click.echo(f"rho serve: {url}#token={token}")
            click.echo(f"token saved in {saved} (a new one at every start)")
        click.echo("Ctrl-C stops the server.")
        sys.stdout.flush()

    run_server(create_app(repository, token, allowed_hosts(host)), sock, announce)
    click.echo("rho serve: stopped")


def _repository_root() -> Path:
    root = find_repo_root()
    if root is None:
        raise CliError(
            f"not in a git repository: {Path.cwd()}; rho serve serves a repository's missions"
        )
    return root
