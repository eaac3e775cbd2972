"""Calling a worker: async or plain, and what its failure leaves behind.

A library caller may pass ``async def worker(ctx)`` or a plain ``def worker(ctx)``; a plain one
runs in a worker thread, so that it never blocks the other features. A cancellation or a
feature timeout cannot stop a thread: a plain worker's attempt ends when the function returns
(the shell worker and async workers are stopped at once).

A worker's exception fails its feature. Its type and traceback go to the feature's log, and the
feature's ``error`` starts with the type's name, so a failure can be understood after the fact.
``FeatureFailedError`` is the worker's own way of saying "failed, for this reason": its message
is the error as it is, with no traceback.

Decision: docs/decisions/0503-executors.md
"""

from __future__ import annotations

import contextlib
import inspect
import os
import traceback
from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING, cast

import anyio

from .._errors import FeatureFailedError, MissionError
from ..containment._process import note_in_log, open_log

if TYPE_CHECKING:
    from ..agents._verdicts import Verdict
    from ..records._document import Handoff
    from ._contract import Worker, WorkerContext

__all__ = ["call_worker", "failure_text", "note_line", "note_verdict", "timed_out"]


async def call_worker(worker: Worker, context: WorkerContext) -> Handoff | None:
    """Run *worker* on *context*: awaited when async, in a worker thread when plain."""
    if _is_async(worker):
        result: object = worker(context)
    else:
        result = await anyio.to_thread.run_sync(worker, context)
    if inspect.isawaitable(result):  # also a plain callable that hands back a coroutine
        result = await cast("Awaitable[object]", result)
    return cast("Handoff | None", result)


def failure_text(exc: Exception, log_path: Path) -> str:
    """The feature error for a worker's *exc*; its traceback is appended to *log_path*.

    Raises:
        UnsafePathError: the log's path is a symbolic link.
    """
    if isinstance(exc, FeatureFailedError):
        return str(exc) or type(exc).__name__
    _append(log_path, "".join(traceback.format_exception(exc)))
    message = str(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def note_verdict(error: str | None, verdict: Verdict, log_path: Path, said: str) -> str | None:
    """*error* (None: the run succeeded) as its agent's own verdict leaves it: a run whose
    agent reported a failure failed, in the agent's words, whatever its exit code (an error
    already known keeps its words first). The warnings, and such a failure, are also lines of
    the log (*said*: whose run, ``t1 attempt 2``), where the agent's output is."""
    for warning in verdict.warnings:
        note_line(log_path, f"{said}: warning: {warning}")
    if verdict.failure is None:
        return error
    error = verdict.failure if error is None else f"{error}; {verdict.failure}"
    note_line(log_path, f"{said} failed: {error}")
    return error


def note_line(log_path: Path, line: str) -> None:
    """One line of rho's own in the log; none when the log cannot take it (a task made it a
    link: that is its own error, found by the next step that needs the log)."""
    with contextlib.suppress(MissionError, OSError):
        note_in_log(log_path, line)


def timed_out(context: WorkerContext, timeout: float | None) -> str:
    """The failure of an attempt its time limit ended, its log closed with a line saying so,
    as a passed or failed attempt's is (a log that stopped mid-line told no one why)."""
    said = f"timed out after {timeout:g}s" if timeout is not None else "timed out"
    note_in_log(context.log_path, f"{context.feature.id} attempt {context.attempt} failed: {said}")
    return said


def _is_async(worker: object) -> bool:
    call = getattr(worker, "__call__", None)  # noqa: B004 - an object with an async __call__
    return inspect.iscoroutinefunction(worker) or inspect.iscoroutinefunction(call)


def _append(log_path: Path, text: str) -> None:
    # The shell worker's own opener: 0600, its folder 0700, never through a link.
    with os.fdopen(open_log(log_path), "w", encoding="utf-8") as handle:
        handle.write(text)
