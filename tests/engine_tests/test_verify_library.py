"""Verified joins from the library: ``run_staged(..., verify=..., fix=...)`` with Python workers.

The features mirror the CLI tests: ``rename`` renames ``a.old`` to ``a.new``, ``caller`` adds a
caller of ``a.old`` to ``b.py``; they merge cleanly and break together. ``later`` needs
``rename``; ``aside`` needs nothing and sits in wave 2 beside it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import anyio
import pytest

from rho_mission import (
    FeatureFailedError,
    Handoff,
    InvalidMissionError,
    Mission,
    MissionConfig,
    MissionDocument,
    WorkerContext,
)
from rho_mission.engine._joins import first_unfinished, join_record
from rho_mission.engine._stage_workers import StageRun
from rho_mission.records._document import Feature, Verification, WaveJoin
from support.library import JoinLog, git_out
from support.repos import run_git

pytestmark = pytest.mark.anyio

WAVES = [["caller", "rename"], ["aside", "later"]]


@pytest.fixture
def anyio_backend() -> str:
    """Run the async tests on asyncio, the backend the engine uses."""
    return "asyncio"


@pytest.fixture
def project(repo_path: Path) -> Path:
    """The test repository with ``a.py`` (``old()``) and ``b.py`` (``import a``) committed."""
    (repo_path / "a.py").write_text("def old():\n    return 1\n")
    (repo_path / "b.py").write_text("import a\n")
    run_git(repo_path, "add", "a.py", "b.py")
    run_git(repo_path, "commit", "--quiet", "--message=a and b")
    return repo_path


def _plan(repo: Path, **config: object) -> Mission:
    features = [
        Feature("rename", "rename old"),
        Feature("caller", "call old"),
        Feature("later", "after the rename", blocked_by=["rename"]),
        Feature("aside", "independent"),
    ]
    # The verify and fix stages as they are without bisection (test_bisect_join has it).
    return Mission.new(
        repo, "verified joins", features, MissionConfig(**{"bisect": False, **config})
    )


def work(ctx: WorkerContext) -> None:
    """The features: each changes its file in its worktree."""
    tree = ctx.worktree
    if ctx.feature.id == "rename":
        (tree / "a.py").write_text("def new():\n    return 1\n")
    elif ctx.feature.id == "caller":
        (tree / "b.py").write_text("import a\nX = a.old()\n")
    else:
        (tree / f"{ctx.feature.id}.txt").write_text("done\n")


def check(ctx: WorkerContext) -> None:
    """The project's check: every name ``b.py`` calls in ``a`` is defined there."""
    a, b = (ctx.worktree / "a.py").read_text(), (ctx.worktree / "b.py").read_text()
    if "a.old()" in b and "def old" not in a:
        raise FeatureFailedError("b.py calls a.old, which a.py no longer defines")


@dataclass
class Fixer:
    """A fix stage that records what it was told, then repairs b.py."""

    contexts: list[WorkerContext] = field(default_factory=list)

    async def __call__(self, ctx: WorkerContext) -> Handoff | None:
        self.contexts.append(ctx)
        path = anyio.Path(ctx.worktree / "b.py")
        await path.write_text((await path.read_text()).replace("a.old", "a.new"))
        return None


@dataclass
class StageLog(JoinLog):
    """A join log that also notes every run of a stage."""

    stages: list[str] = field(default_factory=list)

    def stage_changed(self, mission: MissionDocument, run: StageRun) -> None:
        self.stages.append(f"{run.name} {run.status} {run.attempt}")


async def test_python_verify_and_fix_workers_repair_the_wave(project: Path) -> None:
    mission = _plan(project)
    fixer = Fixer()
    log = StageLog(project)

    await mission.run_staged(work, waves=WAVES, verify=check, fix=fixer, observer=log)

    assert mission.status == "completed"
    first = mission.wave_joins[0].verification
    assert (first.status, first.attempts, first.fix_attempts) == ("passed", 2, 1)
    assert (first.command_sha256, first.fix_command_sha256) == (None, None)  # no command ran
    assert first.head == log.heads[1]
    [ctx] = fixer.contexts
    folder = Path(mission.dir)
    assert (ctx.feature.id, ctx.wave, ctx.attempt) == ("fix-1", 1, 1)
    assert ctx.verify_log == folder / "logs" / "verify-1.log"
    # The log ends with why the checks failed, whoever ran them (here a Python worker).
    last = ctx.verify_log.read_text().splitlines()[1]
    assert (
        last
        == "== rho: verify-1 attempt 1 failed: b.py calls a.old, which a.py no longer defines =="
    )
    assert log.stages == [
        "verify-1 running 1",
        "verify-1 failed 1",
        "fix-1 running 1",
        "fix-1 completed 1",
        "verify-1 running 2",
        "verify-1 passed 2",
        "verify-2 running 1",
        "verify-2 passed 1",
    ]
    head = mission.integration_head
    assert head is not None
    assert git_out(project, "show", f"{head}:b.py") == "import a\nX = a.new()"


async def test_a_failed_check_blocks_every_later_wave_even_with_keep_going(project: Path) -> None:
    mission = _plan(project, keep_going=True)

    await mission.run_staged(work, waves=WAVES, verify=check)

    [join] = mission.wave_joins
    # later waits for the unverified work; aside does not, and did not run only for the stop.
    assert (join.blocked_ids, join.not_run_ids) == (["later"], ["aside"])
    assert join.verification.error == "b.py calls a.old, which a.py no longer defines"
    assert [mission.feature(i).status for i in ("aside", "later")] == ["pending", "pending"]
    assert mission.status == "partial"


