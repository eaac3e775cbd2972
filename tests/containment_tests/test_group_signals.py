"""A signal to rho's whole process group (``timeout``, a CI job's cancel) cancels the mission as
Ctrl-C does: the running tasks ``cancelled``, exit 130, resumable.

``timeout`` and CI runners signal the process group they started rho in, so the signal
reaches every process rho started in its own group too. The tests catch rho with one of its
own git calls under way when the signal comes: a ``git`` first on PATH holds the first
``commit-tree`` (the commit of a task that already ended) until the test lets it go. Had the
signal reached that call, it would die and fail the task it served (``git commit-tree failed:
exit status -15``). The other task traps the SIGTERM rho's cancel sends it, and says so.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from support.rho import RHO, WAIT, RhoRuns, rho_env, run_rho, wait_file_cmd, wait_until
from support.stores import import_tasks, mission_dir, spec, store_tasks

pytestmark = pytest.mark.usefixtures("no_leftover_tasks")


def q(path: Path) -> str:
    """*path* quoted for a shell command."""
    return shlex.quote(str(path))


def _held_git(folder: Path, marks: Path) -> dict[str, str]:
    """An environment whose ``git`` holds the first ``commit-tree`` until ``marks/go``."""
    real = shutil.which("git")
    assert real is not None
    folder.mkdir()
    script = folder / "git"
    script.write_text(
        "#!/bin/sh\n"
        'case " $* " in *" commit-tree "*)\n'
        f"  if mkdir {q(marks / 'held')} 2>/dev/null; then {wait_file_cmd(marks / 'go')}; fi;;\n"
        "esac\n"
        f'exec {shlex.quote(real)} "$@"\n',
        encoding="utf-8",
    )
    script.chmod(0o755)
    return {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}


def _mission(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / "mission.json").read_text(encoding="utf-8"))
    return data


@pytest.mark.parametrize("sender", ["killpg", "timeout"])
def test_sigterm_to_rhos_process_group_cancels_and_resume_finishes(
    project: Path, runs: RhoRuns, marks: Path, tmp_path: Path, sender: str
) -> None:
    slow = (
        f"trap 'touch {q(marks / 'term')}; exit 143' TERM; touch {q(marks / 'up')}; "
        f"[ -e {q(marks / 'resumed')} ] && exit 0; sleep 60 & wait"
    )
    import_tasks(project, [spec("quick", "echo quick > quick.txt"), spec("slow", slow)])
    env = _held_git(tmp_path / "bin", marks)
    if sender == "killpg":  # rho in a group of its own, as timeout or a CI runner starts it
        running = runs.start("mission", "--from-tasks", cwd=project, env=env, own_group=True)
        wait_until((marks / "held").exists, "rho's commit of the quick task")
        wait_until((marks / "up").exists, "the slow task to start")
        os.killpg(running.pid, signal.SIGTERM)
    else:  # timeout signals its own group, where it started rho
        before = ("timeout", "-s", "TERM", "5")
        running = runs.start("mission", "--from-tasks", cwd=project, env=env, before=before)
    wait_until((marks / "term").exists, "rho's cancel to reach the slow task")
    (marks / "go").touch()
    result = runs.wait(running)

    folder = mission_dir(project).resolve()
    assert result.code == (130 if sender == "killpg" else 124), result.stderr
    assert result.stdout_lines[-2:] == [
        f"mission {folder.name} cancelled: {folder}",
        f"next: rho mission resume {folder.name}",
    ]
    document = _mission(folder)
    features = {f["id"]: (f["status"], f.get("error")) for f in document["features"]}
    assert (document["status"], features) == (
        "cancelled",
        {"quick": ("completed", None), "slow": ("cancelled", "cancelled")},
    )
    tasks = store_tasks(project)
    assert (tasks["quick"]["status"], tasks["slow"]["status"]) == ("completed", "pending")

    (marks / "resumed").touch()
    resumed = run_rho("mission", "resume", folder.name, cwd=project, env=env)
    assert resumed.code == 0, resumed.stdout + resumed.stderr
    assert {t["status"] for t in store_tasks(project).values()} == {"completed"}
    assert _mission(folder)["status"] == "completed"


def test_sigterm_ends_any_other_command_as_ctrl_c_does(project: Path) -> None:
    # rho task import --from plan - reads the plan from its input, which the test keeps open:
    # SIGTERM there ends it with Ctrl-C's line and code (it died by the signal, saying nothing).
    import_tasks(project, [spec("one", "true")])
    running = subprocess.Popen(
        [str(RHO), "task", "import", "--from", "plan", "-"],
        cwd=project,
        env=rho_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        process_group=0,
    )
    try:
        wait_until(lambda: _reads_a_pipe(running.pid), "rho to read its input")
        os.killpg(running.pid, signal.SIGTERM)
        out, err = running.communicate(timeout=WAIT)
    finally:
        running.kill()
        running.wait()
    # The line break is click's, as after ^C at a terminal.
    assert (running.returncode, out, err) == (130, b"", b"\nerror: cancelled\n")
    assert set(store_tasks(project)) == {"one"}


def _reads_a_pipe(pid: int) -> bool:
    # Its wait channel: (anon_)pipe_read while it waits for input on its one pipe.
    with contextlib.suppress(OSError):
        return "pipe_read" in Path(f"/proc/{pid}/wchan").read_text(encoding="ascii")
    return False
