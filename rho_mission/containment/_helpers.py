"""rho's long-lived helpers, which a task can reach: one deadline on every exchange, one end.

rho keeps two processes that serve every task: the zygote that forks each task's supervisor
(``_zygote``) and the repository's ``git update-ref --stdin`` (``git._refstream``). Both run
as the user, so a task can find them in /proc and stop them (``kill -STOP``): an answer that
never comes would hold rho past every timeout and signal. So every exchange with a helper
(a request sent, an answer read) has ``HELPER_DEADLINE``; a helper that misses it is taken
for stopped (or hung) and ended with ``end_helper``; its caller starts another, once, or
fails the step.

rho's one-shot processes (each git call) can be stopped as well, by a task that runs beside
the feature rho is committing or merging. A deadline does not fit them (a checkout of a large
tree takes what it takes), but a stop does not either: nothing of rho's stops them. So rho
waits for them in steps of the deadline and continues one found stopped
(``run_continued``, ``continue_if_stopped``): it ends once its stopper is gone (a task's
processes end with it), never holding rho past a timeout or a signal.

Every process rho starts for itself (the helpers, each git call) runs in a process group of
its own (``OWN_GROUP``), in rho's session: a signal sent to rho's group (Ctrl-C at a
terminal, ``timeout``, a CI job's cancel, which signal the whole group) reaches rho alone,
which then stops the tasks and records them cancelled. Had it reached rho's git call too, the
call would die mid-way and fail the feature it served (``git commit-tree failed: exit status
-15``), or the join.

Decision: docs/decisions/0704-supervisor.md
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Mapping, Sequence
from signal import SIGCONT, pidfd_send_signal
from typing import IO

from ._pids import stat_fields

__all__ = ["HELPER_DEADLINE", "OWN_GROUP", "continue_if_stopped", "end_helper", "run_continued"]

HELPER_DEADLINE = 3.0
"""Seconds one exchange with a helper may take. A healthy one takes well under a millisecond
(a fork by the zygote, a ref transaction); seconds leave room for a machine under heavy load.
It is also what a stopped helper adds to a stop (Ctrl-C, SIGTERM, a timeout) before rho ends
it."""

OWN_GROUP = 0
"""``subprocess.Popen``'s ``process_group`` for rho's own processes: a new group, led by the
process (a signal to rho's group does not reach it)."""

# After SIGKILL the kernel ends a process promptly, stopped or not; this only bounds a process
# stuck in the kernel (uninterruptible sleep), so that an end never hangs.
_REAP_WAIT = 5.0


def end_helper(process: subprocess.Popen[bytes]) -> None:
    """End the helper *process* even if it is stopped, and reap it: SIGKILL, then SIGCONT (a
    stopped process must run again to die; Linux wakes it for SIGKILL, the SIGCONT costs
    nothing), then a wait of at most a few seconds. Nothing of it is left, not even a stopped
    process handed to init when rho ends."""
    process.kill()
    process.send_signal(SIGCONT)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(_REAP_WAIT)


def continue_if_stopped(pid: int, pidfd: int | None = None) -> None:
    """Send SIGCONT to *pid* if it is stopped: through *pidfd* when given (then no process
    that took a reused pid is signalled), by pid for a child of rho's not yet reaped (whose
    pid names no other process)."""
    fields = stat_fields(f"/proc/{pid}")
    if fields is not None and fields[0] == "T":
        with contextlib.suppress(ProcessLookupError):
            if pidfd is not None:
                pidfd_send_signal(pidfd, SIGCONT)
            else:
                os.kill(pid, SIGCONT)


def run_continued(
    command: Sequence[str], env: Mapping[str, str], stdin: int | IO[bytes] = subprocess.DEVNULL
) -> tuple[int, bytes, bytes]:
    """Run *command* as ``subprocess.run`` with its output captured: its exit status, its
    output, its errors. Continued whenever it is found stopped at a deadline's end.

    Raises:
        OSError: it could not be started.
    """
    with subprocess.Popen(
        command,
        env=env,
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        process_group=OWN_GROUP,
    ) as process:
        try:
            out, err = _communicate(process)
        except BaseException:
            process.kill()  # as subprocess.run: an interrupted call leaves no process
            raise
    return process.returncode, out, err


def _communicate(process: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    while True:
        try:
            return process.communicate(timeout=HELPER_DEADLINE)
        except subprocess.TimeoutExpired:
            continue_if_stopped(process.pid)
