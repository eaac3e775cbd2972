"""What integration cost, and how well it went: the counts of real missions.

Real ``rho`` processes in a real repository: three tasks of one wave append to one file (two
merges conflict), resolved by the stand-in resolver (``--resolve``), the join's checks failing
once and repaired by ``--fix``; then a mission whose conflict no one resolves. The counts are
read where a person reads them: ``rho mission show`` (and ``--json``), ``rho mission stats``
(and ``--json``), the report, the mission's graph.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rho_mission.records._stats import graph_counts, integration_words, mission_stats
from support.overlap import STAND_IN, package, registering_tasks
from support.rho import run_rho
from support.stores import import_tasks, mission_dir, spec

pytestmark = pytest.mark.usefixtures("no_leftover_tasks")

# The checks fail until the fix leaves checked.txt on the integration branch.
CHECK = "test -e checked.txt"
FIX = "echo ok > checked.txt"
NO_CONFLICT = {"total": 0, "driver": 0, "resolved": 0, "replayed": 0, "failed": 0}


@pytest.fixture
def integrated(project: Path) -> Path:
    """The repository after the resolved, verified and fixed mission."""
    package(project)
    registering_tasks(project, None)
    args = ("--resolve", str(STAND_IN), "--verify", CHECK, "--fix", FIX)
    done = run_rho("mission", "--from-tasks", *args, cwd=project)
    assert done.code == 0, done.stdout + done.stderr
    return project


def _show_json(project: Path, name: str = "latest") -> dict[str, Any]:
    shown = run_rho("mission", "show", name, "--json", cwd=project)
    assert shown.code == 0, shown.stderr
    document: dict[str, Any] = shown.json()
    return document


def test_a_resolved_and_fixed_mission_counts_its_integration(integrated: Path) -> None:
    stats = _show_json(integrated)["integration"]

    [join] = stats.pop("joins")
    assert join == {
        "wave": 1,
        "merges": 3,
        "conflicts": {**NO_CONFLICT, "total": 2, "resolved": 2},
        "checks": {"runs": 2, "passed": 1, "failed": 1, "bisect": 0, "flaky": 0},
        "culprits": 0,
        "fixes": 1,
    }
    assert stats == {
        "merges": 3,
        "conflicts": {**NO_CONFLICT, "total": 2, "resolved": 2},
        "checks": {"runs": 2, "passed": 1, "failed": 1, "bisect": 0, "flaky": 0},
        "culprits": 0,
        "fixes": 1,
        "culprits_landed": 0,
        "landed": 3,
        # Three task attempts, two resolver runs, one fix run.
        "agent_runs": 6,
        "agent_runs_per_landed": 2.0,
        "cost_usd": None,
    }


def test_show_says_the_integration_in_one_line(integrated: Path) -> None:
    shown = run_rho("mission", "show", "latest", cwd=integrated)

    assert shown.code == 0, shown.stderr
    assert (
        "integration: 3 merges, 2 conflicts (2 resolved), 2 check runs (1 passed, 1 failed),"
        " 1 fix run, 2 agent runs per landed task"
    ) in shown.stdout_lines
    # mission.json itself holds no integration key: the counts are derived from it.
    assert "integration" not in json.loads((mission_dir(integrated) / "mission.json").read_text())


def test_stats_sums_the_missions_of_the_repository(integrated: Path) -> None:
    # A second mission: two tasks add the same new file; no resolver, so one fails.
    import_tasks(integrated, [spec("x", "echo x > notes.txt"), spec("y", "echo y > notes.txt")])
    assert run_rho("mission", "--from-tasks", cwd=integrated).code == 1

    summed = run_rho("mission", "stats", "--json", cwd=integrated)
    newest = run_rho("mission", "stats", "--last", "1", "--json", cwd=integrated)

    assert (summed.code, newest.code) == (0, 0), summed.stderr + newest.stderr
    everything = summed.json()
    assert everything["missions"] == 2
    assert everything["merges"] == 4
    assert everything["conflicts"] == {**NO_CONFLICT, "total": 3, "resolved": 2, "failed": 1}
    assert everything["conflicts_landed"] == 2
    assert everything["conflict_rate"] == 0.6  # 3 of 5 merges tried
    assert everything["conflicts_landed_rate"] == 0.67
    assert everything["check_failure_rate"] == 0.5
    assert (everything["culprits"], everything["culprit_rate"]) == (0, 0.0)
    assert (everything["landed"], everything["agent_runs"]) == (4, 8)
    assert everything["agent_runs_per_landed"] == 2.0
    assert everything["cost_per_landed"] is None  # no attempt reported a cost
    last = newest.json()
    assert (last["missions"], last["merges"], last["conflicts"]["failed"]) == (1, 1, 1)
    assert last["mission_ids"] == everything["mission_ids"][:1]


def test_stats_prints_the_rates_for_people(integrated: Path) -> None:
    done = run_rho("mission", "stats", cwd=integrated)

    assert done.code == 0, done.stderr
    assert done.stdout_lines == [
        "1 mission(s): 3 merge(s), 3 task(s) landed",
        "conflicts: 2 (67% of merges tried): 2 resolved",
        "  landed without a person: 2 (100%)",
        "checks: 2 run(s), 1 failed (50%), 0 flaky, 0 for bisection; 1 fix run(s)",
        "culprits: 0 (0% of merges), 0 landed after replay",
        "per landed task: cost unknown, 2 agent run(s)",
    ]


@pytest.mark.parametrize("last", ["0", "-1", "many"])
def test_a_bad_last_is_refused(integrated: Path, last: str) -> None:
    done = run_rho("mission", "stats", "--last", last, cwd=integrated)

    assert done.code == 2
    assert done.stderr_lines[0].startswith("error: ")
    assert done.stdout == ""


def test_the_report_and_the_graph_carry_the_counts(integrated: Path, tmp_path: Path) -> None:
    report = tmp_path / "report.html"
    assert run_rho("mission", "report", "latest", "--html", str(report), cwd=integrated).code == 0
    graph = json.loads((mission_dir(integrated) / "mission-graph.json").read_text())

    # The page's data (its renderer says "integration: ..." under the mission's header).
    assert '"integration":"3 merges, 2 conflicts (2 resolved),' in report.read_text()
    [node] = [n for n in graph["nodes"] if n["attributes"].get("entity_type") == "mission"]
    assert node["attributes"]["conflict_resolved_count"] in (2, "2")
    assert "culprit_count" not in node["attributes"]  # 0: not written


def test_a_mission_without_conflicts_keeps_its_graph_free_of_them(project: Path) -> None:
    import_tasks(project, [spec("a", "echo a > a.txt")])
    assert run_rho("mission", "--from-tasks", cwd=project).code == 0

    graph = (mission_dir(project) / "mission-graph.json").read_text()

    for name in ("conflict_", "culprit_", "bisect_run_count"):
        assert name not in graph


# -- the pure functions ----------------------------------------------------------------------


def _feature(ident: str, status: str = "completed", **fields: Any) -> dict[str, Any]:
    commit = {"commit_id": "c" * 40} if status == "completed" else None
    return {"id": ident, "status": status, "attempts": 1, "handoff": commit, **fields}


def _join(wave: int, completed: list[str], **fields: Any) -> dict[str, Any]:
    return {"wave": wave, "completed_ids": completed, "conflicted_ids": [], **fields}


def test_culprits_bisection_and_their_replays_are_counted() -> None:
    mission = {
        "features": [
            _feature("a"),
            _feature("b", culprit_replays=1, attempts=2),
            _feature("c", status="failed", culprit_replays=1),
        ],
        "wave_joins": [
            _join(
                1, ["a"],
                verification={
                    "status": "failed", "attempts": 1, "bisect_runs": 3, "flaky": 0,
                    "culprit_ids": ["b", "c"], "fix_attempts": 0,
                },
            ),
            _join(2, ["b"], verification={"status": "passed", "attempts": 1}),
        ],
        "usage": {"cost_usd": 0.3},
    }  # fmt: skip

    stats = mission_stats(mission)

    assert stats["checks"] == {"runs": 2, "passed": 1, "failed": 1, "bisect": 3, "flaky": 0}
    assert (stats["culprits"], stats["culprits_landed"]) == (2, 1)
    assert (stats["landed"], stats["agent_runs"], stats["agent_runs_per_landed"]) == (2, 4, 2.0)
    assert stats["cost_usd"] == 0.3
    assert graph_counts(stats) == {
        "bisect_run_count": 3,
        "culprit_count": 2,
        "culprit_landed_count": 1,
    }
    assert integration_words(stats) == (
        "2 merges, 2 check runs (1 passed, 1 failed, 3 for bisection),"
        " 2 culprits (1 landed after replay), 2 agent runs per landed task"
    )


@pytest.mark.parametrize(
    ("outcome", "expected"),
    [
        ("driver", {"total": 1, "driver": 1}),
        ("replayed", {"total": 1, "replayed": 1}),
        ("failed", {"total": 1, "failed": 1}),
        ("rebased", {"total": 1, "rebased": 1}),  # an outcome a later rho may add
    ],
)
def test_conflicts_are_counted_by_outcome(outcome: str, expected: dict[str, int]) -> None:
    status = "failed" if outcome == "failed" else "completed"
    mission = {
        "features": [_feature("a", status=status, conflict={"paths": ["x"], "outcome": outcome})],
        "wave_joins": [
            _join(1, [] if status == "failed" else ["a"], conflicted_ids=["a"], failed_ids=[])
        ],
    }

    assert mission_stats(mission)["conflicts"] == {**NO_CONFLICT, **expected}


def test_a_running_check_is_no_failure_and_nothing_integrated_has_no_words() -> None:
    running = {"status": "running", "attempts": 1}
    mission = {"features": [], "wave_joins": [_join(1, [], verification=running)]}

    stats = mission_stats(mission)

    assert stats["checks"]["failed"] == 0
    assert stats["agent_runs_per_landed"] is None
    assert integration_words({**stats, "checks": {}, "agent_runs_per_landed": None}) is None


def test_a_hand_edited_mission_never_breaks_the_counts() -> None:
    odd = {"features": [{"id": 1, "attempts": "two"}, "x"], "wave_joins": [{"wave": True}]}

    assert mission_stats(odd)["agent_runs"] == 0


def test_a_bisections_passing_probes_are_passed_runs_and_older_records_keep_their_reading() -> None:
    counted = {"status": "passed", "attempts": 5, "failed_runs": 2, "bisect_runs": 3}
    older = {"status": "passed", "attempts": 5, "bisect_runs": 3}  # no failed_runs yet
    mission = {
        "features": [],
        "wave_joins": [_join(1, [], verification=counted), _join(2, [], verification=older)],
    }
    [first, second] = mission_stats(mission)["joins"]
    assert first["checks"] == {"runs": 5, "passed": 3, "failed": 2, "bisect": 3, "flaky": 0}
    assert second["checks"] == {"runs": 5, "passed": 1, "failed": 4, "bisect": 3, "flaky": 0}
