"""The everyday loop, end to end: a task fails, see why, fix it, resume, merge, clean.

Creates a scratch git repository with a three-task store, runs `rho mission --from-tasks` (one
task fails: its script does not exist), reads why (`show`, `log`), fixes the task's command in
the store, resumes, merges the result into `main` and cleans the mission's branches. Every
step checks its exit code. The scratch folder is removed at the end unless RHO_LOOP_KEEP=1.

    python examples/user_loop.py
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

RHO = [sys.executable, "-m", "rho_mission"]
GIT = ["git", "-c", "user.name=rho loop", "-c", "user.email=loop@rho.invalid"]

SCAFFOLD = "mkdir -p wc && printf 'def count(text):\\n    return len(text.split())\\n' > wc/core.py"
BROKEN_CLI = "./tools/gen-cli.sh"  # not in the repository: the task fails with "not found"
FIXED_CLI = (
    "printf 'import sys\\nfrom wc.core import count\\nprint(count(sys.stdin.read()))\\n' "
    "> wc/cli.py"
)


def step(args: list[str], cwd: Path, expect: int = 0) -> str:
    """Run a command as a user would, echo it and its output, and check its exit code."""
    shown = " ".join(["rho", *args[3:]] if args[:3] == RHO else args)
    print(f"\n$ {shown}", flush=True)
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, check=False)
    print(done.stdout + done.stderr, end="", flush=True)
    if done.returncode != expect:
        sys.exit(f"step failed: {shown} exited {done.returncode}, expected {expect}")
    return done.stdout


def project(folder: Path) -> None:
    """A repository on `main` with one commit and the three tasks in its store."""
    subprocess.run(["git", "init", "-q", "-b", "main", str(folder)], check=True)
    (folder / "README.md").write_text("# wc\n\nCounts words.\n", encoding="utf-8")
    subprocess.run(["git", "add", "README.md"], cwd=folder, check=True)
    subprocess.run([*GIT, "commit", "-q", "-m", "Initial commit"], cwd=folder, check=True)
    step([*RHO, "task", "add", "Scaffold the package", "--command", SCAFFOLD], folder)
    step(
        [*RHO, "task", "add", "Command line", "--blocked-by", "task_1", "--command", BROKEN_CLI],
        folder,
    )
    step([*RHO, "task", "add", "Docs", "--command", "echo '# wc docs' > DOCS.md"], folder)


def loop(folder: Path) -> None:
    """Fail, look, fix, resume, merge, clean."""
    failed = step([*RHO, "mission", "--from-tasks"], folder, expect=1)
    assert "not found" in failed, "the failure's log tail names the missing script"
    step([*RHO, "mission", "show", "latest"], folder)
    step([*RHO, "mission", "log", "latest", "task_2"], folder)
    step([*RHO, "task", "update", "task_2", "--command", FIXED_CLI], folder)
    step([*RHO, "mission", "resume", "latest"], folder)
    step([*RHO, "mission", "merge", "latest"], folder)
    step([*RHO, "mission", "clean", "latest"], folder)
    step(["git", "log", "--oneline", "--graph", "main"], folder)
    files = step(["git", "ls-files"], folder).split()
    assert {"wc/core.py", "wc/cli.py", "DOCS.md"} <= set(files), files
    assert step(["git", "branch", "--list", "rho-mission/*"], folder) == ""
    print("\nthe loop is closed: main holds every task's work, no mission branch is left")


def main() -> None:
    """Run the loop in a scratch folder."""
    scratch = Path(tempfile.mkdtemp(prefix="rho-loop-"))
    try:
        folder = scratch / "wc"
        project(folder)
        loop(folder)
    finally:
        if os.environ.get("RHO_LOOP_KEEP") == "1":
            print(f"\nkept: {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
