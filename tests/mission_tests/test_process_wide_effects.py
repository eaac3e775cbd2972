"""What running a mission does to the calling process, as ``Mission``'s docstring and the README
tell a library caller: a child subreaper for the rest of its life, one zygote and one
``rho-save`` thread kept, the switch interval lowered while waves run and put back, and no
signal handler installed. A fresh interpreter runs a real mission (a shell task under its
supervisor, a Python verify stage) and reports what it saw of itself before, during and after.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

_SCRIPT = r"""
import ctypes, json, os, signal, sys, threading
from pathlib import Path
from rho_mission import Feature, Mission, MissionConfig

libc = ctypes.CDLL(None, use_errno=True)


def subreaper():
    flag = ctypes.c_int(-1)
    libc.prctl(37, ctypes.byref(flag), 0, 0, 0)  # PR_GET_CHILD_SUBREAPER
    return flag.value


def handlers():
    return [repr(signal.getsignal(s)) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD)]


def children():
    found = []
    for tid in os.listdir("/proc/self/task"):
        found += Path(f"/proc/self/task/{tid}/children").read_text().split()
    return [Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") for pid in found]


def state():
    return {"subreaper": subreaper(), "interval": sys.getswitchinterval(), "handlers": handlers()}


seen = state()
during = []
mission = Mission.new(sys.argv[1], "p", [Feature(id="a", command="true")], MissionConfig())
mission.run_staged_sync(verify=lambda ctx: during.append(sys.getswitchinterval()))
print(json.dumps({
    "status": mission.status,
    "before": seen,
    "during": during,
    "after": state(),
    "threads": sorted(t.name for t in threading.enumerate()),
    "zygotes": sum(1 for argv in children() if b"--zygote" in argv),
}))
"""


def _run_mission_in_a_fresh_interpreter(repo: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(repo)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return report


def test_a_mission_leaves_its_caller_a_subreaper_with_a_zygote_and_no_handlers(
    make_repo: Callable[[str, int], Path],
) -> None:
    report = _run_mission_in_a_fresh_interpreter(make_repo("repo", 1))
    assert report["status"] == "completed"
    before, after = report["before"], report["after"]
    assert (before["subreaper"], after["subreaper"]) == (0, 1)
    assert report["zygotes"] == 1
    assert any(name.startswith("rho-save") for name in report["threads"])
    assert after["handlers"] == before["handlers"]


def test_the_switch_interval_is_lowered_while_waves_run_and_put_back(
    make_repo: Callable[[str, int], Path],
) -> None:
    report = _run_mission_in_a_fresh_interpreter(make_repo("repo", 1))
    assert report["during"] == [0.0005]
    assert report["after"]["interval"] == report["before"]["interval"] == 0.005
