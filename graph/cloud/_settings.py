"""A repository's Rho Cloud settings: ``<repo>/.rho/cloud.json``, written once, read by uploads.

``rho cloud login`` saves the endpoint and the token, ``rho cloud connect`` the project id;
``rho cloud graph sync`` then needs no flag. The file is a `CloudSettings` document
(``rho.cloud/v1``), mode 0600 in a ``.rho`` folder of mode 0700, replaced atomically.

Only a file rho wrote is honoured: owned by the user and mode 0600 (a repository that commits
a ``cloud.json`` is checked out 0644, and the CLI refuses one git tracks), so an endpoint a
cloned repository carries never receives the user's token.

A token is a credential, so the file is reached without ever following a symbolic link:
``.rho`` is opened with ``O_NOFOLLOW`` (a link there is refused, as everywhere in rho), and the
file and its temporary sibling are opened, renamed and flushed relative to that open folder, so
a link swapped in between a check and a write cannot redirect the write either. OS, JSON and
pydantic errors become `CloudSettingsError` here. No message built here contains a token.

Decision: docs/decisions/0301-cloud-settings.md
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal
from urllib.parse import SplitResult, urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .._errors import quote
from .._io import write_atomic_at
from ._errors import CloudSettingsError

__all__ = [
    "CLOUD_SETTINGS_FILENAME",
    "MAX_TOKEN_CHARS",
    "CloudSettings",
    "check_endpoint",
    "check_project_id",
    "check_token",
    "cloud_settings_path",
    "read_cloud_settings",
    "token_problem",
    "write_cloud_settings",
]

CLOUD_SETTINGS_FILENAME = "cloud.json"
MAX_TOKEN_CHARS = 8192
MAX_ENDPOINT_CHARS = 2048
MAX_PROJECT_ID_CHARS = 200
# A settings file is a few hundred bytes; the bound keeps a stray large file from being read.
_MAX_FILE_BYTES = 64 * 1024
_SPACE_OR_CONTROL = re.compile(r"[\s\x00-\x1f\x7f-\x9f]")


def token_problem(token: str) -> str | None:
    """Why *token* cannot be sent as a bearer token, or None (the message never shows it)."""
    if not token.strip():
        return "token is blank"
    # A header carries printable ASCII only; httpx would fail with the token in its message.
    if not all("!" <= char <= "~" for char in token):
        return "token has a space or a character outside printable ASCII"
    if len(token) > MAX_TOKEN_CHARS:
        return f"token is {len(token)} characters; the limit is {MAX_TOKEN_CHARS}"
    return None


def check_token(token: str) -> str:
    """Return *token* if it can be a Rho Cloud bearer token.

    Raises:
        CloudSettingsError: blank, longer than 8192 characters, or a character outside
            printable ASCII (spaces and line breaks included).
    """
    problem = token_problem(token)
    if problem is not None:
        raise CloudSettingsError(problem)
    return token


def check_project_id(project_id: str) -> str:
    """Return *project_id* if it can name a Rho Cloud project.

    Raises:
        CloudSettingsError: blank, longer than 200 characters, or holding a space or a
            control character.
    """
    if not project_id.strip():
        raise CloudSettingsError("project id is blank")
    if len(project_id) > MAX_PROJECT_ID_CHARS:
        raise CloudSettingsError(
            f"project id is {len(project_id)} characters; the limit is {MAX_PROJECT_ID_CHARS}"
        )
    _refuse_space_or_control("project id", project_id)
    return project_id


def _refuse_space_or_control(what: str, value: str) -> None:
    found = _SPACE_OR_CONTROL.search(value)
    if found is not None:
        # The value is not shown: a control character would garble the message's line.
        raise CloudSettingsError(
            f"{what} holds a space or a control character (U+{ord(found.group()):04X})"
        )


def check_endpoint(endpoint: str) -> str:
    """Return *endpoint* if it is the base URL of a Rho Cloud: ``http(s)://host[:port][/path]``.

    A user name or password, a query or a fragment are refused without showing the URL: they
    are where secrets hide, and the token is the only credential rho sends.

    Raises:
        CloudSettingsError: not such a URL.
    """
    if len(endpoint) > MAX_ENDPOINT_CHARS:
        raise CloudSettingsError(
            f"endpoint is {len(endpoint)} characters; the limit is {MAX_ENDPOINT_CHARS}"
        )
    _refuse_space_or_control("endpoint", endpoint)
    parts = _split(endpoint)
    if parts is None:
        raise CloudSettingsError("endpoint is not a valid URL")
    if "@" in parts.netloc:
        raise CloudSettingsError("endpoint must not carry a user name or password")
    if "?" in endpoint or "#" in endpoint:
        raise CloudSettingsError("endpoint must not have a query or a fragment")
    if parts.scheme.lower() not in {"http", "https"} or not parts.hostname:
        raise CloudSettingsError(
            f"endpoint must be an http:// or https:// URL, not {quote(endpoint)}"
        )
    return endpoint


def _split(endpoint: str) -> SplitResult | None:
    """*endpoint* split by urllib, or None when it cannot be (a bad port, a broken IPv6 host)."""
    try:
        parts = urlsplit(endpoint)
        parts.port  # noqa: B018 -- the property parses the port, or raises
    except ValueError:
        return None
    return parts


class CloudSettings(BaseModel):
    """The Rho Cloud settings of one repository: endpoint, project id and token, each optional.

    ``token`` is left out of ``repr`` (a traceback under ``--debug`` shows no credential).
    Values are checked as `check_endpoint`, `check_project_id` and `check_token` check them,
    so a hand-edited file is held to the rules of ``rho cloud login`` and ``connect``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal["rho.cloud/v1"] = "rho.cloud/v1"
    endpoint: str | None = None
    project_id: str | None = None
    token: str | None = Field(default=None, repr=False)

    @field_validator("endpoint")
    @classmethod
    def _endpoint(cls, value: str | None) -> str | None:
        return None if value is None else _as_value_error(check_endpoint, value)

    @field_validator("project_id")
    @classmethod
    def _project_id(cls, value: str | None) -> str | None:
        return None if value is None else _as_value_error(check_project_id, value)

    @field_validator("token")
    @classmethod
    def _token(cls, value: str | None) -> str | None:
        return None if value is None else _as_value_error(check_token, value)


