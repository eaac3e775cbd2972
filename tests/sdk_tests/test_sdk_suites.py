"""The TypeScript and Go clients' own suites, run with their ecosystem's command.

``npm test`` in ``sdk/typescript`` (``npm ci`` first when its ``node_modules`` is missing: tsc and
Node's types come from the npm registry) and ``go test ./...`` in ``sdk/go``. Both suites test
their client against the recorded answers of ``sdk/contract`` and against a real ``rho serve``
that they start from the ``rho`` on PATH: this virtualenv's. Without Node or Go the suite skips,
naming what is missing; under ``.ci/run`` (which installs both) it fails instead.
"""

from __future__ import annotations

import os
import subprocess
import sys
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


def test_the_typescript_client_suite_passes(node_and_npm: tuple[str, str]) -> None:
    npm = node_and_npm[1]
    folder = SDK / "typescript"
    if not (folder / "node_modules" / "typescript").is_dir():
        installed = _run([npm, "ci", "--no-audit", "--no-fund"], folder)
        assert installed.returncode == 0, installed.stdout + installed.stderr
    done = _run([npm, "test"], folder)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "# fail 0" in done.stdout


def test_the_go_client_suite_passes(go_tool: str) -> None:
    done = _run([go_tool, "test", "-count=1", "./..."], SDK / "go")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
