"""Any bytes git accepts as a path work end to end: handoff, mission.json, graph, report, merge.

A task that writes a file whose name is not UTF-8 once left a mission stuck for ever (its
join could not be saved, and every resume failed the same way). Such a name is kept the way
git quotes it (``"bad\\377.txt"``), so every stored path is text.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from rho_mission.git._commit import path_text
from support.rho import run_rho
from support.stores import import_tasks, mission_dir, spec, store_tasks

pytestmark = pytest.mark.usefixtures("no_leftover_tasks")


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        (b"plain.txt", "plain.txt"),
        ("café/ünï.txt".encode(), "café/ünï.txt"),
        (b"bad\xff.txt", '"bad\\377.txt"'),
        (b'"quoted".txt', '"\\"quoted\\".txt"'),
        (b"tab\there\xfe", '"tab\\there\\376"'),
        (b'in"side', 'in"side'),
        (b"x\x1b[2J\x1b]0;t\x07\nFAKE", '"x\\033[2J\\033]0;t\\a\\nFAKE"'),
        ("tab\tcafé".encode(), '"tab\\tcaf\\303\\251"'),
        (b"del\x7f", '"del\\177"'),
        ("csi\u009b2J".encode(), '"csi\\302\\2332J"'),
        ("rtl\u202etxt.exe".encode(), '"rtl\\342\\200\\256txt.exe"'),
    ],
)
def test_a_path_is_kept_as_text_git_would_quote(raw: bytes, shown: str) -> None:
    assert path_text(raw.decode("utf-8", "surrogateescape")) == shown


def test_a_file_name_that_is_not_utf8_completes_and_merges(project: Path, tmp_path: Path) -> None:
    write = 'printf y > "$(printf "bad\\377.txt")"'
    import_tasks(project, [spec("a", write), spec("b", "ls > listed.txt", "a")])
    result = run_rho("mission", "--from-tasks", cwd=project)
    assert result.code == 0, result.stderr
    folder = mission_dir(project)
    document = json.loads((folder / "mission.json").read_bytes().decode("utf-8"))
    assert document["status"] == "completed"
    handoff = next(f["handoff"] for f in document["features"] if f["id"] == "a")
    assert handoff["files_changed"] == ['"bad\\377.txt"']
    assert {task["status"] for task in store_tasks(project).values()} == {"completed"}
    exported = run_rho("graph", "export", "--mission-dir", str(folder), cwd=project)
    assert exported.code == 0, exported.stderr
    report = tmp_path / "report.html"
    shown = run_rho("mission", "report", "latest", "--html", str(report), "--include-text",
                    cwd=project)  # fmt: skip
    assert shown.code == 0, shown.stderr
    assert run_rho("mission", "merge", "latest", cwd=project).code == 0
    name = os.fsdecode(b"bad\xff.txt")
    assert (project / name).read_text() == "y"
    listed = subprocess.run(
        ["git", "show", "HEAD:listed.txt"], cwd=project, capture_output=True, check=True
    )
    assert listed.stdout.splitlines()[0] == b"bad\xff.txt"
