"""The setup key: when a worktree's last setup still stands for the feature about to use it.

A digest of what runs (the shell command, or a library setup's name) and of the key files
(``--setup-key``: lockfiles) as they stand at the feature's start commit: their paths and blob
ids from one ``git ls-tree -r`` (a folder given counts every file in it). Two features that
start from commits whose lockfiles agree share a key; a changed lockfile gives a new one.

Decision: docs/decisions/0604-setup-and-copy.md
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ._inputs import LITERAL_PATHS

if TYPE_CHECKING:
    from ..git._repo import GitRepo

__all__ = ["setup_key"]

_DOMAIN = b"rho.setup-key/v1\0"


def setup_key(repo: GitRepo, start: str, identity: str, key_paths: Sequence[str]) -> str:
    """The setup key (64 hex digits) of *identity* and *key_paths* at commit *start*.

    Raises:
        GitOperationError: git could not list the start commit's tree.
    """
    listing = ""
    if key_paths:
        args = ("ls-tree", "-r", "-z", "--full-tree", start, "--", *sorted(key_paths))
        listing = repo.run(*args, env=LITERAL_PATHS)
    digest = hashlib.sha256(_DOMAIN)
    digest.update(identity.encode("utf-8", "surrogateescape") + b"\0")
    digest.update(listing.encode("utf-8", "surrogateescape"))
    return digest.hexdigest()
