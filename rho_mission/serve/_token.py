"""The token of ``rho serve``: read from ``--token-file``, or made at start and saved.

A made token is ``secrets.token_urlsafe(32)`` (256 random bits), written to
``<repo>/.rho/serve.token`` with mode 0600 by an atomic replace, in a ``.rho`` folder that is
checked not to be a link, made 0700 and excluded from git; each start makes a new one.

Decision: docs/decisions/0801-serve.md
"""

from __future__ import annotations

import secrets
from pathlib import Path

from ..records._places import rho_folder
from ._errors import TokenError

__all__ = ["MAX_TOKEN_CHARS", "MIN_TOKEN_CHARS", "TOKEN_FILE", "new_token", "read_token_file"]

TOKEN_FILE = "serve.token"
#: A token shorter than this is guessable; ours have 43 characters.
MIN_TOKEN_CHARS = 16
MAX_TOKEN_CHARS = 8192
_MAX_FILE_BYTES = 64 * 1024


def new_token(root: Path) -> tuple[str, Path]:
    """Make a random token, save it in ``<root>/.rho/serve.token`` and return it with the path.

    Raises:
        UnsafePathError: ``.rho`` is a symbolic link or not a folder.
        NotAGitRepositoryError: *root* is not a git work tree (``.rho/`` is excluded from git
            before the token is written, so that no ``git add -A`` commits it).
        OSError: the file cannot be written.
    """
    from taskstore import write_atomic

    from ..containment._folders import private_folder
    from ..git._exclude import RHO_PATTERN, add_exclude_line
    from ..git._repo import GitRepo

    folder = private_folder(rho_folder(root), root)
    # Without the repository's lock (which a running mission holds while it merges), as every
    # `rho task` write does: a line written twice by two writers at once excludes as well.
    add_exclude_line(GitRepo.open(root).common_dir, RHO_PATTERN)
    token = secrets.token_urlsafe(32)
    path = folder / TOKEN_FILE
    write_atomic(path, f"{token}\n".encode(), mode=0o600)
    return token, path


def read_token_file(path: Path) -> str:
    """The token held by the file at *path*, without surrounding white space.

    Raises:
        TokenError: the file cannot be read, is too large, is not UTF-8, or holds no usable
            token (see ``check_token``).
    """
    try:
        with path.open("rb") as handle:
            data = handle.read(_MAX_FILE_BYTES + 1)
    except OSError as exc:
        reason = (exc.strerror or str(exc)).lower()
        raise TokenError(f"cannot read token file {path}: {reason}") from None
    if len(data) > _MAX_FILE_BYTES:
        raise TokenError(f"token file {path} is larger than 64 KiB; a token is one short line")
    try:
        text = data.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise TokenError(f"token file {path} is not UTF-8 text") from None
    return check_token(text, f"token file {path}")


def check_token(token: str, origin: str) -> str:
    """Return *token* when it can serve as a bearer token; *origin* names it in messages.

    Raises:
        TokenError: it is empty, shorter than 16 or longer than 8192 characters, or holds a
            character other than printable ASCII without spaces (the message never repeats it).
    """
    if not token:
        raise TokenError(f"{origin} holds no token")
    if not all("!" <= char <= "~" for char in token):
        raise TokenError(f"{origin}: a token is printable ASCII without spaces")
    if len(token) < MIN_TOKEN_CHARS:
        raise TokenError(
            f"{origin}: the token is {len(token)} characters; at least {MIN_TOKEN_CHARS} are needed"
        )
    if len(token) > MAX_TOKEN_CHARS:
        raise TokenError(f"{origin}: the token is longer than {MAX_TOKEN_CHARS} characters")
    return token
