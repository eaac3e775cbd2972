"""``rho cloud login``, ``connect`` and ``status``, and a sync that needs no flag afterwards.

Real ``rho`` subprocesses in real temporary git repositories; uploads go to a real local HTTP
server (pytest-httpserver). Tokens reach ``rho`` through a file or a pipe, never a flag, and
must never show on stdout or stderr.
"""

from __future__ import annotations

import json
import os
import pty
import select
import socket
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest
from pytest_httpserver import HTTPServer

from support.environ import rho_env as child_env
from support.repos import git, tree_digest
from support.repos import init_home_repo as init_repo
from support.rho import RHO, Result, run_rho
from support.stores import write_store

from ._docs import contract_case

TOKEN = "saved-token-6b2d0e"
OTHER_TOKEN = "flag-token-91aa7c"
SYNC_PATH = "/v1/graph/sync"
ANSWER = {"accepted": True, "duplicate": False, "graphDigest": "d", "facts": 2}
TASKS = [{"id": "task_1", "subject": "private subject", "status": "pending"}]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


@pytest.fixture
def repo(tmp_path: Path, home: Path) -> Path:
    """A repository named ``app`` with a one-task store and no Rho Cloud settings."""
    root = init_repo(tmp_path / "app", home)
    write_store(root / ".rho" / "tasks.json", TASKS)
    return root


