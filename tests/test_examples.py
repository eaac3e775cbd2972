"""Every runnable example runs: the demo mission and the library pipeline, as real processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(script: str, *args: str, home: Path) -> subprocess.CompletedProcess[str]:
    # A machine without any git identity or global config, like a fresh clone's.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "RHO_"))}
    env.update(HOME=str(home), GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    return subprocess.run(
        [sys.executable, str(ROOT / "examples" / script), *args],
        cwd=home,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_demo_runs_a_real_mission_to_completion(tmp_path: Path) -> None:
    result = _run("demo.py", home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "wave 6 joined 1 feature(s), 1 completed, 0 failed" in result.stdout
    assert "merge task_4.2" in result.stdout  # the integration branch's log
    assert "Traceback" not in result.stderr


def test_the_library_pipeline_completes_and_a_later_wave_sees_earlier_work(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    identity = ["-c", "user.name=t", "-c", "user.email=t@t.invalid"]
    subprocess.run(
        ["git", *identity, "commit", "-q", "--allow-empty", "-m", "start"], cwd=repo, check=True
    )
    result = _run("library_pipeline.py", str(repo), home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "parser: completed, files ['parser.txt']" in result.stdout
    show = subprocess.run(
        ["git", "show", f"rho-mission/{result.stdout.split('mission ')[-1][:8]}/parser:parser.txt"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    assert show.stdout == "build the tree\nsaw: docs.txt, lexer.txt\n"
