"""``rho task list``, ``show``, ``add`` and ``update`` answer from the file's own objects when
the model's dump would be those objects, and otherwise through the model: the two lanes print
the same bytes and the same errors, and leave the same store (the click lane is reached with
``--store=PATH``, which the quick lane leaves to click)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.rho import RHO
from support.stores import DIAMOND, write_store
from taskstore import TaskStore, read_task_dicts


def _both(store: Path, *command: str) -> tuple[tuple[int, str, str], tuple[int, str, str]]:
    def run(*spelling: str) -> tuple[int, str, str]:
        done = subprocess.run(
            [str(RHO), "task", *command, *spelling], capture_output=True, text=True, check=False
        )
        return done.returncode, done.stdout, done.stderr

    return run("--store", str(store)), run(f"--store={store}")


def _written_by_rho(path: Path) -> Path:
    store = TaskStore(path)
    one = store.add("one", description="the first", command="make one", labels=["a", "b"])
    store.add("two ✓", blocked_by=[one.id], priority=0, parent=one.id)
    store.update(one.id, status="completed", owner="ada", last_error="x", attempts=2)
    return path


def _variants(tmp_path: Path) -> dict[str, Path]:
    canonical = _written_by_rho(tmp_path / "rho.json")
    document = json.loads(canonical.read_text())

    def variant(name: str, change: Any) -> Path:
        copy = json.loads(json.dumps(document))
        change(copy["tasks"][0])
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(copy))
        return path

    return {
        "rho": canonical,
        "hand-written": write_store(tmp_path / "diamond.json", DIAMOND),
        "none owner": variant("none", lambda t: t.update(owner=None)),
        "extra key": variant("extra", lambda t: t.update(color="red")),
        "python name": variant("python", lambda t: t.update(last_error=t.pop("lastError"))),
        "bool attempts": variant("bool", lambda t: t.update(attempts=True)),
        "no description": variant("nodesc", lambda t: t.pop("description")),
        "keys reordered": variant("order", lambda t: t.update(id=t.pop("id"))),
        "wrong type": variant("type", lambda t: t.update(subject=3)),
    }


@pytest.mark.parametrize(
    "command",
    [
        ("list", "--json"),
        ("show", "task_1", "--json"),
        ("show", "nope", "--json"),
        ("list",),
        ("list", "--wide", "--status", "pending", "--label", "a"),
        ("list", "--priority", "0"),
        ("show", "task_1"),
        ("show", "task_1.1"),
        ("ready",),
        ("waves",),
    ],
)
def test_both_lanes_answer_alike_on_every_kind_of_store(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    for name, store in _variants(tmp_path).items():
        fast, full = _both(store, *command)
        assert fast == full, (name, command)


_STAMPS = re.compile(rb'"(createdAt|updatedAt)": "[^"]*"')
_WRITES = [
    ("add", "three", "--blocked-by", "task_1", "--label", "ui", "--priority", "1"),
    ("add", "child", "--parent", "task_1", "--related", "task_1.1", "--command", "make it"),
    ("add", "--description", "text\nof two lines", "--json", "four"),
    ("add", "bad", "--blocked-by", "ghost"),
    ("add", " "),
    ("update", "task_1.1", "--status", "completed", "--remove-blocker", "task_1"),
    ("update", "task_1", "--label", "c", "--remove-label", "a", "--subject", "One", "--json"),
    ("update", "task_1", "--add-blocker", "task_1.1"),
    ("update", "task_1", "--status", "done"),
    ("update", "nope", "--priority", "3"),
]


@pytest.mark.parametrize("command", _WRITES, ids=" ".join)
def test_both_lanes_write_alike(tmp_path: Path, command: tuple[str, ...]) -> None:
    """Each lane on its own copy of one store: the same output and the same bytes after it,
    but for the time stamps of the second the write ran in."""
    for name, source in _variants(tmp_path).items():
        copies = [tmp_path / lane / name / "s.json" for lane in ("fast", "full")]
        for copy in copies:  # one relative name: the messages name the store alike
            copy.parent.mkdir(parents=True)
            shutil.copyfile(source, copy)
        fast = _run_rho("task", *command, "--store", "s.json", cwd=copies[0].parent)
        full = _run_rho("task", *command, "--store=s.json", cwd=copies[1].parent)
        assert _stamps_out(fast) == _stamps_out(full), (name, command)
        written = [_STAMPS.sub(b"", copy.read_bytes()) for copy in copies]
        assert written[0] == written[1], (name, command)


def _run_rho(*args: str, cwd: Path | None = None) -> tuple[int, str, str]:
    done = subprocess.run([str(RHO), *args], capture_output=True, text=True, check=False, cwd=cwd)
    return done.returncode, done.stdout, done.stderr


def _stamps_out(result: tuple[int, str, str]) -> tuple[int, str, str]:
    code, out, err = result
    return code, _STAMPS.sub(b"", out.encode()).decode(), err


def test_views_show_control_characters_as_escapes(tmp_path: Path) -> None:
    store = tmp_path / "tasks.json"
    TaskStore(store).add("red\x1b[31m\ttab\u202eevil", description="two\nlines\x07")
    listed = _run_rho("task", "list", "--store", str(store))[1]
    shown = _run_rho("task", "show", "task_1", "--store", str(store))[1]
    assert "red\\x1b[31m\\ttab\\u202eevil" in listed
    assert "\x1b" not in listed + shown
    assert "\x07" not in shown
    assert "two\n" in shown, "a description keeps its lines"
    assert "lines\\x07" in shown


def test_the_fast_read_takes_only_what_the_dump_would_write(tmp_path: Path) -> None:
    found = {name: read_task_dicts(path) is not None for name, path in _variants(tmp_path).items()}
    assert found == {
        "rho": True,
        "hand-written": False,
        "none owner": False,
        "extra key": False,
        "python name": False,
        "bool attempts": False,
        "no description": False,
        "keys reordered": False,
        "wrong type": False,
    }


_TEXT = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\0"), max_size=20)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    subjects=st.lists(_TEXT.filter(str.strip), min_size=1, max_size=5),
    descriptions=st.lists(_TEXT, min_size=5, max_size=5),
    owner=st.one_of(st.none(), _TEXT.filter(str.strip)),
    priority=st.one_of(st.none(), st.integers(0, 4)),
)
def test_a_store_rho_wrote_reads_fast_as_the_model_dumps_it(
    tmp_path_factory: pytest.TempPathFactory,
    subjects: list[str],
    descriptions: list[str],
    owner: str | None,
    priority: int | None,
) -> None:
    store = TaskStore(tmp_path_factory.mktemp("store") / "tasks.json")
    previous: list[str] = []
    for subject, description in zip(subjects, descriptions, strict=False):
        made = store.add(subject, description=description, blocked_by=previous[-1:],
                         priority=priority)  # fmt: skip
        previous.append(made.id)
    if owner is not None:
        store.update(previous[0], owner=owner, status="in_progress")
    expected = [t.model_dump(by_alias=True, exclude_none=True) for t in store.tasks()]
    assert read_task_dicts(store.path) == expected
