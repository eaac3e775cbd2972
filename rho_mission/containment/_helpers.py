"""rho's long-lived helpers, which a task can reach: one deadline on every exchange, one end.

rho keeps two processes that serve every task: the zygote that forks each task's supervisor
(``_zygote``) and the repository's ``git update-ref --stdin`` (``git._refstream``). Both run
as the user, so a task can find them in /proc and stop them (``kill -STOP``): an answer that
never comes would hold rho past every timeout and signal. So every exchange with a helper
(a request sent, an answer read) has ``HELPER_DEADLINE``; a helper that misses it is taken
for stopped (or hung) and ended with ``end_helper``; its caller starts another, once, or
fails the step.
"""

from __future__ import annotations

import contextlib
import subprocess
from signal import SIGCONT

__all__ = ["HELPER_DEADLINE", "end_helper"]

HELPER_DEADLINE = 3.0
"""Seconds one exchange with a helper may take. A healthy one takes well under a millisecond
(a fork by the zygote, a ref transaction); seconds leave room for a machine under heavy load.
It is also what a stopped helper adds to a stop (Ctrl-C, SIGTERM, a timeout) before rho ends
it."""

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
