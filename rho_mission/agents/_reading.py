"""An attempt's usage, read after it ended: from ``$RHO_USAGE_FILE``, else the agent's output.

``UsageAsk`` is what the stage running an attempt knows: which attempt it is, which profile
reads its output, and whether an unread usage is to be recorded as unknown (an agent's
attempt: a task, a fix, the planner, the resolver) or not at all (a check that wrote no
file). `usage_place` makes the attempt's usage folder, fresh (the task may write there, even
in the sandbox; aider's profile line has its analytics log written there too);
`read_attempt` reads it and removes it, and reads the agent's own verdict of its run
(``_verdicts``) from the same output.

The file and the log are a task's writing, so read as untrusted: without following a link,
a regular file only, at most ``USAGE_FILE_LIMIT`` bytes of the file and ``TAIL_BYTES`` of the
log; whatever is wrong makes the usage unknown with the reason, never fails the attempt.

Decision: docs/decisions/0706-what-rho-reads-back.md, docs/decisions/0509-usage-and-budgets.md
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pydantic import ValidationError

from taskstore import open_folder

from ..containment._folders import remove_tree_at
from ..records._document import MissionConfig
from ..records._usage import (
    USAGE_SCHEMA,
    AttemptUsage,
    UsageFile,
    UsageSource,
    UsageStage,
    usage_problem,
)
from ._readers import AIDER_ANALYTICS, READERS, TAIL_BYTES, Reading, read_aider_analytics
from ._verdicts import VERDICTS, Verdict

__all__ = [
    "USAGE_FILE_LIMIT",
    "UsageAsk",
    "log_size",
    "read_attempt",
    "read_attempt_usage",
    "usage_ask",
    "usage_place",
]

USAGE_FILE_LIMIT = 64 * 1024
_FOLDER_NAME = "usage"
_FILE_NAME = "usage.json"
_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True)
class UsageAsk:
    """What reading one attempt's usage needs to know before it runs."""

    stage: UsageStage
    attempt: int
    agent: str | None = None
    # Record an unread usage as unknown (True), or nothing (False: a check).
    required: bool = True
    # The join whose checks or fix it is.
    wave: int | None = None


def usage_ask(
    config: MissionConfig, stage: UsageStage, attempt: int, agent: str | None
) -> UsageAsk:
    """The `UsageAsk` of an agent's attempt: an unread usage is recorded unknown when the
    mission names an agent profile or has a budget; otherwise only what a task wrote to
    ``$RHO_USAGE_FILE`` is recorded (a mission of plain shell commands records nothing)."""
    budget = config.budget_usd is not None or config.budget_tokens is not None
    return UsageAsk(stage, attempt, agent, required=agent is not None or budget)


def usage_place(mission_dir: Path, name: str, ask: UsageAsk) -> Path | None:
    """The ``$RHO_USAGE_FILE`` of one attempt: ``usage/<name>.<stage>.<attempt>/usage.json``
    of the mission folder, its folder made empty (0700); None when it cannot be made (a link
    where a folder goes: the attempt then has no usage file, and runs)."""
    attempt = f"{name}.{ask.stage}.{ask.attempt}"
    try:
        usage = open_folder(mission_dir / _FOLDER_NAME, create=True)
    except OSError:
        return None
    try:
        _remove_at(usage, attempt)  # what a crashed run of the same attempt left
        os.mkdir(attempt, 0o700, dir_fd=usage)
    except OSError:
        return None
    finally:
        os.close(usage)
    return mission_dir / _FOLDER_NAME / attempt / _FILE_NAME


def log_size(log: Path) -> int:
    """Where the attempt's output starts in its log: the log's size before it runs."""
    try:
        return os.lstat(log).st_size
    except FileNotFoundError:
        return 0


def read_attempt_usage(
    ask: UsageAsk, usage_file: Path | None, log: Path | None, log_start: int
) -> AttemptUsage | None:
    """The usage of the attempt *ask* names (see `read_attempt`)."""
    return read_attempt(ask, usage_file, log, log_start)[0]


