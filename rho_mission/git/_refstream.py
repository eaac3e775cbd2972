"""Branch moves by one long-lived ``git update-ref --stdin``: compare-and-swap with no start-up.

A feature's worktree is put on its branch at every attempt: the branch made where it must not
exist yet, or moved from where rho last recorded it. One ``git update-ref`` process per move
would pay a process start on the path of every feature (figures: docs/performance.md); this
stream keeps one ``git update-ref -m MESSAGE --stdin`` per repository and sends it one
transaction per move (``start``, the ``create``/``update`` line, ``commit``). git still does
all of the work: the ref's lock, the compare against the old value, the reflog, the packed refs.

The stream is a socket pair, not pipes: a process of the same user can open another process's
pipe through ``/proc/<pid>/fd`` and write to it, but not a socket; so no task can add a
command to the stream, or forge git's answer to one, through ``/proc``. (A process allowed
to trace rho's could still copy the descriptor, ``pidfd_getfd``, as it could rewrite rho's own
memory; only ``--sandbox``'s PID namespace hides them.) git's errors come on the same socket.
The process has a process group of its own (the terminal's Ctrl-C is rho's to handle) in
rho's session (so it is never taken for a task's orphan, ``containment._orphans``), and ends
at the end of its input: when the stream is closed, or when rho ends.

A task can still stop it (``kill -STOP``): every send and every answer has a deadline
(``containment._helpers.HELPER_DEADLINE``). A process that misses it is ended even if stopped
(``end_helper``); one that had not begun the transaction yet (no ``start: ok``) is replaced at
once, once; one that had is the move's failure (git may or may not have carried it out: the
caller reads the branch). A close that does not end the process within the deadline ends it
too.

Decision: docs/decisions/0602-git-per-feature.md
"""

from __future__ import annotations

import contextlib
import io
import socket
import subprocess
import threading
from collections.abc import Mapping, Sequence

from ..containment._helpers import HELPER_DEADLINE, OWN_GROUP, end_helper

__all__ = ["RefStream"]


class RefStream:
    """One ``git update-ref --stdin`` (*command*, with *env*), started on first use and again
    after it ended; safe to use from several threads (one transaction at a time)."""

    def __init__(self, command: Sequence[str], env: Mapping[str, str]) -> None:
        self._command = list(command)
        self._env = dict(env)
        self._guard = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._socket: socket.socket | None = None
        self._answers: io.BufferedReader | None = None

    @property
    def pid(self) -> int | None:
        """The running git process's pid (None before the first use, or once closed)."""
        return None if self._process is None else self._process.pid

    def apply(self, line: str) -> str | None:
        """Apply the one-line command *line* (``create REF NEW`` or ``update REF NEW OLD``) as
        one transaction: None once git committed it, else what git said (or that it did not
        answer in time).

        A stream found ended or stuck before it took the transaction (a process that died,
        or that someone killed or stopped) is started again, once.
        """
        with self._guard:
            for _ in range(2):
                if self._started(f"start\n{line}\ncommit\n".encode()):
                    break
            else:
                return "git update-ref --stdin ended before it took the change"
            try:
                answer = self._read_line()
            except TimeoutError:
                self._end()
                return f"git update-ref --stdin did not answer within {HELPER_DEADLINE:g}s"
            if answer == b"commit: ok\n":
                return None
            said = (answer + self._rest()).decode(errors="replace").strip()
            self._close()
            return said or "git update-ref --stdin ended without an answer"

    def close(self) -> None:
        """End the process (at the end of its input); the next ``apply`` starts another."""
        with self._guard:
            self._close()

    def _started(self, transaction: bytes) -> bool:
        # Whether git began the transaction (its "start: ok"); the process is ended if not.
        if self._socket is None:
            self._spawn()
        assert self._socket is not None
        try:
            self._socket.sendall(transaction)
            if self._read_line() == b"start: ok\n":
                return True
        except TimeoutError:  # stopped, or hung: nothing of the transaction was done
            self._end()
            return False
        except OSError:
            pass
        self._close()
        return False

    def _spawn(self) -> None:
        ours, theirs = socket.socketpair()
        try:
            self._process = subprocess.Popen(
                self._command,
                stdin=theirs.fileno(),
                stdout=theirs.fileno(),
                stderr=theirs.fileno(),
                env=self._env,
                process_group=OWN_GROUP,
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        ours.settimeout(HELPER_DEADLINE)  # every send and every read on it
        self._socket = ours
        self._answers = ours.makefile("rb")

    def _read_line(self) -> bytes:
        """git's next line; b"" once it ended.

        Raises:
            TimeoutError: none came within the deadline.
        """
        assert self._answers is not None
        try:
            return self._answers.readline()
        except TimeoutError:
            raise
        except OSError:
            return b""

    def _rest(self) -> bytes:
        # What git wrote before it ended (its "fatal: ..." line); the process is done after.
        assert self._socket is not None
        assert self._answers is not None
        with contextlib.suppress(OSError):
            self._socket.shutdown(socket.SHUT_WR)
        try:
            return self._answers.read()
        except OSError:  # a timeout too: the close then ends it
            return b""

    def _close(self) -> None:
        # git reads the end of its input, aborts any open transaction and exits; one that does
        # not within the deadline (stopped) is ended.
        process = self._drop()
        if process is not None:
            try:
                process.wait(HELPER_DEADLINE)
            except subprocess.TimeoutExpired:
                end_helper(process)

    def _end(self) -> None:
        # A process that missed the deadline: ended at once, stopped or not.
        process = self._drop()
        if process is not None:
            end_helper(process)

    def _drop(self) -> subprocess.Popen[bytes] | None:
        # The socket closed; the process, for the caller to end.
        answers, sock, process = self._answers, self._socket, self._process
        self._answers = self._socket = self._process = None
        if answers is not None:
            with contextlib.suppress(OSError):
                answers.close()
        if sock is not None:
            sock.close()
        return process
