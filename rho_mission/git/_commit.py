"""A feature's result: what its worktree holds, committed; one ``git status`` decides the rest.

``commit_worktree`` is the body of ``GitRepo.commit_all``. Its first call, ``git status
--porcelain=v2 --branch``, names HEAD's commit and branch and lists every change, untracked and
ignored file at once: a worker that changed nothing costs that one git process (no staging, no
commit, no ref read). The result also says what the feature branch holds afterwards and whether
the worktree was spotless, so that the attempt and the worktree pool skip what they now know.

That status is the feature's one pass over its files. What follows reads the index, never the
tree again: the listed paths are staged by name, and the commit is made from the index by
``write-tree`` + ``commit-tree`` + a compare-and-swap of HEAD (``update-ref``), because ``git
commit`` refreshes the whole index first (an ``lstat`` of every tracked file) and has no option
that skips it. The commit is byte for byte the one ``git commit --cleanup=whitespace`` makes:
the message is cleaned here the way git cleans it (``cleaned_message``).

Decision: docs/decisions/0602-git-per-feature.md
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Protocol

from .._errors import FeatureResultError

__all__ = [
    "LITERAL_PATHSPECS",
    "CommitResult",
    "Repository",
    "WorktreeResult",
    "WorktreeStatus",
    "changed_files",
    "cleaned_message",
    "commit_worktree",
    "listed_entries",
    "parse_status",
    "path_text",
    "read_status",
    "spared_by",
    "stage_all",
]

_UNRELATED = (
    "the worktree's HEAD does not descend from the feature's start commit; "
    "its work cannot be merged"
)

# Ignored files are listed too (a directory that a pattern matches as one entry, not walked):
# only a worktree with nothing at all beyond HEAD may skip its next "git clean".
# The stat data it refreshes is not written back unless asked (read_status): the index is
# rewritten anyway by the "add" that follows, or was just written by the move before it.
_NO_WRITE_BACK = "--no-optional-locks"
_STATUS = (
    "status",
    "--porcelain=v2",
    "--branch",
    "--no-ahead-behind",
    "--no-renames",
    "-z",
    "--untracked-files=all",
    "--ignored=matching",
    # A submodule's commit counts; its work tree is not entered (no git runs in a nested
    # repository, whose config a task may have written).
    "--ignore-submodules=dirty",
)
_NO_COMMIT = "(initial)"
_NO_BRANCH = ("(detached)", "(unknown)")


class Repository(Protocol):
    """What this module uses of ``GitRepo`` (which imports this module: no import back)."""

    def run(
        self, *args: str, cwd: Path | None = None, env: Mapping[str, str] | None = None
    ) -> str: ...

    def run_status(
        self, *args: str, cwd: Path | None = None, env: Mapping[str, str] | None = None
    ) -> tuple[int, str, str]: ...

    def locked(self, timeout: float | None = None) -> contextlib.AbstractContextManager[None]: ...

    def commit_id(self, ref: str) -> str: ...

    def is_ancestor(self, ancestor: str, descendant: str) -> bool: ...

    def branch_commit(self, name: str) -> str | None: ...

    def move_branch(self, name: str, new: str, expected: str | None, message: str = "") -> None: ...

    def identity_env(self) -> dict[str, str]: ...

    def commit_tree(self, tree: str, parents: Sequence[str], message: str) -> str: ...


class CommitResult(NamedTuple):
    """What a feature's worktree holds beyond its start commit.

    ``commit_id`` is the branch head when it moved past the start commit (committed by rho or by
    the worker itself), else None; ``files_changed`` lists the paths that differ from the start
    commit (added, modified, deleted), sorted.
    """

    commit_id: str | None
    files_changed: list[str]


@dataclass(frozen=True, slots=True)
class WorktreeStatus:
    """One ``git status`` of a worktree.

    ``head`` is HEAD's commit (None on a branch with no commit yet), ``branch`` the short name
    of the branch HEAD is on (None when detached); ``changed``: something to stage (a tracked
    change or an untracked file); ``spotless``: nothing listed at all, not even an ignored file;
    ``stageable``: every entry is a plain file change or untracked file that ``add --all``
    stages whole (no ignored file, no submodule, no conflict, no untracked folder git does not
    walk, such as a nested repository): once all is committed, nothing is left beyond HEAD.
    ``unstaged``: when stageable and nothing is staged (the index is HEAD's), the paths listed:
    what ``add --all`` stages, and exactly the paths a commit of everything changes; else None.
    ``differs``: when stageable, whether staging every entry surely gives a tree other than
    HEAD's (some entry's file is new, gone or unlike HEAD's); False when each entry was staged
    and then edited again, so that the file may be HEAD's once more.
    """

    head: str | None
    branch: str | None
    changed: bool
    spotless: bool
    stageable: bool = False
    unstaged: tuple[str, ...] | None = None
    differs: bool = False


@dataclass(frozen=True, slots=True)
class WorktreeResult:
    """``CommitResult`` plus what the caller may skip reading again.

    ``branch_head`` is what the feature branch holds afterwards, trustworthy when
    ``branch_known`` (False when the worker left the branch and rho did not move it);
    ``spotless``: the worktree held nothing beyond HEAD (no change, untracked or ignored file);
    ``worker_committed``: HEAD had moved past the start commit before rho's commit, so the
    result holds commits rho did not make (a worker's own ``git commit``, or history it
    brought); False when the only new commit, if any, is rho's own, made from its own index.
    """

    commit_id: str | None
    files_changed: list[str]
    branch_head: str | None
    branch_known: bool
    spotless: bool
    worker_committed: bool = False

    def commit_result(self) -> CommitResult:
        """The public part: the commit and the changed files."""
        return CommitResult(self.commit_id, self.files_changed)


def read_status(
    repo: Repository, worktree: Path, spared: tuple[str, ...] = (), *, write_back: bool = False
) -> WorktreeStatus:
    """Run ``git status`` once in *worktree* and parse it (*spared*: see ``parse_status``);
    with *write_back*, git may write the index it refreshed (``WorktreePool.index_unwritten``).

    Raises:
        GitOperationError: git refused (for example: *worktree* is no work tree any more).
    """
    args = _STATUS if write_back else (_NO_WRITE_BACK, *_STATUS)
    return parse_status(repo.run(*args, cwd=worktree), spared)


def listed_entries(repo: Repository, worktree: Path) -> list[tuple[str, str]]:
    """Every entry ``git status`` lists in *worktree*: (kind, path), kind one of ``1``, ``2``
    (changes), ``u`` (unmerged), ``?`` (untracked), ``!`` (ignored; a folder a pattern matches
    whole is one entry, its path ending in ``/``).

    Raises:
        GitOperationError: git refused.
    """
    found: list[tuple[str, str]] = []
    records = iter(repo.run(_NO_WRITE_BACK, *_STATUS, cwd=worktree).split("\0"))
    for record in records:
        if record and not record.startswith("#"):
            found.append((record[0], _entry_path(record)))
            if record[0] == "2":
                next(records, None)
    return found


def _entry_path(record: str) -> str:
    # The path is the last field: after 8 fields for "1", 9 for "2", 10 for "u", 1 for "?"/"!".
    fields = {"1": 8, "2": 9, "u": 10}.get(record[0], 1)
    return record.split(" ", fields)[-1]


def spared_by(path: str, spared: tuple[str, ...]) -> bool:
    """Whether *path* (as git lists it; a folder ends in ``/``) is one of *spared* or lies in
    one of them."""
    bare = path.rstrip("/")
    return any(bare == kept or bare.startswith(kept + "/") for kept in spared)


def parse_status(out: str, spared: tuple[str, ...] = ()) -> WorktreeStatus:
    """Parse ``git status --porcelain=v2 --branch -z`` output.

    The entries of *spared* paths (and of what lies in them) are left out: a worktree's kept
    setup outputs and copied files (``rho_mission.setup``) are neither work nor leftovers. A
    tracked file among them that differs from HEAD is not staged either, but the worktree is
    then neither spotless nor left at its HEAD by a commit (not ``stageable``).
    """
    head: str | None = None
    branch: str | None = None
    kinds: set[str] = set()
    whole = True  # every entry is one add --all stages entirely
    listed: list[str] | None = []  # while every entry is stageable by name: their paths
    index_is_head = True  # no entry has a staged change
    differs = False  # some entry's file surely is not HEAD's
    spared_tracked = False  # a tracked file under a spared path differs from HEAD
    records = iter(out.split("\0"))
    for record in records:
        if record.startswith("# branch.oid "):
            value = record.removeprefix("# branch.oid ")
            head = None if value == _NO_COMMIT else value
        elif record.startswith("# branch.head "):
            value = record.removeprefix("# branch.head ")
            branch = None if value in _NO_BRANCH else value
        elif record and not record.startswith("#"):
            if spared and spared_by(_entry_path(record), spared):
                # Never staged; but a tracked file there that differs leaves the worktree other
                # than its HEAD: not spotless, so that its next move checks every file out.
                spared_tracked = spared_tracked or record[0] in "12u"
                if record[0] == "2":
                    next(records, None)
                continue
            kinds.add(record[0])
            whole = whole and _stageable(record)
            path = _record_path(record) if whole else None
            if path is None:
                listed = None
            elif listed is not None:
                listed.append(path)
            index_is_head = index_is_head and not (record[0] == "1" and record[2] != ".")
            differs = differs or _differs_from_head(record)
            if record[0] == "2":
                next(records, None)  # a rename's original path is a record of its own
    whole = whole and not spared_tracked
    unstaged = tuple(listed) if listed is not None and index_is_head else None
    changed = bool(kinds - {"!"})
    spotless = not kinds and not spared_tracked
    return WorktreeStatus(head, branch, changed, spotless, whole, unstaged, whole and differs)


def _differs_from_head(record: str) -> bool:
    # "? path": a new file. "1 XY ...", X the index against HEAD, Y the file against the index:
    # one of them unchanged ("."), the file differs from HEAD. Both changed ("MM"): it was
    # staged, then edited, perhaps back to HEAD's content.
    return record[0] == "?" or (record[0] == "1" and "." in record[2:4])


def _record_path(record: str) -> str | None:
    # "? path" or "1 XY sub mH mI mW hH hI path"; None for any other entry (a rename, "2",
    # which "--no-renames" leaves out, would need its original path staged too).
    if record[0] == "?":
        return record[2:]
    fields = record.split(" ", 8)
    return fields[8] if record[0] == "1" and len(fields) == 9 else None


def _stageable(record: str) -> bool:
    # "1 XY N... ..." and "2 XY N... ...": an ordinary change (a submodule's is "S..."); "? path":
    # an untracked file (with --untracked-files=all, a folder is listed only when git does not
    # walk it: a nested repository). Ignored ("!") and unmerged ("u") entries are not.
    if record[0] in "12":
        fields = record.split(" ", 3)
        return len(fields) > 2 and fields[2].startswith("N")
    return record[0] == "?" and not record.endswith("/")


def commit_worktree(
    repo: Repository,
    worktree: Path,
    message: str,
    *,
    base: str | None = None,
    branch: str | None = None,
    spared: tuple[str, ...] = (),
    write_back: bool = False,
) -> WorktreeResult:
    """Commit what *worktree* holds, its HEAD and its uncommitted changes, on *branch*.

    ``GitRepo.commit_all`` documents the behaviour; this also returns what the feature branch
    holds afterwards and whether the worktree was spotless. *spared* paths (repository-relative,
    no trailing slash) are never staged, and do not count against spotless. *write_back*: the
    status may write the index it refreshed (``read_status``).

    Raises:
        UnknownRefError: *base* names no commit.
        FeatureResultError: HEAD does not descend from *base*, or names no commit at all.
        GitOperationError: staging or committing failed (for example: HEAD moved meanwhile).
    """
    status = read_status(repo, worktree, spared, write_back=write_back)
    if status.head is None:
        raise FeatureResultError(_UNRELATED)  # an orphan branch: HEAD names no commit yet
    start = status.head if base is None else repo.commit_id(base)
    on_branch = branch is None or status.branch == branch
    if not on_branch:
        # rho's commit must move no branch of the worker's: detach HEAD where it stands.
        repo.run("update-ref", "--no-deref", "HEAD", status.head, cwd=worktree)
    committed = (
        _commit_changes(repo, worktree, message, status, status.head, spared)
        if status.changed
        else None
    )
    head = committed or status.head
    known = branch is not None
    if head == start:
        # On the branch, it holds HEAD; off it, whatever the worker last put there.
        return WorktreeResult(None, [], head, known and on_branch, status.spotless)
    # rho's own commit on a HEAD still at the start descends from it: its parent is the start.
    if not (committed and status.head == start) and not repo.is_ancestor(start, head):
        raise FeatureResultError(_UNRELATED)
    if not on_branch and branch is not None:
        with repo.locked():
            repo.move_branch(branch, head, repo.branch_commit(branch), message)
    # Everything listed was staged whole and committed: the worktree now holds HEAD and nothing
    # else, so its next use skips the clean and the second checkout.
    tidy = status.spotless or (committed is not None and status.stageable)
    if committed and status.head == start and status.unstaged is not None:
        # The commit holds what the status listed, on top of the start: no diff to run.
        files = sorted({path_text(name) for name in status.unstaged})
    else:
        files = changed_files(repo, start, head)
    return WorktreeResult(head, files, head, known, tidy, status.head != start)


def _commit_changes(
    repo: Repository,
    worktree: Path,
    message: str,
    status: WorktreeStatus,
    parent: str,
    spared: tuple[str, ...] = (),
) -> str | None:
    """Stage everything and commit it from the index on *parent* (HEAD as *status* read it);
    the new HEAD, or None when the index then holds HEAD's tree (nothing to commit).

    When *status* says staging surely changes the tree (``differs``), no git process asks
    whether it did. HEAD moves only if it still holds *parent* (a compare-and-swap, under the
    repository lock).
    """
    _stage(repo, worktree, status, spared)
    if not status.differs and not _staged(repo, worktree):
        return None  # only what cannot be staged (a submodule's own changes), or HEAD's again
    tree = repo.run("write-tree", cwd=worktree).strip()
    cleaned = cleaned_message(message)
    # commit-tree's -m ends the message's last line itself.
    commit = repo.commit_tree(tree, [parent], cleaned.removesuffix("\n"))
    # The reflog's entry names the commit as "git commit" does: by its first line.
    subject = cleaned.split("\n", 1)[0]
    with repo.locked():
        repo.run("update-ref", "-m", f"commit: {subject}", "HEAD", commit, parent, cwd=worktree)
    return commit


def cleaned_message(message: str) -> str:
    """*message* as ``git commit --cleanup=whitespace`` records it: the trailing whitespace of
    each line (space, tab, CR) removed, blank lines at the start and end dropped, runs of blank
    lines made one, every line ended by a newline (an empty message stays empty).

    Lines starting with ``#`` are kept: a task's message may begin with one.
    """
    lines: list[str] = []
    blank_before = False
    for line in message.split("\n"):
        kept = line.rstrip(" \t\r")  # git's isspace(): also "\n", which split took
        if not kept:
            blank_before = bool(lines)
            continue
        if blank_before:
            lines.append("")
        blank_before = False
        lines.append(kept)
    return "".join(line + "\n" for line in lines)


# The most argument bytes that name the paths to stage; beyond, "add --all" walks the tree.
_PATHS_BYTES = 64 * 1024
# Every name literal: a listed "*.txt" or ":(top)x" is that one file, never a pattern. The other
# global pathspec settings are switched off, as git refuses them together with this one.
LITERAL_PATHSPECS = {
    "GIT_LITERAL_PATHSPECS": "1",
    "GIT_GLOB_PATHSPECS": "0",
    "GIT_NOGLOB_PATHSPECS": "0",
    "GIT_ICASE_PATHSPECS": "0",
}


def _stage(
    repo: Repository, worktree: Path, status: WorktreeStatus, spared: tuple[str, ...] = ()
) -> None:
    """Stage what *status* listed: by name when it is all unstaged changes and new files (git
    then looks at those paths only, not at the whole tree a second time), else ``add --all``
    (the *spared* paths excluded by name: a copied ``.env`` no ``.gitignore`` covers stays out).
    A change the worker staged itself may be a removal from the index, which no name matches."""
    paths = status.unstaged
    size = sum(len(path) + 1 for path in paths) if paths is not None else _PATHS_BYTES
    if paths is None or size >= _PATHS_BYTES:
        stage_all(repo, worktree, spared)
        return
    # "git add <path>" of a deleted file stages its removal.
    repo.run("add", "--", *paths, cwd=worktree, env=LITERAL_PATHSPECS)


def stage_all(repo: Repository, worktree: Path, spared: tuple[str, ...] = ()) -> None:
    """``git add --all`` in *worktree*: every change, removals and new files included, but the
    *spared* paths (excluded by name: a copied ``.env`` no ``.gitignore`` covers stays out)."""
    excluded = [f":(top,literal,exclude){path}" for path in spared]
    repo.run("add", "--all", *(["--", ":/", *excluded] if excluded else []), cwd=worktree)


def _staged(repo: Repository, worktree: Path) -> bool:
    return repo.run_status("diff", "--cached", "--quiet", cwd=worktree)[0] == 1


def changed_files(repo: Repository, start: str, head: str) -> list[str]:
    """The paths that differ between commits *start* and *head* (added, modified, deleted),
    sorted, as a feature's handoff lists them."""
    out = repo.run("diff", "--name-only", "--no-renames", "-z", start, head)
    return sorted({path_text(name) for name in out.split("\0") if name})


# C escapes git itself uses when it quotes a path (``core.quotePath``).
_ESCAPES = {0x07: "a", 0x08: "b", 0x09: "t", 0x0A: "n", 0x0B: "v", 0x0C: "f", 0x0D: "r"}
# What git quotes in a path even with core.quotePath off (the C0 controls and DEL), and what a
# terminal would not show as written: the C1 controls, the line and paragraph separators, the
# bidirectional overrides and isolates (the characters ``cli._plain.shown`` escapes).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def path_text(name: str) -> str:
    """A path from git's output (undecodable bytes kept as surrogates) as text JSON can hold.

    A path that is UTF-8 stays as it is; one that is not (any bytes git accepts), one that
    starts with a double quote, or one that holds a control character (a line break, an
    escape sequence, a right-to-left override) is written the way git quotes it (with
    ``core.quotePath`` on: every byte outside printable ASCII): in double quotes, with C escapes
    (``"bad\\377.txt"``, ``"x\\033[2J\\n.txt"``). So every stored path is valid UTF-8, names
    one file, and is one line that no terminal obeys: a task chooses its files' names, and
    they reach rho's lines (a feature's error, a log's notes, a resolver's prompt).
    """
    raw = name.encode("utf-8", "surrogateescape")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return _quoted(raw)
    return _quoted(raw) if text.startswith('"') or _CONTROL.search(text) else text


def _quoted(raw: bytes) -> str:
    parts = ['"']
    for byte in raw:
        if byte in (0x22, 0x5C):  # " and \
            parts.append("\\" + chr(byte))
        elif byte in _ESCAPES:
            parts.append("\\" + _ESCAPES[byte])
        elif 0x20 <= byte < 0x7F:
            parts.append(chr(byte))
        else:
            parts.append(f"\\{byte:03o}")
    parts.append('"')
    return "".join(parts)
