"""Standard output and error that may close under rho without changing what it does.

No click here: the click-free lane of ``_quick`` (``rho task ready --json``) is guarded too.

Decision: docs/decisions/0805-logs-and-output.md
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO, cast

__all__ = ["guarded_output"]


@contextmanager
def guarded_output() -> Iterator[None]:
    """Guard ``sys.stdout`` and ``sys.stderr`` for the block, then flush them harmlessly.

    A closed or failing output never changes the exit code: whatever the streams still buffer is
    flushed here, where a failure is harmless, rather than by the interpreter at exit (which
    would print "Exception ignored" and exit 120).
    """
    saved = sys.stdout, sys.stderr
    stdout, stderr = _GuardedStream.around(sys.stdout, 1), _GuardedStream.around(sys.stderr, 2)
    sys.stdout, sys.stderr = cast("TextIO", stdout), cast("TextIO", stderr)
    try:
        yield
        _flush_output(stdout, stderr)
    finally:
        sys.stdout, sys.stderr = saved


class _GuardedStream:
    """A standard stream whose write and flush failures end its output, never the command.

    Python ignores SIGPIPE, so a reader that goes away (``rho task list | head -1``) turns the
    next write into ``BrokenPipeError``; a full disk or a lost terminal raise other OSErrors.
    None of them may change what a command does or its exit code. On the first one the stream's
    file descriptor is pointed at /dev/null, as the Python docs' "Note on SIGPIPE" advises, so
    that later writes and the interpreter's last flush at exit go nowhere instead of failing.
    Everything but ``write`` and ``flush`` is the wrapped stream's own (``isatty``, ``fileno``).

    Only these two streams are guarded: a broken pipe to anything else (a socket, a git
    process) stays an error.
    """

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.lost: OSError | None = None

    @classmethod
    def around(cls, stream: TextIO | None, descriptor: int) -> _GuardedStream:
        """A guard around *stream*, or, for no stream (Python found *descriptor* closed at
        start), around /dev/null opened on that descriptor: output goes nowhere, as after a
        reader left, and no file a child process opens can take the descriptor's place."""
        return cls(stream if stream is not None else _devnull_on(descriptor))

    def write(self, text: str) -> int:
        """Write *text*; on a failure, remember it and report the text as written."""
        try:
            return self.stream.write(text)
        except OSError as exc:
            self._lose(exc)
            return len(text)

    def flush(self) -> None:
        """Flush; on a failure, remember it."""
        try:
            self.stream.flush()
        except OSError as exc:
            self._lose(exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)

    def _lose(self, exc: OSError) -> None:
        if self.lost is None:
            self.lost = exc
            _point_at_devnull(self.stream)


def _devnull_on(descriptor: int) -> TextIO:
    devnull = os.open(os.devnull, os.O_WRONLY)
    if devnull != descriptor:
        os.dup2(devnull, descriptor)
        os.close(devnull)
    return open(descriptor, "w", encoding="utf-8", closefd=False)  # for the process's life


def _point_at_devnull(stream: TextIO) -> None:
    try:
        descriptor = stream.fileno()
        devnull = os.open(os.devnull, os.O_WRONLY)
    except (OSError, ValueError):  # no descriptor (io.UnsupportedOperation is both)
        return
    try:
        os.dup2(devnull, descriptor)
    except OSError:
        pass  # the stream keeps failing, and the guard keeps swallowing
    finally:
        os.close(devnull)


def _flush_output(stdout: _GuardedStream, stderr: _GuardedStream) -> None:
    """Flush both streams, and warn when stdout's output was lost other than by its reader leaving.

    A reader that stops reading (``| head -1``) wanted no more; a full disk or an I/O error lost
    output somebody wanted, and nothing else would say so.
    """
    stdout.flush()
    if stdout.lost is not None and not isinstance(stdout.lost, BrokenPipeError):
        reason = stdout.lost.strerror or stdout.lost
        print(f"warning: output lost: {reason}", file=sys.stderr)
    stderr.flush()