async def test_a_check_that_raises_fails_with_its_type_and_logs_its_traceback(
    project: Path,
) -> None:
    def broken(ctx: WorkerContext) -> None:
        raise ValueError("no checker here")

    mission = _plan(project)
    await mission.run_staged(work, waves=WAVES, verify=broken)

    assert mission.wave_joins[0].verification.error == "ValueError: no checker here"
    log = (Path(mission.dir) / "logs" / "verify-1.log").read_text()
    assert "Traceback (most recent call last):" in log


async def test_a_fix_stage_needs_a_verify_stage(project: Path) -> None:
    mission = _plan(project)
    message = (
        r"^a fix stage needs a verify stage: set verify_command \(--verify CMD\) or pass verify=$"
    )
    with pytest.raises(InvalidMissionError, match=message):
        await mission.run_staged(work, waves=WAVES, fix=Fixer())
    assert not await anyio.Path(mission.dir).exists()


async def test_a_cancelled_check_is_recorded_and_resume_checks_again(project: Path) -> None:
    started = anyio.Event()

    async def hangs(ctx: WorkerContext) -> None:
        started.set()
        await anyio.sleep_forever()

    mission = _plan(project)
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as group:
            group.start_soon(lambda: mission.run_staged(work, waves=WAVES, verify=hangs))
            await started.wait()
            scope.cancel()

    [join] = mission.wave_joins
    assert (mission.status, join.verification.status) == ("cancelled", "cancelled")
    # Cancelled checks failed nothing: what waits for the wave is not run, not blocked.
    assert join.summary.endswith(" failed, verification cancelled")
    assert join.blocked_ids == []

    await mission.resume(work, verify=check, fix=Fixer())

    assert mission.status == "completed"
    assert mission.wave_joins[0].verification.status == "passed"


async def test_a_verify_stage_added_at_resume_checks_the_last_joined_head(project: Path) -> None:
    def fails_later(ctx: WorkerContext) -> Handoff | None:
        if ctx.feature.id == "later":
            raise FeatureFailedError("later broke")
        work(ctx)
        return None

    mission = _plan(project)
    await mission.run_staged(fails_later, waves=WAVES)  # unverified: wave 1 goes through
    assert [j.verification.status for j in mission.wave_joins] == ["skipped", "skipped"]

    await mission.resume(work, verify=check, fix=Fixer())

    assert mission.status == "completed"
    checked = [(j.verification.status, j.verification.fix_attempts) for j in mission.wave_joins]
    assert checked == [("passed", 1), ("passed", 0)]


# -- the join records, as pure functions ------------------------------------------------------


def _join(status: str, *, failed: bool = False) -> WaveJoin:
    return WaveJoin(
        wave=1,
        feature_ids=["a"],
        completed_ids=[] if failed else ["a"],
        failed_ids=["a"] if failed else [],
        blocked_ids=[],
        started_at="2024-01-01T00:00:00Z",
        completed_at="2024-01-01T00:00:01Z",
        summary="",
        verification=Verification.model_validate({"status": status}),
    )


@pytest.mark.parametrize(
    ("joins", "verifying", "first"),
    [
        ([], False, 0),
        (["passed"], False, 1),
        (["skipped"], False, 1),
        (["failed"], False, 0),
        (["running"], False, 0),  # a crash during the checks: they run again
        (["cancelled"], False, 0),
        (["passed", "failed"], True, 1),
        (["skipped"], True, 0),  # the stage added at resume: the last head is checked
        (["skipped", "skipped"], True, 1),  # only the head the next wave starts from
        (["passed", "passed"], True, 2),
    ],
)
def test_the_first_unfinished_wave_is_one_not_verified(
    joins: list[str], verifying: bool, first: int
) -> None:
    features = [Feature("a", status="completed"), Feature("b", status="completed")]
    records = [_join(status).model_copy(update={"wave": n}) for n, status in enumerate(joins, 1)]
    waves = [["a"], ["b"]]
    assert first_unfinished(features, waves, records, verifying=verifying) == first


@pytest.mark.parametrize(
    ("status", "attempts", "summary"),
    [
        ("skipped", 0, "wave 1 joined 1 feature(s), 1 completed, 0 failed"),
        ("running", 1, "wave 1 joined 1 feature(s), 1 completed, 0 failed, verifying"),
        ("passed", 1, "wave 1 joined 1 feature(s), 1 completed, 0 failed, verified"),
        (
            "passed",
            0,
            "wave 1 joined 1 feature(s), 1 completed, 0 failed, its head unchanged since its "
            "checks passed",
        ),
        (
            "failed",
            1,
            "wave 1 joined 1 feature(s), 1 completed, 0 failed, 1 downstream blocked, "
            "verification failed",
        ),
    ],
)
def test_the_join_summary_ends_with_what_the_checks_said(
    status: str, attempts: int, summary: str
) -> None:
    features = [Feature("a", status="completed"), Feature("b", blocked_by=["a"])]
    checked = Verification.model_validate({"status": status, "attempts": attempts})
    join = join_record(features, [["a"], ["b"]], 1, "2024-01-01T00:00:00Z", verification=checked)
    assert join.summary == summary
