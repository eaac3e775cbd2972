"""Running the real ``rho``: the one runner of the suite, its result, background runs, waits.

Every ``rho`` here is the installed console script run as a real subprocess, in a folder the
test chose, with stdin empty (never the terminal of the test run) and an environment made by
``rho_env``: no ``RHO_*`` variable unless the test passes one, wide unstyled rich output, and,
given a *home*, that folder as ``HOME`` with no git configuration or git variable of the
machine. Without a *home* the test's own environment is used, which the ``hermetic_git`` fixture
(``support.fixtures``) keeps away from the machine's git config. Waits are bounded polls on
files, never fixed sleeps.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from support.environ import rho_env

__all__ = [
    "RHO",
    "WAIT",
    "Result",
    "RhoRuns",
    "RunRho",
    "assert_bad_input",
    "dry_run_waves",
    "gate_cmd",
    "read_pid",
    "rho_env",
    "run_rho",
    "wait_file_cmd",
    "wait_until",
]

RHO = Path(sys.executable).parent / "rho"
WAIT = 30.0  # bound on every wait; never reached when things work
_POLL = 0.02
_PID = re.compile(r"^\d+\n$")


def _text(data: bytes, errors: str = "strict") -> str:
    """*data* as text the way ``subprocess``'s text mode reads it: UTF-8, universal newlines."""
    return data.decode("utf-8", errors).replace("\r\n", "\n").replace("\r", "\n")


@dataclass(frozen=True)
class Result:
    """What one ``rho`` process did; ``out`` is stdout's exact bytes."""

    code: int
    out: bytes
    stderr: str

    @property
    def stdout(self) -> str:
        """stdout as text."""
        return _text(self.out)

    def json(self) -> Any:
        """stdout parsed as exactly one JSON document (json.loads refuses trailing data)."""
        return json.loads(self.out)

    @property
    def stdout_lines(self) -> list[str]:
        """stdout split into lines."""
        return self.stdout.splitlines()

    @property
    def stderr_lines(self) -> list[str]:
        """stderr split into lines."""
        return self.stderr.splitlines()


def run_rho(
    *args: str,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    home: Path | None = None,
    stdin: bytes = b"",
) -> Result:
    """Run ``rho ARGS`` in *cwd* with *stdin* piped in and wait for it (a minute is a hang:
    the timeout fails the test); *home* and *env* as ``rho_env`` takes them."""
    done = subprocess.run(
        [str(RHO), *args],
        cwd=cwd,
        env=rho_env(home, env),
        input=stdin,
        capture_output=True,
        timeout=60,
    )
    return Result(done.returncode, done.stdout, _text(done.stderr, "replace"))


class RunRho(Protocol):
    """The ``rho`` fixture of the CLI tests: ``rho ARGS`` (by default in the test's temporary
    folder)."""

    def __call__(
        self, *args: str, cwd: Path | None = None, env: Mapping[str, str] | None = None
    ) -> Result: ...


def assert_bad_input(result: Result, message: str, hint: str | None = None) -> None:
    """Exit 2, nothing on stdout, and on stderr exactly ``error: <message>`` (and the hint)."""
    expected = [f"error: {message}"] + ([f"hint: {hint}"] if hint is not None else [])
    assert (result.code, result.stderr_lines, result.stdout) == (2, expected, "")


class RhoRuns:
    """``rho`` processes started in the background; ``close`` kills what is left of them.

    Their output goes to files under *folder* (not pipes), so that a process that outlives a
    killed ``rho`` can never keep a test waiting for end-of-file.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._runs: list[tuple[subprocess.Popen[bytes], Path, Path]] = []

    def start(
        self,
        *args: str,
        cwd: Path,
        env: dict[str, str] | None = None,
        before: Sequence[str] = (),
        own_group: bool = False,
    ) -> subprocess.Popen[bytes]:
        """Start ``rho ARGS`` in *cwd* and return its process; *env* adds variables to the
        hermetic environment, *before* runs rho under a command (``timeout 5``), *own_group*
        in a process group of its own (as ``timeout`` or a CI runner starts it)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        out = self.folder / f"rho-{len(self._runs)}.out"
        err = self.folder / f"rho-{len(self._runs)}.err"
        with out.open("wb") as stdout, err.open("wb") as stderr:
            process = subprocess.Popen(
                [*before, str(RHO), *args],
                cwd=cwd,
                env=rho_env(env=env),
                stdout=stdout,
                stderr=stderr,
                process_group=0 if own_group else None,
            )
        self._runs.append((process, out, err))
        return process

    def wait(self, process: subprocess.Popen[bytes]) -> Result:
        """Wait (bounded) for *process* to end and return what it did."""
        code = process.wait(timeout=WAIT)
        _, out, err = next(run for run in self._runs if run[0] is process)
        return Result(code, out.read_bytes(), _text(err.read_bytes(), "replace"))

    def close(self) -> bool:
        """SIGKILL every run still going and reap it; return True if there was one."""
        killed = False
        for process, _, _ in self._runs:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=WAIT)
                killed = True
        return killed


def dry_run_waves(text: str) -> list[str]:
    """The waves part of ``rho mission --dry-run``'s text: the lines after its title, up to
    the first of the held tasks, the stages or the settings."""
    lines = text.splitlines()[1:]
    end = next((n for n, line in enumerate(lines) if not line.startswith(("wave ", "  "))), None)
    return lines[:end]


def wait_until(check: Callable[[], bool], what: str, timeout: float = WAIT) -> None:
    """Poll *check* until it holds; fail the test naming *what* after *timeout* seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(_POLL)


def read_pid(path: Path) -> int:
    """Wait until *path* holds a whole pid line (the writer may be mid-write) and return it."""

    def complete() -> bool:
        return path.is_file() and _PID.match(path.read_text(encoding="ascii")) is not None

    wait_until(complete, f"a pid in {path}")
    return int(path.read_text(encoding="ascii"))


def wait_file_cmd(path: Path, limit: float = WAIT, *, written: bool = False) -> str:
    """A shell snippet that waits until *path* exists (*written*: and is not empty); after
    *limit* seconds it exits 9.

    The bound keeps a task command from outliving a broken test for long. *written* is for a
    file that a shell redirection creates empty before its writer has written anything.
    """
    rounds = int(limit / 0.05)
    quoted = shlex.quote(str(path))
    test = "-s" if written else "-e"
    return (
        f"i=0; while [ ! {test} {quoted} ]; do i=$((i+1)); "
        f"[ $i -ge {rounds} ] && exit 9; sleep 0.05; done"
    )


def gate_cmd(path: Path, then: str, limit: float = WAIT) -> str:
    """A command that waits until *path* exists (at most *limit* s, else exit 9), then *then*."""
    return f"{wait_file_cmd(path, limit)}; {then}"
