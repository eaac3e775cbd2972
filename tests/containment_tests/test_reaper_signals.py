"""The supervisor's signals to what a task leaves: all of it stopped before any is signalled.

Signalled one by one, a process of the task could see another end before its own signal came
and run on: a shell waiting on ``sleep`` runs its next command, such as a write into the
worktree, which the commit step then takes for the task's work (the kill -9 trials saw a
``late.txt`` land so, once pids had wrapped around and ``sleep`` was signalled before its shell).

The supervisor's ``_signal_descendants`` runs here in a Python process of its own (it signals
every descendant of the process it runs in), over real processes; ``os.kill`` is wrapped there
to record the order of the signals it sends (each still sent).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the supervisor runs on Linux")

# The watched process (lower pid, started first) holds the only write end of a pipe; its
# watcher, a shell, writes late.txt as soon as that pipe ends: a process that runs on when
# another of the task ends before it.
_SCRIPT = r"""
import json, os, signal, subprocess, sys, time
from rho_mission.containment import _reaper

folder = sys.argv[1]
read_end, write_end = os.pipe()
watched = subprocess.Popen(["sleep", "30"], stdin=subprocess.DEVNULL, stdout=write_end)
os.close(write_end)
watcher = subprocess.Popen(
    ["sh", "-c", "cat > /dev/null; echo late > late.txt"], stdin=read_end, cwd=folder
)
os.close(read_end)
time.sleep(0.3)  # both running, the watcher blocked in its read

sent = []
kill = os.kill
def recording(pid, signum):
    sent.append([pid, signum])
    kill(pid, signum)
os.kill = recording
_reaper._signal_descendants(int(sys.argv[2]))
os.kill = kill
codes = [watched.wait(10), watcher.wait(10)]
time.sleep(0.2)  # a write that came late would be there now
print(json.dumps({
    "watched": watched.pid,
    "watcher": watcher.pid,
    "sent": sent,
    "codes": codes,
    "late": os.path.exists(os.path.join(folder, "late.txt")),
}))
"""


def _signal_in_a_process_of_its_own(folder: Path, signum: int) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(folder), str(signum)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    found: dict[str, object] = json.loads(done.stdout)
    return found


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
def test_every_descendant_is_stopped_before_any_is_signalled(tmp_path: Path, signum: int) -> None:
    found = _signal_in_a_process_of_its_own(tmp_path, signum)
    sent = [tuple(pair) for pair in found["sent"]]  # type: ignore[attr-defined]
    both = {found["watched"], found["watcher"]}
    stops = [n for n, (pid, sig) in enumerate(sent) if sig == signal.SIGSTOP]
    signalled = [n for n, (pid, sig) in enumerate(sent) if sig == signum]
    assert {sent[n][0] for n in stops} >= both
    assert {sent[n][0] for n in signalled} >= both
    assert max(stops) < min(signalled)
    if signum == signal.SIGTERM:  # continued after, to take the signal
        continued = [n for n, (pid, sig) in enumerate(sent) if sig == signal.SIGCONT]
        assert {sent[n][0] for n in continued} >= both
        assert max(signalled) < min(continued)
    assert found["codes"] == [-signum, -signum]
    assert found["late"] is False
