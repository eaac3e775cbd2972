"""A repository's Rho Cloud settings (``.rho/cloud.json``): values, modes, links, bad files."""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from graph import GraphError
from graph.cloud import (
    CloudSettings,
    CloudSettingsError,
    check_endpoint,
    check_project_id,
    check_token,
    cloud_settings_path,
    read_cloud_settings,
    write_cloud_settings,
)

TOKEN = "settings-token-8c1f"
SETTINGS = CloudSettings(endpoint="https://cloud.example.invalid", project_id="p-1", token=TOKEN)


@pytest.fixture(autouse=True)
def usual_umask() -> Iterator[None]:
    """A umask of 022, so that private modes come from the code, not from the environment."""
    old = os.umask(0o022)
    yield
    os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def _refused(path: Path, problem: str) -> str:
    return rf"^{re.escape(f'refusing to use {path}: it {problem}')}$"


# -- values ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("endpoint", "message"),
    [
        (
            "ftp://cloud.example",
            'endpoint must be an http:// or https:// URL, not "ftp://cloud.example"',
        ),
        ("cloud.example", 'endpoint must be an http:// or https:// URL, not "cloud.example"'),
        ("https://", 'endpoint must be an http:// or https:// URL, not "https://"'),
        ("https://user:hunter2@cloud.example", "endpoint must not carry a user name or password"),
        ("https://cloud.example/?key=hunter2", "endpoint must not have a query or a fragment"),
        ("https://cloud.example/#x", "endpoint must not have a query or a fragment"),
        ("https://cloud.example:99999", "endpoint is not a valid URL"),
        ("https://[::1", "endpoint is not a valid URL"),
        ("https://cloud.example/a b", "endpoint holds a space or a control character (U+0020)"),
        ("https://cloud.example/\n", "endpoint holds a space or a control character (U+000A)"),
        ("https://c.example/" + "a" * 2048, "endpoint is 2066 characters; the limit is 2048"),
    ],
)
def test_a_bad_endpoint_is_refused_without_showing_a_secret(endpoint: str, message: str) -> None:
    with pytest.raises(CloudSettingsError, match=rf"^{re.escape(message)}$") as caught:
        check_endpoint(endpoint)
    assert "hunter2" not in str(caught.value)
    assert caught.value.exit_code == 2


@pytest.mark.parametrize(
    "endpoint", ["http://127.0.0.1:8080", "https://cloud.example/base/", "HTTPS://Cloud.Example"]
)
def test_a_good_endpoint_is_kept_as_written(endpoint: str) -> None:
    assert check_endpoint(endpoint) == endpoint


@pytest.mark.parametrize(
    ("token", "message"),
    [
        ("", "token is blank"),
        ("  ", "token is blank"),
        ("tok en", "token has a space or a character outside printable ASCII"),
        ("toké", "token has a space or a character outside printable ASCII"),
        ("t" * 8193, "token is 8193 characters; the limit is 8192"),
    ],
)
def test_a_bad_token_is_refused_without_showing_it(token: str, message: str) -> None:
    with pytest.raises(CloudSettingsError, match=rf"^{re.escape(message)}$"):
        check_token(token)


@pytest.mark.parametrize(
    ("project_id", "message"),
    [
        ("", "project id is blank"),
        ("p q", "project id holds a space or a control character (U+0020)"),
        ("p\x00", "project id holds a space or a control character (U+0000)"),
        ("p" * 201, "project id is 201 characters; the limit is 200"),
    ],
)
def test_a_bad_project_id_is_refused(project_id: str, message: str) -> None:
    with pytest.raises(CloudSettingsError, match=rf"^{re.escape(message)}$"):
        check_project_id(project_id)


def test_the_token_never_shows_in_repr() -> None:
    assert TOKEN not in repr(SETTINGS)
    assert TOKEN not in str(SETTINGS)


# -- the file ----------------------------------------------------------------------------------


def test_settings_are_written_0600_in_a_0700_folder_and_read_back(tmp_path: Path) -> None:
    path = write_cloud_settings(tmp_path, SETTINGS)
    assert path == cloud_settings_path(tmp_path) == tmp_path / ".rho" / "cloud.json"
    assert (_mode(tmp_path / ".rho"), _mode(path)) == (0o700, 0o600)
    assert read_cloud_settings(tmp_path) == SETTINGS
    assert json.loads(path.read_text()) == {
        "schema_version": "rho.cloud/v1",
        "endpoint": "https://cloud.example.invalid",
        "project_id": "p-1",
        "token": TOKEN,
    }
    assert sorted(p.name for p in (tmp_path / ".rho").iterdir()) == ["cloud.json"]


def test_absent_values_are_left_out_of_the_file(tmp_path: Path) -> None:
    path = write_cloud_settings(tmp_path, CloudSettings(project_id="p-1"))
    assert path.read_text() == '{\n  "schema_version": "rho.cloud/v1",\n  "project_id": "p-1"\n}\n'


