"""What the README says about the shell holds for the installed ``rho``: putting it on PATH, and
click's shell completion (``eval "$(_RHO_COMPLETE=bash_source rho)"`` and its zsh and fish kin)."""

from __future__ import annotations

import os
import shutil
import subprocess
from importlib.metadata import version
from pathlib import Path

import pytest

from support.rho import RHO

BIN = RHO.parent
SYSTEM_PATH = "/usr/bin:/bin"
VERSION_LINE = f"rho, version {version('rho-mission')}"


def _shell(script: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    # No RHO_* nor the test's own PATH: only what the script itself sets up.
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("RHO_", "_RHO_", "VIRTUAL"))}
    clean.update({"PATH": SYSTEM_PATH, **env})
    return subprocess.run(
        ["bash", "-c", script], cwd=cwd, env=clean, capture_output=True, text=True, timeout=60
    )


def _complete(words: str, cword: int, tmp_path: Path) -> list[str]:
    done = _shell(
        "rho", tmp_path, PATH=f"{BIN}:{SYSTEM_PATH}", COMP_WORDS=words, COMP_CWORD=str(cword),
        _RHO_COMPLETE="bash_complete",
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (0, "")
    return done.stdout.splitlines()


def test_activating_the_virtual_environment_puts_rho_on_path(tmp_path: Path) -> None:
    assert shutil.which("rho", path=SYSTEM_PATH) is None
    done = _shell(f'source "{BIN}/activate" && command -v rho && rho --version', tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [str(RHO), VERSION_LINE]


def test_a_link_to_the_venv_script_works_from_any_folder_on_path(tmp_path: Path) -> None:
    links = tmp_path / "bin"
    links.mkdir()
    (links / "rho").symlink_to(RHO)
    done = _shell("rho --version", tmp_path, PATH=f"{links}:{SYSTEM_PATH}")
    assert (done.returncode, done.stdout) == (0, f"{VERSION_LINE}\n")


@pytest.mark.parametrize(
    ("shell", "marker"),
    [
        ("bash_source", "complete -o nosort -F _rho_completion rho"),
        ("zsh_source", "#compdef rho"),
        ("fish_source", "complete --no-files --command rho"),
    ],
)
def test_rho_prints_its_completion_script(tmp_path: Path, shell: str, marker: str) -> None:
    done = _shell("rho", tmp_path, PATH=f"{BIN}:{SYSTEM_PATH}", _RHO_COMPLETE=shell)
    assert (done.returncode, done.stderr) == (0, "")
    assert marker in done.stdout


@pytest.mark.parametrize(
    ("words", "cword", "offered"),
    [
        ("rho ta", 1, ["plain,task"]),
        ("rho task sh", 2, ["plain,show"]),
        ("rho mission --from", 2, ["plain,--from-tasks"]),
    ],
)
def test_completion_offers_the_commands_and_options(
    tmp_path: Path, words: str, cword: int, offered: list[str]
) -> None:
    assert _complete(words, cword, tmp_path) == offered


def test_the_bash_script_completes_in_a_real_bash(tmp_path: Path) -> None:
    # The README's line, then what bash does on <TAB> after "rho ta": call the function.
    script = """
        eval "$(_RHO_COMPLETE=bash_source rho)"
        COMP_WORDS=(rho ta); COMP_CWORD=1
        _rho_completion rho
        printf '%s\\n' "${COMPREPLY[@]}"
    """
    done = _shell(script, tmp_path, PATH=f"{BIN}:{SYSTEM_PATH}")
    assert (done.returncode, done.stdout, done.stderr) == (0, "task\n", "")
