"""Module docstrings keep invariants and name their decision record, never figures or trackers.

Every module of ``rho_mission``, ``taskstore`` and ``graph`` is read (its docstring only, by
``ast``): a ``docs/decisions/...`` it names must exist, and it may hold no measured timing
(those go to docs/performance.md), no issue number and no file from outside the repository.
A setting stated in time units ("a poll every 50 ms", "lowered to 0.5 ms") is not a figure:
only a range, an approximation or a measuring word next to the number is.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("rho_mission", "taskstore", "graph")

RECORD = re.compile(r"docs/decisions/[\w.-]+?\.md")
_UNIT = r"\s?(?:ms|µs|us|ns|s|seconds?|minutes?)\b"
_NUMBER = r"\d+(?:[.,]\d+)?"
MEASURED = re.compile(
    rf"{_NUMBER}\s?[-\u2013]\s?{_NUMBER}{_UNIT}"  # a range: 2-5 ms
    rf"|(?:~|\babout |\baround |\broughly ){_NUMBER}{_UNIT}"  # an approximation: ~0.3 ms
    rf"|\b(?:took|takes|costs?|paid|pays|faster|slower|saves|saved|spent|measured)\b"
    rf"[^.;:]{{0,40}}?\b{_NUMBER}{_UNIT}"  # a measuring word before it: took 12 ms
    rf"|\b{_NUMBER}x (?:faster|slower|cheaper)\b",
    re.IGNORECASE,
)
ELSEWHERE = re.compile(r"\bissues? #?\d+|\bDESIGN\.md\b|\.\./shared\b", re.IGNORECASE)


def _docstrings() -> list[tuple[str, str]]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
            found.append((str(path.relative_to(ROOT)), doc or ""))
    return found


DOCSTRINGS = _docstrings()


def test_every_decision_record_a_module_names_exists() -> None:
    missing = [
        f"{module}: {record}"
        for module, doc in DOCSTRINGS
        for record in RECORD.findall(doc)
        if not (ROOT / record).is_file()
    ]
    assert missing == []


def test_every_module_names_the_decision_behind_it() -> None:
    # A newcomer finds the record behind any module from its docstring, in one step.
    unnamed = [module for module, doc in DOCSTRINGS if not RECORD.search(doc)]
    assert unnamed == []


def test_no_module_docstring_holds_a_timing_figure() -> None:
    found = [f"{module}: {m[0]!r}" for module, doc in DOCSTRINGS for m in MEASURED.finditer(doc)]
    assert found == []


def test_no_module_docstring_cites_an_issue_or_a_file_from_outside() -> None:
    found = [f"{module}: {m[0]!r}" for module, doc in DOCSTRINGS for m in ELSEWHERE.finditer(doc)]
    assert found == []


def test_the_modules_are_read() -> None:
    # A wrong root would find nothing and pass everything above.
    assert len(DOCSTRINGS) > 100
    assert sum(1 for _, doc in DOCSTRINGS if RECORD.search(doc)) > 50


@pytest.mark.parametrize(
    "text",
    [
        "a process start each (2-5 ms here)",
        "one transaction per move: ~0.3 ms",
        "about 20 ms of start-up",
        "each 1.6-2.4 ms of the interpreter's lock",
        "the move took 12 ms on a loaded machine",
        "3x faster than a checkout",
    ],
)
def test_a_measured_figure_is_caught(text: str) -> None:
    assert MEASURED.search(text)


@pytest.mark.parametrize(
    "text",
    [
        "a waiting thread polls every 50 ms",
        "the switch interval is lowered to 0.5 ms while waves run",
        "``timed out after 5s``",
        "RFC 3339 (``2026-11-29T21:30:00.123Z``)",
        "a grace of GRACE seconds",
    ],
)
def test_a_setting_is_not_a_figure(text: str) -> None:
    assert not MEASURED.search(text)


@pytest.mark.parametrize(
    "text", ["as issue 41 found", "see ../shared/DESIGN.md", "(issue #12)", "issues 3 and 4"]
)
def test_a_citation_from_outside_is_caught(text: str) -> None:
    assert ELSEWHERE.search(text)
