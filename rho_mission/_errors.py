"""Errors raised by the mission engine and its git layer.

The tree::

    MissionError                    root; ``exit_code`` is what ``rho`` exits with (default 2)
    ├── InvalidMissionError         a mission, its waves or its config are refused (also ValueError)
    │   ├── NothingToRunError       every task a mission would run is completed or held (exit 0)
    │   ├── MissionNotFoundError    a name matches no mission, or a prefix several (LookupError)
    │   └── DaskUnavailableError    the Dask executor without ``distributed`` installed
    ├── FeatureFailedError          a worker reports that its feature failed (exit 1)
    │   ├── FeatureResultError      what a worktree holds cannot be taken as its feature's work
    │   ├── WorktreeTamperedError   a feature's worktree is not the folder rho made for it
    │   └── QuarantineRefusedError  a sandboxed task's new objects are not sound git objects
    ├── PlanningFailedError         the planning stage failed: the planner or its plan (exit 1)
    ├── NotAGitRepositoryError      a path lies in no git work tree
    ├── UnknownRefError             a ref names no commit (also LookupError)
    ├── BranchCheckedOutError       refusing to move a branch that a work tree has checked out
    ├── RepositoryLockTimeoutError  the repository-wide lock stayed held (also TimeoutError)
    ├── UnsafePathError             a symbolic link (or a file) where rho expects its own folder
    ├── RefMovedError               a ref rho owns is not where rho last recorded it
    ├── MergeConflictError          two branches change the same lines; ``.files`` names them
    ├── MergeRefusedError           ``rho mission merge`` would lose or tangle work; nothing changed
    ├── PickRefusedError            ``--only`` tasks cannot be taken apart from the rest
    ├── MissionRunningError         a command that needs a mission at rest finds it running
    ├── CleanRefusedError           a clean would lose unmerged work; nothing was removed
    ├── TaskLeasedError             a task is leased to another mission that holds it
    ├── StoreNotFoundError          the task store to project does not exist
    ├── SignedPlanError             the signed plan is refused, or the task store is not what it
    │                               allows (exit 1); ``.code`` is the verifier's failure code
    ├── GitOperationError           a git command failed; ``.stderr`` holds git's own words
    ├── GitConfigChangedError       git's configuration changed while the mission ran (exit 1)
    └── ServeError                  ``rho serve`` refuses a request (``serve._errors``: its
                                    HTTP subtree, ``status`` 400, 401, 404 or 500)

Outside it, on purpose: the CLI's ``CliError`` (a message and exit 2, for what click parsed)
and the HTTP clients' ``ClientError`` tree (``client``), whose callers hold no mission.

Git's own failures are translated into this tree in one place (``git._repo.GitRepo.run``).
Messages are lowercase, carry no trailing period, and quote refs and branches as JSON strings.

Decision: docs/decisions/0901-layers.md
"""

from __future__ import annotations

from collections.abc import Sequence

# The task store's quoting: one spelling of a quoted id or ref in every message of rho.
from taskstore import quote

__all__ = [
    "BranchCheckedOutError",
    "CleanRefusedError",
    "DaskUnavailableError",
    "FeatureFailedError",
    "FeatureResultError",
    "GitConfigChangedError",
    "GitOperationError",
    "InvalidMissionError",
    "MergeConflictError",
    "MergeRefusedError",
    "MissionError",
    "MissionNotFoundError",
    "MissionRunningError",
    "NotAGitRepositoryError",
    "NothingToRunError",
    "PickRefusedError",
    "PlanningFailedError",
    "QuarantineRefusedError",
    "RefMovedError",
    "RepositoryLockTimeoutError",
    "SignedPlanError",
    "StoreNotFoundError",
    "TaskLeasedError",
    "UnknownRefError",
    "UnsafePathError",
    "WorktreeTamperedError",
    "quote",
]


class MissionError(Exception):
    """Raised for every failure of a mission; the root of this tree."""

    #: The exit code of ``rho`` when this error ends a command: 2 means bad input.
    exit_code: int = 2