def _as_value_error(check: Callable[[str], str], value: str) -> str:
    # pydantic reports ValueError raised by a validator; CloudSettingsError is not one.
    try:
        return check(value)
    except CloudSettingsError as exc:
        raise ValueError(str(exc)) from None


def cloud_settings_path(repo_root: str | os.PathLike[str]) -> Path:
    """Where the settings of the repository at *repo_root* live: ``<root>/.rho/cloud.json``."""
    return Path(repo_root, ".rho", CLOUD_SETTINGS_FILENAME)


def read_cloud_settings(repo_root: str | os.PathLike[str]) -> CloudSettings | None:
    """Read the settings of the repository at *repo_root*; None when there are none yet.

    Raises:
        CloudSettingsError: ``.rho`` or the file is a symbolic link (or ``.rho`` not a
            folder), the file cannot be read, or it is not a valid ``rho.cloud/v1`` document.
    """
    path = cloud_settings_path(repo_root)
    with _rho_folder(Path(repo_root), create=False) as folder:
        if folder is None:
            return None
        data = _read_file(folder, path)
    if data is None:
        return None
    return _parse(data, path)


def write_cloud_settings(repo_root: str | os.PathLike[str], settings: CloudSettings) -> Path:
    """Write *settings* for the repository at *repo_root*, atomically, mode 0600; return the path.

    ``.rho`` is created (0700) when missing and set to 0700 when present. A temporary file in
    ``.rho`` is written, flushed and renamed over ``cloud.json``, then the folder is flushed,
    so a crash leaves the old settings or the new ones.

    Raises:
        CloudSettingsError: ``.rho`` is a symbolic link or not a folder, or the write fails.
    """
    path = cloud_settings_path(repo_root)
    text = settings.model_dump_json(indent=2, exclude_none=True) + "\n"
    with _rho_folder(Path(repo_root), create=True) as folder:
        assert folder is not None  # created on demand
        try:
            write_atomic_at(folder, CLOUD_SETTINGS_FILENAME, text.encode())
        except OSError as exc:
            raise CloudSettingsError(f"cannot write {path}: {_reason(exc)}", str(path)) from None
    return path


@contextlib.contextmanager
def _rho_folder(root: Path, *, create: bool) -> Iterator[int | None]:
    """An open descriptor of ``<root>/.rho``, never through a link; None if missing."""
    path = root / ".rho"
    if create:
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o700)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except FileNotFoundError:
        if create:
            raise CloudSettingsError(f"cannot create {path}", str(path)) from None
        yield None
        return
    except OSError as exc:
        raise _unusable(path, exc) from None
    try:
        if create:
            os.fchmod(fd, 0o700)
        yield fd
    finally:
        os.close(fd)


def _unusable(path: Path, exc: OSError) -> CloudSettingsError:
    if exc.errno in {errno.ELOOP, errno.ENOTDIR} and os.path.islink(path):
        problem = "it is a symbolic link; rho follows no link in .rho"
    elif exc.errno == errno.ENOTDIR:
        problem = "it is not a folder"
    else:
        return CloudSettingsError(f"cannot open {path}: {_reason(exc)}", str(path))
    return CloudSettingsError(f"refusing to use {path}: {problem}", str(path))


def _read_file(folder: int, path: Path) -> bytes | None:
    try:
        fd = os.open(CLOUD_SETTINGS_FILENAME, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=folder)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _unusable(path, exc) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise CloudSettingsError(f"refusing to use {path}: it is not a file", str(path))
        if info.st_uid != os.geteuid() or info.st_mode & 0o077:
            # rho writes it 0600 as the user; a clone checks a committed one out 0644.
            raise CloudSettingsError(
                f"refusing to use {path}: it is not a file rho wrote (yours, mode 0600); "
                "settings a repository carries are never trusted: remove it, then "
                "'rho cloud login'",
                str(path),
            )
        with os.fdopen(os.dup(fd), "rb") as handle:
            return handle.read(_MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise CloudSettingsError(f"cannot read {path}: {_reason(exc)}", str(path)) from None
    finally:
        os.close(fd)


def _parse(data: bytes, path: Path) -> CloudSettings:
    where = f"invalid Rho Cloud settings in {path}"
    if len(data) > _MAX_FILE_BYTES:
        raise CloudSettingsError(f"{where}: larger than 64 KiB", str(path))
    try:
        return CloudSettings.model_validate(json.loads(data.decode("utf-8")))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise CloudSettingsError(f"{where}: not a JSON document", str(path)) from None
    except ValidationError as exc:
        raise CloudSettingsError(f"{where}: {_first_problem(exc)}", str(path)) from None


def _first_problem(exc: ValidationError) -> str:
    error = exc.errors()[0]
    if error["type"] == "value_error":  # our own checks: the message names the field
        return error["msg"].removeprefix("Value error, ")
    # Only pydantic's message, never the input: the input may be a token.
    field = ".".join(str(part) for part in error["loc"])
    message = error["msg"][:1].lower() + error["msg"][1:]
    return f"{field}: {message}" if field else message


def _reason(exc: OSError) -> str:
    return (exc.strerror or str(exc)).lower()