@pytest.fixture
def closed_url() -> Iterator[str]:
    """A URL whose port is bound but not listening: nothing can be sent there."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


def _rho(repo: Path, home: Path, *args: str, stdin: bytes = b"", **env: str) -> Result:
    return run_rho(*args, cwd=repo, home=home, env=env, stdin=stdin)


def _login(repo: Path, home: Path, endpoint: str, token: str = TOKEN) -> Result:
    result = _rho(repo, home, "cloud", "login", "--endpoint", endpoint, stdin=f"{token}\n".encode())
    assert (result.code, result.stderr) == (0, ""), result.stderr
    return result


def _connect(repo: Path, home: Path, project: str = "proj-7") -> Result:
    result = _rho(repo, home, "cloud", "connect", "--project", project)
    assert (result.code, result.stderr) == (0, ""), result.stderr
    return result


def _settings(repo: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((repo / ".rho" / "cloud.json").read_text())
    return data


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def _assert_bad_input(result: Result, message: str) -> None:
    assert (result.code, result.stdout, result.stderr_lines) == (2, "", [f"error: {message}"])


# -- login, connect, sync ----------------------------------------------------------------------


def test_after_login_and_connect_a_mission_sync_needs_no_other_flag(
    repo: Path, home: Path, httpserver: HTTPServer
) -> None:
    endpoint = httpserver.url_for("/")
    login = _login(repo, home, endpoint)
    assert login.stdout.splitlines() == [
        f"Logged in to Rho Cloud at {endpoint}; saved in {repo / '.rho' / 'cloud.json'}",
        "Next: rho cloud connect --project ID",
    ]
    connect = _connect(repo, home)
    assert (
        connect.stdout
        == f"Connected to Rho Cloud project proj-7; saved in {repo / '.rho' / 'cloud.json'}\n"
    )
    assert _rho(repo, home, "task", "update", "task_1", "--command", "true").code == 0
    mission = _rho(repo, home, "mission", "--from-tasks", "--json")
    assert mission.code == 0, mission.stderr
    httpserver.expect_request(SYNC_PATH, method="POST").respond_with_json(ANSWER)

    result = _rho(repo, home, "cloud", "graph", "sync", "--mission-dir", mission.json()["dir"])

    assert (result.code, result.stdout, result.stderr) == (
        0,
        "Graph accepted: 2 facts (digest d).\n",
        "",
    )
    request = httpserver.log[0][0]
    assert request.headers["Authorization"] == f"Bearer {TOKEN}"
    body = json.loads(request.get_data())
    assert body["projectId"] == "proj-7"
    assert body["graph"]["scope"] == {"repository_id": "app"}
    assert TOKEN not in login.stdout + connect.stdout + result.stdout


def test_settings_are_private_and_kept_out_of_git(repo: Path, home: Path) -> None:
    _login(repo, home, "https://cloud.example.invalid")
    assert (_mode(repo / ".rho"), _mode(repo / ".rho" / "cloud.json")) == (0o700, 0o600)
    assert ".rho/" in (repo / ".git" / "info" / "exclude").read_text().splitlines()
    assert git(repo, home, "status", "--porcelain", "--untracked-files=all") == ""
    assert _settings(repo) == {
        "schema_version": "rho.cloud/v1",
        "endpoint": "https://cloud.example.invalid",
        "token": TOKEN,
    }


def test_login_reads_a_token_file_and_keeps_the_project(
    repo: Path, home: Path, tmp_path: Path
) -> None:
    _connect(repo, home, "proj-1")
    token_file = tmp_path / "token"
    token_file.write_text(f"  {OTHER_TOKEN}\n")
    args = ("cloud", "login", "--endpoint", "https://b.example", "--token-file", str(token_file))
    result = _rho(repo, home, *args)
    assert (result.code, result.stderr) == (0, "")
    assert "Next:" not in result.stdout
    assert _settings(repo) == {
        "schema_version": "rho.cloud/v1",
        "endpoint": "https://b.example",
        "project_id": "proj-1",
        "token": OTHER_TOKEN,
    }


def test_connect_keeps_the_login(repo: Path, home: Path) -> None:
    _login(repo, home, "https://a.example")
    _connect(repo, home, "proj-1")
    assert "Next:" not in _connect(repo, home, "proj-2").stdout
    assert _settings(repo) == {
        "schema_version": "rho.cloud/v1",
        "endpoint": "https://a.example",
        "project_id": "proj-2",
        "token": TOKEN,
    }


def test_the_saved_token_works_from_a_subfolder(
    repo: Path, home: Path, httpserver: HTTPServer
) -> None:
    _login(repo, home, httpserver.url_for("/"))
    _connect(repo, home)
    httpserver.expect_request(SYNC_PATH, method="POST").respond_with_json(ANSWER)
    (repo / "src").mkdir()
    result = _rho(repo / "src", home, "cloud", "graph", "sync")
    assert (result.code, result.stderr) == (0, "")
    body = json.loads(httpserver.log[0][0].get_data())
    assert [node["id"] for node in body["graph"]["nodes"]] == ["rho/task/task_1"]


def _read_until(stream: IO[bytes], wanted: bytes) -> bytes:
    """Read *stream* until *wanted* arrives (each wait bounded: a hang fails, never blocks)."""
    seen = b""
    while wanted not in seen:
        ready, _, _ = select.select([stream], [], [], 60)
        chunk = os.read(stream.fileno(), 1024) if ready else b""
        assert chunk, f"no {wanted!r} within 60 seconds; got {seen!r}"
        seen += chunk
    return seen


def _pending(fd: int) -> bytes:
    """Whatever the terminal shows that was not read yet (nothing waits)."""
    data = b""
    while select.select([fd], [], [], 0)[0]:
        try:
            chunk = os.read(fd, 1024)
        except OSError:  # the other side is closed
            break
        if not chunk:
            break
        data += chunk
    return data


def test_login_on_a_terminal_prompts_for_the_token_without_echo(repo: Path, home: Path) -> None:
    master, terminal = pty.openpty()
    args = [str(RHO), "cloud", "login", "--endpoint", "https://rho.example.com"]
    # A new session has no controlling terminal, so getpass reads the pty given as stdin.
    with subprocess.Popen(
        args,
        cwd=repo,
        env=child_env(home),
        stdin=terminal,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    ) as process:
        os.close(terminal)
        assert process.stderr is not None
        try:
            prompt = _read_until(process.stderr, b"Rho Cloud token: ")
            os.write(master, f"{TOKEN}\n".encode())
            out, err = process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
        shown = _pending(master)
    os.close(master)
    assert (process.returncode, prompt) == (0, b"Rho Cloud token: ")
    assert TOKEN.encode() not in out + err + shown
    assert _settings(repo)["token"] == TOKEN


# -- flags win ---------------------------------------------------------------------------------


def test_explicit_flags_win_over_the_saved_settings(
    repo: Path, home: Path, httpserver: HTTPServer, closed_url: str, tmp_path: Path
) -> None:
    _login(repo, home, closed_url)
    _connect(repo, home, "saved-project")
    token_file = tmp_path / "token"
    token_file.write_text(OTHER_TOKEN)
    httpserver.expect_request(SYNC_PATH, method="POST").respond_with_json(ANSWER)
    flags = ("--endpoint", httpserver.url_for("/"), "--project", "flag-project")
    result = _rho(repo, home, "cloud", "graph", "sync", *flags, "--token-file", str(token_file))
    assert (result.code, result.stderr) == (0, "")
    request = httpserver.log[0][0]
    assert request.headers["Authorization"] == f"Bearer {OTHER_TOKEN}"
    assert json.loads(request.get_data())["projectId"] == "flag-project"


def test_the_token_in_the_environment_wins_over_the_saved_one(
    repo: Path, home: Path, httpserver: HTTPServer
) -> None:
    _login(repo, home, httpserver.url_for("/"))
    _connect(repo, home)
    httpserver.expect_request(SYNC_PATH, method="POST").respond_with_json(ANSWER)
    result = _rho(repo, home, "cloud", "graph", "sync", RHO_CLOUD_TOKEN=OTHER_TOKEN)
    assert (result.code, result.stderr) == (0, "")
    assert httpserver.log[0][0].headers["Authorization"] == f"Bearer {OTHER_TOKEN}"


def test_the_saved_token_never_goes_to_another_endpoint(
    repo: Path, home: Path, httpserver: HTTPServer, closed_url: str
) -> None:
    _login(repo, home, closed_url)
    _connect(repo, home)
    endpoint = httpserver.url_for("/")
    result = _rho(repo, home, "cloud", "graph", "sync", "--endpoint", endpoint)
    _assert_bad_input(
        result,
        f"no Rho Cloud token for {endpoint}: the saved token is for {closed_url};"
        " pass --token-file or set RHO_CLOUD_TOKEN",
    )
    assert httpserver.log == []


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (
            "nothing",
            "no Rho Cloud endpoint: pass --endpoint URL or run 'rho cloud login --endpoint URL'",
        ),
        (
            "login",
            "no Rho Cloud project: pass --project ID or run 'rho cloud connect --project ID'",
        ),
        (
            "connect",
            "no Rho Cloud endpoint: pass --endpoint URL or run 'rho cloud login --endpoint URL'",
        ),
    ],
)
def test_a_sync_names_what_is_missing_and_sends_nothing(
    repo: Path, home: Path, httpserver: HTTPServer, setup: str, message: str
) -> None:
    if setup == "login":
        _login(repo, home, httpserver.url_for("/"))
    elif setup == "connect":
        _connect(repo, home)
    _assert_bad_input(_rho(repo, home, "cloud", "graph", "sync"), message)
    assert httpserver.log == []


# -- status ------------------------------------------------------------------------------------


def test_status_says_what_is_connected_and_never_prints_the_token(
    repo: Path, home: Path, httpserver: HTTPServer
) -> None:
    endpoint = httpserver.url_for("/")
    settings = repo / ".rho" / "cloud.json"
    before = _rho(repo, home, "cloud", "status")
    assert (before.code, before.stderr) == (0, "")
    assert before.stdout.splitlines() == [
        f"settings:   {settings}",
        "endpoint:   not set (rho cloud login --endpoint URL)",
        "project:    not set (rho cloud connect --project ID)",
        "token:      not set (rho cloud login)",
        "repository: app",
        "Not connected: 'rho cloud graph sync' needs the missing values as flags.",
    ]
    _login(repo, home, endpoint)
    _connect(repo, home)
    after = _rho(repo, home, "cloud", "status")
    assert after.stdout.splitlines() == [
        f"settings:   {settings}",
        f"endpoint:   {endpoint}",
        "project:    proj-7",
        "token:      saved (not shown)",
        "repository: app",
        "Connected: 'rho cloud graph sync' needs no other flag.",
    ]
    as_json = _rho(repo, home, "cloud", "status", "--json", RHO_CLOUD_TOKEN=OTHER_TOKEN).json()
    assert as_json == {
        "settings": str(settings),
        "repository_id": "app",
        "endpoint": endpoint,
        "project_id": "proj-7",
        "token": "environment",
        "connected": True,
    }
    for result in (before, after):
        assert TOKEN not in result.stdout + result.stderr
    assert httpserver.log == []


# -- bad input: exit 2, one error line, nothing written ------------------------------------------


def _case_bad_endpoint(repo: Path, tmp: Path) -> tuple[tuple[str, ...], bytes, str]:
    return (
        ("cloud", "login", "--endpoint", "ftp://cloud.example"),
        TOKEN.encode(),
        'endpoint must be an http:// or https:// URL, not "ftp://cloud.example"',
    )


def _case_password_in_endpoint(repo: Path, tmp: Path) -> tuple[tuple[str, ...], bytes, str]:
    return (
        ("cloud", "login", "--endpoint", "https://me:hunter2@cloud.example"),
        TOKEN.encode(),
        "endpoint must not carry a user name or password",
    )


def _case_no_token_piped(repo: Path, tmp: Path) -> tuple[tuple[str, ...], bytes, str]:
    return (
        ("cloud", "login", "--endpoint", "https://cloud.example"),
        b"\n",
        "no token on standard input: pipe the token in or pass --token-file FILE",
    )


def _case_token_with_a_space(repo: Path, tmp: Path) -> tuple[tuple[str, ...], bytes, str]:
    return (
        ("cloud", "login", "--endpoint", "https://cloud.example"),
        b"hunter2 hunter2\n",
        "standard input: token has a space or a character outside printable ASCII",
    )


def _case_missing_token_file(repo: Path, tmp: Path) -> tuple[tuple[str, ...], bytes, str]:
    path = tmp / "absent-token"
    return (
        ("cloud", "login", "--endpoint", "https://cloud.example", "--token-file", str(path)),
        b"",
        f"cannot read token file {path}: no such file or directory",
    )


def _case_empty_token_file(repo: Path, tmp: Path) -> tuple[tuple[str, ...], bytes, str]:
    path = tmp / "empty-token"
    path.write_text("\n")
    return (
        ("cloud", "login", "--endpoint", "https://cloud.example", "--token-file", str(path)),
        b"",
        f"token file {path}: token is blank",
    )


def _case_token_flag(repo: Path, tmp: Path) -> tuple[tuple[str, ...], bytes, str]:
    return (
        ("cloud", "login", "--endpoint", "https://cloud.example", "--token", "hunter2"),
        b"",
        "No such option '--token'. Did you mean '--token-file'?",
    )


def _case_bad_project(repo: Path, tmp: Path) -> tuple[tuple[str, ...], bytes, str]:
    return (
        ("cloud", "connect", "--project", "my project"),
        b"",
        "project id holds a space or a control character (U+0020)",
    )


def _case_link_at_rho(repo: Path, tmp: Path) -> tuple[tuple[str, ...], bytes, str]:
    (repo / ".rho").rename(tmp / "real-rho")
    (repo / ".rho").symlink_to(tmp / "real-rho")
    return (
        ("cloud", "connect", "--project", "proj-7"),
        b"",
        f"refusing to use {repo / '.rho'}: it is a symbolic link; rho follows no link in .rho",
    )


def _case_broken_settings(repo: Path, tmp: Path) -> tuple[tuple[str, ...], bytes, str]:
    (repo / ".rho" / "cloud.json").write_text("{")
    (repo / ".rho" / "cloud.json").chmod(0o600)
    return (
        ("cloud", "login", "--endpoint", "https://cloud.example"),
        TOKEN.encode(),
        f"invalid Rho Cloud settings in {repo / '.rho' / 'cloud.json'}: not a JSON document",
    )


def _case_bad_repository(repo: Path, tmp: Path) -> tuple[tuple[str, ...], bytes, str]:
    return (
        ("cloud", "graph", "sync", "--repository", " ", "--endpoint", "http://127.0.0.1:9"),
        b"",
        "repository id is blank",
    )


BAD_INPUT = {
    "endpoint not http": _case_bad_endpoint,
    "password in the endpoint": _case_password_in_endpoint,
    "no token piped": _case_no_token_piped,
    "token with a space": _case_token_with_a_space,
    "missing token file": _case_missing_token_file,
    "empty token file": _case_empty_token_file,
    "token as a flag": _case_token_flag,
    "project with a space": _case_bad_project,
    "link at .rho": _case_link_at_rho,
    "broken settings file": _case_broken_settings,
    "blank repository": _case_bad_repository,
}


@pytest.mark.parametrize("case", list(BAD_INPUT))
def test_bad_input_exits_2_with_one_error_line_and_writes_nothing(
    case: str, repo: Path, home: Path, tmp_path: Path
) -> None:
    args, stdin, message = BAD_INPUT[case](repo, tmp_path)
    before = tree_digest(tmp_path)
    result = _rho(repo, home, *args, stdin=stdin, RHO_CLOUD_TOKEN=TOKEN)
    assert (result.code, result.stdout) == (2, "")
    assert [line for line in result.stderr_lines if line.startswith("error:")] == [
        f"error: {message}"
    ]
    assert all(line.startswith(("error:", "hint:")) for line in result.stderr_lines)
    assert "hunter2" not in result.stderr
    assert TOKEN not in result.stderr
    assert tree_digest(tmp_path) == before


@pytest.mark.parametrize(
    "args",
    [
        ("cloud", "login", "--endpoint", "https://cloud.example"),
        ("cloud", "connect", "--project", "p"),
        ("cloud", "status"),
    ],
    ids=" ".join,
)
def test_outside_a_repository_settings_commands_refuse(
    args: tuple[str, ...], home: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    before = tree_digest(tmp_path)
    env = {"GIT_CEILING_DIRECTORIES": str(tmp_path)}
    result = run_rho(*args, cwd=outside, home=home, env=env, stdin=TOKEN.encode())
    _assert_bad_input(
        result, f"not in a git repository: {outside}; Rho Cloud settings belong to a repository"
    )
    assert tree_digest(tmp_path) == before


def _committed_settings(repo: Path, home: Path, endpoint: str) -> Path:
    # What a repository can carry: a cloud.json naming somebody's endpoint, checked in.
    path = repo / ".rho" / "cloud.json"
    path.write_text(json.dumps({"schema_version": "rho.cloud/v1", "endpoint": endpoint,
                                "project_id": "x"}))  # fmt: skip
    git(repo, home, "add", "--force", ".rho/cloud.json")
    git(repo, home, "commit", "--quiet", "-m", "settings")
    return path


@pytest.mark.parametrize("mode", [0o644, 0o600], ids=["as-cloned", "narrowed-by-hand"])
def test_settings_the_repository_carries_never_get_the_token(
    repo: Path, home: Path, httpserver: HTTPServer, mode: int
) -> None:
    path = _committed_settings(repo, home, httpserver.url_for("/"))
    path.chmod(mode)
    httpserver.expect_request(SYNC_PATH, method="POST").respond_with_json(ANSWER)
    result = _rho(repo, home, "cloud", "graph", "sync", RHO_CLOUD_TOKEN=OTHER_TOKEN)
    assert result.code == 2
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith(f"error: refusing to use {path}: ")
    assert httpserver.log == [], "the token went to the repository's endpoint"
    assert OTHER_TOKEN not in result.stdout + result.stderr


def test_a_synced_graph_keeps_a_sessions_counts_and_hashes_what_the_contract_names(
    repo: Path, home: Path, httpserver: HTTPServer, tmp_path: Path
) -> None:
    # The Go original's TestGraphSyncConformsToContract, through the real command: a graph
    # holding a session and a tool of the Rho graph (ids under rho/), uploaded.
    folder = tmp_path / "graph-dir"
    folder.mkdir()
    (folder / "mission-graph.json").write_text(json.dumps(contract_case()))
    _login(repo, home, httpserver.url_for("/"))
    _connect(repo, home)
    httpserver.expect_request(SYNC_PATH, method="POST").respond_with_json(ANSWER)

    result = _rho(repo, home, "cloud", "graph", "sync", "--mission-dir", str(folder))

    assert result.code == 0, result.stderr
    sent = json.loads(httpserver.log[0][0].get_data())["graph"]
    attributes = {fact["id"]: fact["attributes"] for fact in sent["nodes"] + sent["edges"]}
    kept = {"MESSAGE_COUNT": "12", "sast_source": "semgrep", "Prompt_Tokens": "300"}
    assert kept.items() <= attributes["rho/session/s1"].items()
    assert attributes["rho/tool/t1"]["tool_name"] == "bash"
    hashed = {
        "rho/session/s1": ("provider", "model"),
        "rho/tool/t1": ("command", "file_path"),
        "rho/edge/session/s1/used/t1": ("reason",),
    }
    for fact_id, keys in hashed.items():
        for key in keys:
            assert f"{key}_sha256" in attributes[fact_id]
            assert key not in attributes[fact_id]
    body = httpserver.log[0][0].get_data().decode()
    for secret in ("anthropic", "m-1", "make test", "/home/a/x.py", "broke"):
        assert secret not in body