class InvalidMissionError(MissionError, ValueError):
    """Raised when a mission, its waves or its configuration are refused before any work starts."""


class NothingToRunError(InvalidMissionError):
    """Every task a mission would run is completed or held by the store's statuses.

    Not a mistake of the caller's: the CLI says it and exits 0, having created nothing.
    """


class FeatureFailedError(MissionError):
    """Raised by a worker when its feature failed; the engine records the message as its error."""

    exit_code = 1


class PlanningFailedError(MissionError):
    """Raised when a mission's planning stage failed: the planner, or the plan it wrote.

    The mission is recorded ``failed`` in its planning stage, with the planner's log.
    """

    exit_code = 1


class FeatureResultError(FeatureFailedError):
    """Raised when what a worktree holds cannot be taken as its feature's work.

    For example a worker that checked out history not built on the feature's start commit:
    merging it would bring in unrelated work, and leaving it out would lose it silently.
    """


class WorktreeTamperedError(FeatureFailedError):
    """Raised instead of running git in a worktree that is no longer the folder rho made.

    Its task replaced the folder (a link, another folder) or the git state rho recorded for it
    (its git directory, a link where git appends its logs): git run there would write wherever
    the task pointed it. Nothing was run there; the feature fails.
    """

    def __init__(self, path: object, problem: str) -> None:
        super().__init__(f"worktree {path} was tampered with: {problem}; rho ran no git there")
        self.path = str(path)


class GitConfigChangedError(MissionError):
    """Raised instead of running git once a configuration file it reads changed mid-mission.

    A task may have written it (a filter, a driver, a ``core.*`` command for rho's git to
    run); rho runs no git with it. The feature whose step met it fails, and so does every git
    step after it: the mission ends at its next join. ``.path`` names the file.
    """

    exit_code = 1

    def __init__(self, path: object) -> None:
        super().__init__(
            f"git's configuration changed while the mission ran: {path}; rho ran no git with "
            "it (a task may have written it: read it before the next mission)"
        )
        self.path = str(path)


class QuarantineRefusedError(FeatureFailedError):
    """Raised when what a sandboxed task left in its object quarantine is not admitted.

    A link, a device or a folder where an object goes, an object whose hash is not its name,
    a pack git refuses, or too much in all: nothing of it enters the repository; the attempt
    fails.
    """

    def __init__(self, problem: str) -> None:
        super().__init__(f"the task's new git objects were refused: {problem}")
        self.problem = problem


class NotAGitRepositoryError(MissionError):
    """Raised when a path lies in no git work tree (or in a bare repository)."""

    def __init__(self, path: str, what: str = "git repository") -> None:
        super().__init__(f"not a {what}: {path}")
        self.path = path


class UnknownRefError(MissionError, LookupError):
    """Raised when a ref (branch, tag, sha, ``HEAD~2``...) names no commit."""

    def __init__(self, ref: str) -> None:
        super().__init__(f"unknown git ref {quote(ref)}")
        self.ref = ref

    def __str__(self) -> str:
        # LookupError would repr() the message; keep it plain.
        return str(self.args[0])


class BranchCheckedOutError(MissionError):
    """Raised instead of moving a branch that a work tree has checked out.

    Moving it would make that work tree look as if its files had changed under the user.
    """

    def __init__(self, branch: str, worktree: str) -> None:
        super().__init__(
            f"branch {quote(branch)} is checked out at {worktree}; refusing to move it"
        )
        self.branch = branch
        self.worktree = worktree


class RepositoryLockTimeoutError(MissionError, TimeoutError):
    """Raised when the repository-wide lock is still held by someone else after the timeout."""

    def __init__(self, lock_path: str, timeout: float) -> None:
        super().__init__(f"repository lock {lock_path} still held after {timeout:g}s")
        self.lock_path = lock_path
        self.timeout = timeout


