"""The TypeScript and Go clients' own suites, run with their ecosystem's command.

``npm test`` in ``sdk/typescript`` (``npm ci`` first when its ``node_modules`` is missing: tsc and
Node's types come from the npm registry) and ``go test ./...`` in ``sdk/go``. Both suites test
their client against the recorded answers of ``sdk/contract`` and against a real ``rho serve``
that they start from the ``rho`` on PATH: this virtualenv's. Without Node or Go the suite skips,
naming what is missing; under ``.ci/run`` (which installs both) it fails instead.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SDK = ROOT / "sdk"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RHO_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=600, check=False
    )


Requirement = Callable[[str, str | None], None]


def test_the_typescript_client_suite_passes(system_requirement: Requirement) -> None:
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    problem = f"{' and '.join(missing)} not installed" if missing else None
    system_requirement("the TypeScript client's suite", problem)
    folder = SDK / "typescript"
    if not (folder / "node_modules" / "typescript").is_dir():
        installed = _run(["npm", "ci", "--no-audit", "--no-fund"], folder)
        assert installed.returncode == 0, installed.stdout + installed.stderr
    done = _run(["npm", "test"], folder)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "# fail 0" in done.stdout


def test_the_go_client_suite_passes(system_requirement: Requirement) -> None:
    problem = "go not installed" if shutil.which("go") is None else None
    system_requirement("the Go client's suite", problem)
    done = _run(["go", "test", "-count=1", "./..."], SDK / "go")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
