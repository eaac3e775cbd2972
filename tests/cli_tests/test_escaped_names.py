"""A task chooses its files' names; rho shows them, never lets the terminal obey them.

Two tasks of one wave write different content to a file whose name clears the screen, sets
the window's title (an OSC sequence ended by BEL) and breaks the line to forge one of rho's
own: ``FAKE: all tasks passed``. Their merge conflicts, so the name reaches every output that
talks about the conflict: the progress lines (plain to a pipe, live on a terminal), ``show``,
``conflicts``, ``log`` (its own lines and the resolve stage's notes) and an ``error:`` line.
None of them may hold an ESC, a BEL, or a line that starts with ``FAKE:``. The ``--json``
documents stay JSON, the name inside them as git quotes it.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import time
from pathlib import Path

import pytest

from support.repos import integration_branch, run_git
from support.rho import RHO, WAIT, Result, rho_env, run_rho
from support.stores import import_tasks, mission_dir, spec

pytestmark = pytest.mark.usefixtures("no_leftover_tasks")

NAME = "x\x1b[2J\x1b]0;pwned\x07\nFAKE: all tasks passed"
# The name as git quotes it (core.quotePath), the form rho keeps and shows.
QUOTED = '"x\\033[2J\\033]0;pwned\\a\\nFAKE: all tasks passed"'
_WRITE = "printf {} > \"$(printf 'x\\033[2J\\033]0;pwned\\007\\nFAKE: all tasks passed')\""
# What a live view draws with (cursor moves, erasing a line, hiding the cursor): rich's own.
_CURSOR = re.compile(r"\x1b\[[0-9;?]*[ABCDGHKJhlm]")


@pytest.fixture
def clashing(project: Path) -> Path:
    """Two tasks of one wave that write the hostile name with different content."""
    import_tasks(project, [spec("a", _WRITE.format("one")), spec("b", _WRITE.format("two"))])
    return project


def _assert_inert(text: str, what: str) -> None:
    assert "\x1b" not in text, f"{what} holds an ESC: {text!r}"
    assert "\x07" not in text, f"{what} holds a BEL: {text!r}"
    _assert_no_forged_line(text, what)


def _assert_no_forged_line(text: str, what: str) -> None:
    forged = [line for line in re.split(r"[\r\n]", text) if line.startswith("FAKE:")]
    assert forged == [], f"{what} prints a forged line: {text!r}"


def _both(result: Result) -> str:
    return result.stdout + result.stderr


def test_no_output_about_a_conflicted_name_obeys_it(clashing: Path) -> None:
    # The resolver leaves the markers in: its failure names the path in the resolve log too.
    ran = run_rho("mission", "--from-tasks", "--resolve", "git add --all", cwd=clashing)
    assert ran.code == 1, _both(ran)
    _assert_inert(_both(ran), "the progress lines")
    failed = f"b failed: merge conflict in {QUOTED} with a (do a); the resolver failed: "
    assert failed + f"conflict markers left in {QUOTED}" in ran.stdout_lines

    for args in (("show", "latest"), ("conflicts", "latest"), ("log", "latest", "b")):
        shown = run_rho("mission", *args, cwd=clashing)
        assert shown.code == 0, shown.stderr
        _assert_inert(_both(shown), f"rho mission {' '.join(args)}")
        assert QUOTED in shown.stdout, shown.stdout
    resolved = run_rho("mission", "log", "latest", "b", cwd=clashing).stdout
    assert f"b resolve attempt 1 failed: conflict markers left in {QUOTED} ==" in resolved


def test_the_json_documents_stay_json_with_the_name_as_git_quotes_it(clashing: Path) -> None:
    assert run_rho("mission", "--from-tasks", cwd=clashing).code == 1

    shown = run_rho("mission", "show", "latest", "--json", cwd=clashing)
    overlaps = run_rho("mission", "conflicts", "latest", "--json", cwd=clashing)
    for result in (shown, overlaps):
        assert result.code == 0, result.stderr
        _assert_inert(_both(result), "a --json document")
    by_id = {feature["id"]: feature for feature in shown.json()["features"]}
    assert by_id["b"]["conflict"]["paths"] == [QUOTED]
    assert by_id["a"]["handoff"]["files_changed"] == [QUOTED]
    assert overlaps.json()["conflicts"][0]["paths"] == [QUOTED]


def test_a_record_that_holds_the_raw_name_is_shown_escaped(clashing: Path) -> None:
    # mission.json as an older rho wrote it: the name as the task chose it.
    assert run_rho("mission", "--from-tasks", cwd=clashing).code == 1
    record = mission_dir(clashing) / "mission.json"
    quoted, raw = (json.dumps(name)[1:-1] for name in (QUOTED, NAME))
    record.write_text(record.read_text().replace(quoted, raw))

    for args in (("show", "latest"), ("log", "latest", "b"), ("list",)):
        shown = run_rho("mission", *args, cwd=clashing)
        assert shown.code == 0, shown.stderr
        _assert_inert(_both(shown), f"rho mission {' '.join(args)}")
    logged = run_rho("mission", "log", "latest", "b", cwd=clashing).stdout_lines
    escaped = "x\\x1b[2J\\x1b]0;pwned\\x07\\nFAKE: all tasks passed"
    assert f"(task b printed nothing: merge conflict in {escaped} with a (do a))" in logged


def test_an_error_line_about_the_name_is_one_inert_line(project: Path) -> None:
    import_tasks(project, [spec("a", _WRITE.format("one"))])
    assert run_rho("mission", "--from-tasks", cwd=project).code == 0
    (project / NAME).write_text("mine")
    run_git(project, "add", "--all")
    run_git(project, "commit", "--quiet", "--message=the user's own file of that name")

    merged = run_rho("mission", "merge", "latest", cwd=project)

    assert merged.code == 2, _both(merged)
    branch = integration_branch(project)
    assert merged.stderr_lines == [
        f'error: merging "{branch}" into "main" conflicts in {QUOTED}; nothing was changed: '
        f"merge it by hand with 'git merge {branch}'"
    ]
    _assert_inert(_both(merged), "the error line")


def test_the_live_view_on_a_terminal_shows_the_name_never_obeys_it(clashing: Path) -> None:
    code, text = _in_a_terminal(("mission", "--from-tasks"), clashing)

    assert code == 1, text
    assert "\x07" not in text, text
    assert "\x1b]" not in text, "an OSC sequence (a window title) reached the terminal"
    assert "\x1b[2J" not in text, "a clear-screen reached the terminal"
    drawn = _CURSOR.sub("", text)
    _assert_no_forged_line(drawn, "the live view")
    assert "\\nFAKE: all tasks passed" in drawn, drawn


def _in_a_terminal(args: tuple[str, ...], cwd: Path) -> tuple[int, str]:
    """Run ``rho ARGS`` with a pseudo-terminal as stdout and stderr: its code and every byte
    it wrote there (escape sequences kept)."""
    master, slave = pty.openpty()
    process = subprocess.Popen(
        [str(RHO), *args],
        cwd=cwd,
        env={**rho_env(), "TERM": "xterm"},
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
    )
    os.close(slave)
    try:
        chunks = _read_until_closed(master)
        code = process.wait(timeout=WAIT)
    finally:
        os.close(master)
        if process.poll() is None:
            process.kill()
    return code, b"".join(chunks).decode("utf-8", "replace")


def _read_until_closed(master: int) -> list[bytes]:
    chunks: list[bytes] = []
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if not select.select([master], [], [], 1.0)[0]:
            continue
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every process holding the terminal has ended
            break
        if not chunk:
            break
        chunks.append(chunk)
    return chunks


def test_a_failed_tasks_last_lines_hold_no_8_bit_control(project: Path) -> None:
    # U+009B is a CSI of its own to a terminal that takes 8-bit controls.
    import_tasks(project, [spec("a", "printf 'out\\302\\2332J\\033[2Jend\\n'; exit 3")])

    ran = run_rho("mission", "--from-tasks", cwd=project)

    assert ran.code == 1, _both(ran)
    assert "  | out2Jend" in ran.stdout_lines
    assert "\x9b" not in _both(ran)
    _assert_inert(_both(ran), "the progress lines")