class MergeConflictError(MissionError):
    """Raised when merging two branches conflicts; ``files`` lists the conflicted paths, sorted."""

    def __init__(self, files: Sequence[str], *, target: str = "", source: str = "") -> None:
        self.files = sorted(set(files))
        super().__init__(f"merge conflict in {', '.join(self.files)}")
        self.target = target
        self.source = source


class GitOperationError(MissionError):
    """Raised when a git command fails for a reason this tree does not name more precisely.

    The message is ``git <command> failed: <first line of git's stderr>``; ``command`` holds the
    whole argument list, ``status`` the exit code and ``stderr`` git's complete error output.
    """

    def __init__(self, command: Sequence[str], status: int | None, stderr: str) -> None:
        self.command = list(command)
        self.status = status
        self.stderr = stderr
        super().__init__(f"git {_verb(self.command)} failed: {_first_line(stderr, status)}")


def _verb(command: Sequence[str]) -> str:
    # Skip "git", "-C PATH" and "-c KEY=VALUE" so the message names the subcommand.
    words: list[str] = []
    args = iter(command[1:] if command and command[0] == "git" else command)
    for arg in args:
        if arg in ("-C", "-c"):
            next(args, None)
        elif not arg.startswith("-"):
            words.append(arg)
            if len(words) == 2 or words[0] != "worktree":
                break
    return " ".join(words) or "command"


def _first_line(stderr: str, status: int | None) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    # Hints come before the error itself; prefer the line that says what went wrong.
    for line in lines:
        if line.startswith(("fatal:", "error:")):
            return line
    return lines[0] if lines else f"exit status {status}"


class UnsafePathError(MissionError):
    """Raised instead of using a path where rho expects its own folder but finds something else.

    rho never follows a symbolic link out of ``.rho/``: a chmod, a rewrite or a removal there
    would reach the link's target.
    """

    def __init__(self, path: object, problem: str) -> None:
        super().__init__(f"refusing to use {path}: it {problem}; rho follows no link in .rho")
        self.path = str(path)


class RefMovedError(MissionError):
    """Raised instead of moving a ref that is not where rho last recorded it.

    The message names the ref, says what moved and how to proceed; nothing was overwritten.
    """

    def __init__(self, ref: str, detail: str) -> None:
        super().__init__(f"{quote(ref)} {detail}")
        self.ref = ref


class SignedPlanError(MissionError):
    """Raised when a mission that requires a signed plan may not start (exit 1): the plan fails
    verification (``code`` is the verifier's failure code), or the task store holds a task, a
    parent or a scope the plan does not allow (``code`` is None, ``task_id`` names the task)."""

    exit_code = 1

    def __init__(
        self, message: str, *, code: str | None = None, task_id: str | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.task_id = task_id


class MissionRunningError(MissionError):
    """Raised when a command that needs a mission at rest finds it running (its run lock held)."""


class CleanRefusedError(MissionError):
    """Raised instead of a clean that would lose unmerged work or pull a branch from a work tree.

    Nothing was removed.
    """


class PickRefusedError(MissionError):
    """The chosen tasks cannot be taken apart from the rest of the mission; nothing changed."""


class TaskLeasedError(MissionError):
    """Raised when a task a mission would run is leased to another mission that holds it."""


class MissionNotFoundError(InvalidMissionError, LookupError):
    """Raised when a name matches no mission, or when an id prefix matches several.

    ``candidates`` holds the ids of the missions the prefix matched (empty when none did).
    """

    def __init__(self, message: str, candidates: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.candidates = list(candidates)


class MergeRefusedError(MissionError):
    """Raised instead of a merge that could lose or tangle the user's work; nothing was changed."""


class DaskUnavailableError(InvalidMissionError):
    """Raised when the Dask executor is asked for but ``distributed`` is not installed;
    ``hint`` says how to install it."""

    hint = "pip install 'rho-mission[dask]'"


class StoreNotFoundError(MissionError):
    """Raised when the task store to project does not exist (an empty graph would mislead)."""