def read_attempt(
    ask: UsageAsk, usage_file: Path | None, log: Path | None, log_start: int
) -> tuple[AttemptUsage | None, Verdict]:
    """The usage of the attempt *ask* names, from its usage file and its agent's report of
    its output from *log_start* on; unknown (with the reason) or None (a check) when neither
    says; the usage folder removed. And its agent's verdict of the run, from the same output.

    Where both say, each figure is the larger of the two: the usage file is the task's
    writing, so it may add to what its agent reported, never hide it.
    """
    own = AIDER_ANALYTICS if ask.agent == "aider" else None
    found = _Found() if usage_file is None else _read_and_remove(usage_file, own)
    written, problem = found.reading, found.problem
    reader = READERS.get(ask.agent) if ask.agent else None
    judge = VERDICTS.get(ask.agent) if ask.agent else None
    output = "" if log is None or (reader is None and judge is None) else _tail(log, log_start)
    reported = None if reader is None or log is None else reader(output)
    if found.own is not None:
        reported = read_aider_analytics(found.own, reported) or reported
    verdict = Verdict() if judge is None else judge(output)
    return _usage(ask, written, reported, problem, reader is not None and log is not None), verdict


def _usage(
    ask: UsageAsk,
    written: Reading | None,
    reported: Reading | None,
    problem: str | None,
    read: bool,
) -> AttemptUsage | None:
    if written is not None and reported is not None:
        return _record(ask, "usage_file_and_agent", _larger(written, reported))
    if written is not None:
        return _record(ask, "usage_file", written)
    if reported is not None:
        return _record(ask, "agent", reported)
    if read:
        problem = problem or f"no usage report of {ask.agent} in its output"
    if problem is None and not ask.required:
        return None
    if problem is None:
        problem = "no $RHO_USAGE_FILE was written and no agent profile reads its output"
    return AttemptUsage(
        stage=ask.stage, wave=ask.wave, attempt=ask.attempt, agent=ask.agent, problem=problem
    )


_Figure = TypeVar("_Figure", int, float)


def _most(a: _Figure | None, b: _Figure | None) -> _Figure | None:
    """The larger of two figures, either of which may be unknown (None: the other's)."""
    return b if a is None else a if b is None else max(a, b)


def _larger(written: Reading, reported: Reading) -> Reading:
    """Each figure the larger of the usage file's and the agent's (a figure one of them left
    out: the other's); the model and the budget stop as the agent said."""
    return Reading(
        input_tokens=_most(written.input_tokens, reported.input_tokens),
        output_tokens=_most(written.output_tokens, reported.output_tokens),
        cached_input_tokens=_most(written.cached_input_tokens, reported.cached_input_tokens),
        cost_usd=_most(written.cost_usd, reported.cost_usd),
        model=reported.model or written.model,
        stopped_by_budget=reported.stopped_by_budget,
    )


def _record(ask: UsageAsk, source: UsageSource, reading: Reading) -> AttemptUsage:
    return AttemptUsage(
        stage=ask.stage,
        wave=ask.wave,
        attempt=ask.attempt,
        source=source,
        agent=None if source == "usage_file" else ask.agent,
        input_tokens=reading.input_tokens,
        output_tokens=reading.output_tokens,
        cached_input_tokens=reading.cached_input_tokens,
        cost_usd=reading.cost_usd,
        model=reading.model,
        stopped_by_budget=reading.stopped_by_budget,
    )


@dataclass(frozen=True)
class _Found:
    """What an attempt's usage folder held: the usage file's reading (or the problem with
    it), and the text of the agent's own usage log (aider's analytics), when asked for."""

    reading: Reading | None = None
    problem: str | None = None
    own: str | None = None


def _read_and_remove(usage_file: Path, own: str | None) -> _Found:
    """The file's reading, or None with the problem (None too when it was not written), and
    the text of the file *own* of the same folder; its attempt folder removed. The usage
    folder is reached from the anchor of ``.rho`` without following a link on any component:
    a task may have swapped any of them for a link."""
    attempt = usage_file.parent.name
    try:
        usage = open_folder(usage_file.parent.parent)
    except OSError as exc:
        return _Found(None, _unreadable(exc))
    try:
        reading, problem = _read_usage_file(usage, attempt)
        return _Found(reading, problem, None if own is None else _read_own(usage, attempt, own))
    finally:
        _remove_at(usage, attempt)
        os.close(usage)