def test_an_existing_rho_folder_is_made_private(tmp_path: Path) -> None:
    (tmp_path / ".rho").mkdir(mode=0o755)
    (tmp_path / ".rho" / "tasks.json").write_text("{}")
    write_cloud_settings(tmp_path, SETTINGS)
    assert _mode(tmp_path / ".rho") == 0o700
    assert (tmp_path / ".rho" / "tasks.json").read_text() == "{}"


def test_a_rewrite_replaces_the_file_whole(tmp_path: Path) -> None:
    write_cloud_settings(tmp_path, SETTINGS)
    write_cloud_settings(tmp_path, CloudSettings(project_id="p-2"))
    assert read_cloud_settings(tmp_path) == CloudSettings(project_id="p-2")
    assert sorted(p.name for p in (tmp_path / ".rho").iterdir()) == ["cloud.json"]


def test_no_folder_or_no_file_reads_as_no_settings(tmp_path: Path) -> None:
    assert read_cloud_settings(tmp_path) is None
    assert not (tmp_path / ".rho").exists()
    (tmp_path / ".rho").mkdir()
    assert read_cloud_settings(tmp_path) is None


@pytest.mark.parametrize("dangling", [False, True])
def test_a_link_at_rho_is_never_followed(tmp_path: Path, dangling: bool) -> None:
    elsewhere = tmp_path / "elsewhere"
    if not dangling:
        elsewhere.mkdir()
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".rho").symlink_to(elsewhere)
    pattern = _refused(repo / ".rho", "is a symbolic link; rho follows no link in .rho")
    with pytest.raises(CloudSettingsError, match=pattern) as caught:
        write_cloud_settings(repo, SETTINGS)
    assert caught.value.path == str(repo / ".rho")
    with pytest.raises(CloudSettingsError, match=pattern):
        read_cloud_settings(repo)
    # Nothing was created through the link: neither the target folder nor a file in it.
    assert (elsewhere.exists(), dangling or list(elsewhere.iterdir()) == []) == (not dangling, True)


def test_a_file_at_rho_is_refused(tmp_path: Path) -> None:
    (tmp_path / ".rho").write_text("not a folder")
    pattern = _refused(tmp_path / ".rho", "is not a folder")
    with pytest.raises(CloudSettingsError, match=pattern):
        write_cloud_settings(tmp_path, SETTINGS)
    with pytest.raises(CloudSettingsError, match=pattern):
        read_cloud_settings(tmp_path)
    assert (tmp_path / ".rho").read_text() == "not a folder"


def test_a_link_at_the_settings_file_is_not_read_and_never_written_through(
    tmp_path: Path,
) -> None:
    target = tmp_path / "target.json"
    target.write_text(SETTINGS.model_dump_json())
    (tmp_path / ".rho").mkdir()
    (tmp_path / ".rho" / "cloud.json").symlink_to(target)
    path = tmp_path / ".rho" / "cloud.json"
    with pytest.raises(
        CloudSettingsError, match=_refused(path, "is a symbolic link; rho follows no link in .rho")
    ):
        read_cloud_settings(tmp_path)
    before = target.read_bytes()
    write_cloud_settings(tmp_path, CloudSettings(project_id="p-9"))
    assert target.read_bytes() == before
    assert not path.is_symlink()
    assert read_cloud_settings(tmp_path) == CloudSettings(project_id="p-9")


def test_a_folder_at_the_settings_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / ".rho" / "cloud.json").mkdir(parents=True)
    with pytest.raises(
        CloudSettingsError, match=_refused(tmp_path / ".rho" / "cloud.json", "is not a file")
    ):
        read_cloud_settings(tmp_path)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{", "not a JSON document"),
        (b"\xff", "not a JSON document"),
        ("[]", "input should be a valid dictionary or instance of CloudSettings"),
        ('{"schema_version": "rho.cloud/v2"}', "schema_version: input should be 'rho.cloud/v1'"),
        ('{"token_file": "x"}', "token_file: extra inputs are not permitted"),
        ('{"token": 7}', "token: input should be a valid string"),
        (
            '{"token": "hunter2 hunter2"}',
            "token has a space or a character outside printable ASCII",
        ),
        ('{"endpoint": "ftp://x"}', 'endpoint must be an http:// or https:// URL, not "ftp://x"'),
        ('{"project_id": ""}', "project id is blank"),
        (" " * (64 * 1024 + 1), "larger than 64 KiB"),
    ],
)
def test_an_invalid_settings_file_is_named_and_never_shows_a_token(
    tmp_path: Path, text: str | bytes, problem: str
) -> None:
    path = tmp_path / ".rho" / "cloud.json"
    path.parent.mkdir()
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    path.chmod(0o600)  # as rho writes it: a torn or hand-broken file of its own
    message = f"invalid Rho Cloud settings in {path}: {problem}"
    with pytest.raises(CloudSettingsError, match=rf"^{re.escape(message)}$") as caught:
        read_cloud_settings(tmp_path)
    assert "hunter2" not in str(caught.value)
    assert isinstance(caught.value, GraphError)
