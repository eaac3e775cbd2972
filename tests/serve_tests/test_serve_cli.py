"""``rho serve`` as a command: its token, what it prints, what it refuses, how it stops."""

from __future__ import annotations

import os
import signal
import socket
import stat
from pathlib import Path

import pytest

from support.repos import git
from support.repos import init_home_repo as make_repo
from support.rho import Result
from support.rho import run_rho as rho

from ._world import World, running_server


def _bad_input(result: Result, message: str) -> None:
    assert (result.code, result.stderr_lines, result.stdout) == (2, [f"error: {message}"], "")


def test_a_made_token_is_saved_0600_in_a_0700_rho_excluded_from_git(world: World) -> None:
    saved = world.repo / ".rho" / "serve.token"
    assert saved.read_text() == f"{world.server.token}\n"
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    assert stat.S_IMODE((world.repo / ".rho").stat().st_mode) == 0o700
    assert len(world.server.token or "") >= 40
    git_dir = Path(git(world.repo, world.home, "rev-parse", "--absolute-git-dir").strip())
    assert ".rho/" in (git_dir / "info" / "exclude").read_text().splitlines()


def test_the_token_is_printed_once_in_the_page_url(world: World) -> None:
    (line,) = world.server.output
    assert line == f"rho serve: {world.server.url}#token={world.server.token}\n"
    assert world.server.url.startswith("http://127.0.0.1:")


def test_a_token_file_sets_the_token_which_is_then_never_printed(
    tmp_path: Path, home: Path
) -> None:
    repo = make_repo(tmp_path / "repo", home)
    token_file = tmp_path / "token"
    token_file.write_text("  a-token-of-our-own-0123456789\n")
    with running_server(
        repo, home, "--token-file", str(token_file), token="a-token-of-our-own-0123456789"
    ) as server:
        assert server.output == [f"rho serve: {server.url} (token from {token_file})\n"]
        assert server.get("/v1/missions", **server.auth()).json() == {"missions": []}
        wrong = server.get("/v1/missions", Authorization="Bearer a-token-of-our-own-012345678")
        assert wrong.status_code == 401
    assert not (repo / ".rho" / "serve.token").exists()


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.1", "example.com"])
def test_a_non_loopback_address_needs_a_token_file(tmp_path: Path, home: Path, host: str) -> None:
    result = rho("serve", "--host", host, cwd=tmp_path, home=home)
    _bad_input(
        result,
        f"listening on {host} (not a loopback address) needs --token-file: "
        "the token then never needs to be printed",
    )


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"", "holds no token"),
        (b" \n\n", "holds no token"),
        (b"short-token", ": the token is 11 characters; at least 16 are needed"),
        (b"a token with spaces inside", ": a token is printable ASCII without spaces"),
        (b"\xff\xfe-not-utf-8-at-all", None),
    ],
)
def test_a_bad_token_file_is_refused(
    tmp_path: Path, home: Path, content: bytes, problem: str | None
) -> None:
    token_file = tmp_path / "token"
    token_file.write_bytes(content)
    result = rho("serve", "--token-file", str(token_file), cwd=tmp_path, home=home)
    if problem is None:
        _bad_input(result, f"token file {token_file} is not UTF-8 text")
    else:
        separator = "" if problem.startswith(":") else " "
        _bad_input(result, f"token file {token_file}{separator}{problem}")


def test_a_missing_token_file_is_refused(tmp_path: Path, home: Path) -> None:
    result = rho("serve", "--token-file", str(tmp_path / "nope"), cwd=tmp_path, home=home)
    _bad_input(result, f"cannot read token file {tmp_path / 'nope'}: no such file or directory")


def test_outside_a_repository_is_refused(tmp_path: Path, home: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    result = rho("serve", cwd=outside, home=home)
    _bad_input(
        result, f"not in a git repository: {outside}; rho serve serves a repository's missions"
    )


def test_a_rho_folder_that_is_a_link_is_refused_before_anything_is_written(
    tmp_path: Path, home: Path
) -> None:
    repo = make_repo(tmp_path / "repo", home)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, repo / ".rho")
    result = rho("serve", cwd=repo, home=home)
    _bad_input(
        result,
        f"refusing to use {repo / '.rho'}: it is a symbolic link; rho follows no link in .rho",
    )
    assert list(elsewhere.iterdir()) == []


def test_a_port_in_use_is_refused(tmp_path: Path, home: Path) -> None:
    repo = make_repo(tmp_path / "repo", home)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = rho("serve", "--port", str(port), cwd=repo, home=home)
    _bad_input(result, f"cannot serve on 127.0.0.1:{port}: address already in use")


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_the_server_with_exit_0(
    tmp_path: Path, home: Path, stop: signal.Signals
) -> None:
    repo = make_repo(tmp_path / "repo", home)
    with running_server(repo, home) as server:
        assert server.get("/healthz").status_code == 200
        server.process.send_signal(stop)
        code = server.process.wait(timeout=30)
        assert server.process.stdout is not None
        rest = server.process.stdout.read()
    assert code == 0
    assert rest.splitlines()[-1] == "rho serve: stopped"


def test_a_second_server_that_cannot_listen_keeps_the_first_ones_token(world: World) -> None:
    # The running server's clients hold its token: a failed second start must not replace it.
    saved = world.repo / ".rho" / "serve.token"
    before = saved.read_bytes()
    port = world.server.url.rsplit(":", 1)[1].strip("/")
    result = rho("serve", "--port", port, cwd=world.repo, home=world.home)
    _bad_input(result, f"cannot serve on 127.0.0.1:{port}: address already in use")
    assert saved.read_bytes() == before
    assert world.server.get("/v1/missions", **world.server.auth()).status_code == 200
