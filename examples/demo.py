"""`make demo`: a real mission over the sample task store, in a scratch git repository.

Creates a throwaway repository, loads missions/demo.json into its task store, shows the waves,
runs `rho mission --from-tasks` (a live display on a terminal), then shows the mission and the
integration branch's log. Everything happens under a temporary folder that is removed at the end
unless RHO_DEMO_KEEP=1.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RHO = [sys.executable, "-m", "rho_mission"]


def run(args: list[str], cwd: Path, check: bool = True) -> int:
    """Run *args* in *cwd*, echoing the command like a shell session would."""
    print(f"\n$ {' '.join(args)}", flush=True)
    return subprocess.run(args, cwd=cwd, check=check).returncode


def rho(args: list[str], cwd: Path, check: bool = True) -> int:
    """Run the rho CLI of this checkout."""
    print(f"\n$ rho {' '.join(args)}", flush=True)
    return subprocess.run([*RHO, *args], cwd=cwd, check=check).returncode


def scratch_repository(folder: Path) -> None:
    """A small repository with one commit, as a user's project would be."""
    git = ["git", "-c", "user.name=rho demo", "-c", "user.email=demo@rho.invalid"]
    subprocess.run(["git", "init", "-q", "-b", "main", str(folder)], check=True)
    (folder / "README.md").write_text("# wordcount\n\nA tiny project the demo mission builds.\n")
    subprocess.run(["git", "add", "README.md"], cwd=folder, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "Initial commit"], cwd=folder, check=True)


def main() -> int:
    """Run the demo; the exit code is the mission's."""
    folder = Path(tempfile.mkdtemp(prefix="rho-demo-"))
    try:
        repo = folder / "wordcount"
        scratch_repository(repo)
        rho(["task", "import", str(ROOT / "missions" / "demo.json")], repo)
        rho(["task", "waves"], repo)
        code = rho(["mission", "--from-tasks", "--workers", "2"], repo, check=False)
        missions = sorted((repo / ".rho" / "missions").iterdir())
        rho(["mission", "show", str(missions[-1])], repo)
        run(["git", "log", "--oneline", "--graph", _integration_branch(repo)], repo)
        rho(["task", "list"], repo)
        return code
    finally:
        if os.environ.get("RHO_DEMO_KEEP") == "1":
            print(f"\nkept {folder}: the paths and 'next:' commands above work there")
        else:
            shutil.rmtree(folder, ignore_errors=True)
            print(
                f"\nremoved the scratch repository {folder}: the paths and 'next:' commands "
                "above were for it; to try them, run 'RHO_DEMO_KEEP=1 make demo' and cd there"
            )


def _integration_branch(repo: Path) -> str:
    branches = subprocess.run(
        ["git", "branch", "--list", "--format=%(refname:short)", "rho-mission/*/integration"],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return branches[-1]


if __name__ == "__main__":
    sys.exit(main())