def _read_own(usage: int, attempt: str, name: str) -> str | None:
    """The text of *name* in ``<attempt>/`` of the folder *usage*; None when it is missing,
    not a regular file, or over ``TAIL_BYTES`` (a log cut would under-count: its agent's
    printed lines count then)."""
    try:
        folder = os.open(attempt, _FOLDER_FLAGS, dir_fd=usage)
    except OSError:
        return None
    try:
        data = _read_regular(name, TAIL_BYTES + 1, dir_fd=folder)
    except OSError:
        return None
    finally:
        os.close(folder)
    if data is None or len(data) > TAIL_BYTES:
        return None
    return data.decode("utf-8", "replace")


def _unreadable(exc: OSError) -> str:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return "$RHO_USAGE_FILE's folder was replaced by a link"
    return f"$RHO_USAGE_FILE could not be read: {exc.strerror or exc}"


def _read_usage_file(usage: int, attempt: str) -> tuple[Reading | None, str | None]:
    """The reading of ``<attempt>/usage.json`` in the folder *usage*, or None with the problem."""
    try:
        folder = os.open(attempt, _FOLDER_FLAGS, dir_fd=usage)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, _unreadable(exc)
    try:
        data = _read_regular(_FILE_NAME, USAGE_FILE_LIMIT + 1, dir_fd=folder)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"$RHO_USAGE_FILE could not be read: {exc.strerror or exc}"
    finally:
        os.close(folder)
    if data is None:
        return None, "$RHO_USAGE_FILE is not a regular file"
    if len(data) > USAGE_FILE_LIMIT:
        return None, f"$RHO_USAGE_FILE is over {USAGE_FILE_LIMIT} bytes"
    return _parse_usage(data)


def _parse_usage(data: bytes) -> tuple[Reading | None, str | None]:
    """The reading of a usage file's bytes, or None with why they are not one."""
    try:
        written = UsageFile.model_validate(json.loads(data))
    except ValidationError as exc:
        return None, f"$RHO_USAGE_FILE is not a {USAGE_SCHEMA} object: {usage_problem(exc)}"
    except (ValueError, RecursionError) as exc:  # RecursionError: '[' nested past the parser
        why = "nested too deeply" if isinstance(exc, RecursionError) else "not JSON"
        return None, f"$RHO_USAGE_FILE is not a {USAGE_SCHEMA} object: {why}"
    cost = None if written.cost_usd is None else float(written.cost_usd)
    reading = Reading(
        input_tokens=written.input_tokens,
        output_tokens=written.output_tokens,
        cached_input_tokens=written.cached_input_tokens,
        cost_usd=cost,
        model=written.model,
    )
    return reading, None


def _read_regular(
    path: Path | str, limit: int, start: int = 0, *, dir_fd: int | None = None
) -> bytes | None:
    """At most *limit* bytes of *path* from *start*, opened without following a link; None
    when it is not a regular file."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    fd = os.open(path, flags, dir_fd=dir_fd)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        os.lseek(fd, start, os.SEEK_SET)
        chunks: list[bytes] = []
        left = limit
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _tail(log: Path, log_start: int) -> str:
    """The attempt's output: the log from *log_start* (its last ``TAIL_BYTES`` at most); the
    log's last ``TAIL_BYTES`` when it is shorter than that now (its keeper cut it)."""
    try:
        size = os.lstat(log).st_size
        start = log_start if log_start <= size else 0
        start = max(start, size - TAIL_BYTES)
        data = _read_regular(log, TAIL_BYTES, start)
    except OSError:
        return ""
    return "" if data is None else data.decode("utf-8", "replace")


def _remove_at(usage: int, attempt: str) -> None:
    """Remove an attempt's folder from the usage folder *usage*, with what a task left in it
    (a link unlinked, never followed; a tree of any depth). One it cannot remove (a task made
    a part of it unwritable) stays: it lies in the mission folder, and the next run of that
    attempt, or ``rho mission clean``, meets it again; the usage it held was read."""
    with contextlib.suppress(OSError):
        remove_tree_at(usage, attempt)
