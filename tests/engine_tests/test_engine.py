"""The wave engine with library workers and real repositories: workers, joins, caps, timeouts."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from rho_mission import Feature, Handoff, Mission, MissionDocument, WaveJoin, WorkerContext
from rho_mission.git._refs import RefHistory
from rho_mission.git._repo import GitRepo
from rho_mission.records._journal import Journal
from support.library import (
    WAIT,
    JoinLog,
    ScriptedWorker,
    branches,
    fails,
    git_out,
    journal,
    plan,
    tracked_files,
    wait_for,
    without_times,
    worktree_paths,
)

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    """Run the async tests on asyncio, the backend the engine uses."""
    return "asyncio"


async def git_in(cwd: Path, *args: str) -> str:
    """The stripped output of git run in *cwd*, without blocking the event loop."""
    done = await anyio.run_process(["git", *args], cwd=cwd)
    return done.stdout.decode().strip()


# -- worker semantics ----------------------------------------------------------------------------


async def test_a_worker_returning_none_gets_its_changes_committed(repo_path: Path) -> None:
    async def edit(ctx: WorkerContext) -> Handoff | None:
        await anyio.Path(ctx.worktree / "sub").mkdir()
        await anyio.Path(ctx.worktree / "sub" / "deep.txt").write_text("deep\n")
        await anyio.Path(ctx.worktree / "file0001.txt").write_text("changed\n")
        await anyio.Path(ctx.worktree / "file0002.txt").unlink()
        return None

    mission = plan(repo_path, ["a"])
    await mission.run_staged(ScriptedWorker({"a": edit}), waves=[["a"]])

    feature = mission.feature("a")
    assert feature.status == "completed"
    assert feature.handoff == Handoff(
        commit_id=git_out(repo_path, "rev-parse", f"rho-mission/{mission.id}/a"),
        files_changed=["a.txt", "file0001.txt", "file0002.txt", "sub/deep.txt"],
        summary="4 file(s) changed",
    )
    assert git_out(repo_path, "rev-parse", f"{feature.branch}^") == mission.base_commit


async def test_a_worker_that_changes_nothing_completes_with_no_commit(repo_path: Path) -> None:
    async def undo(ctx: WorkerContext) -> Handoff | None:
        await anyio.Path(ctx.worktree / f"{ctx.feature.id}.txt").unlink()
        return None

    mission = plan(repo_path, ["a"])
    await mission.run_staged(ScriptedWorker({"a": undo}), waves=[["a"]])

    assert mission.feature("a").handoff == Handoff(summary="no changes")
    assert git_out(repo_path, "rev-parse", f"rho-mission/{mission.id}/a") == mission.base_commit


async def test_a_worker_returning_its_own_handoff_keeps_its_words_and_loses_no_work(
    repo_path: Path,
) -> None:
    own = Handoff(commit_id=None, files_changed=["x.py"], summary="did it", tests_passed=True)

    async def report(ctx: WorkerContext) -> Handoff | None:
        return own  # a.txt, written by ScriptedWorker, is left uncommitted

    seen: list[bool] = []

    async def look(ctx: WorkerContext) -> Handoff | None:
        seen.append((ctx.worktree / "a.txt").exists())
        return None

    mission = plan(repo_path, ["a", "b"])
    await mission.run_staged(ScriptedWorker({"a": report, "b": look}), waves=[["a"], ["b"]])

    handoff = mission.feature("a").handoff
    assert handoff is not None
    assert (handoff.summary, handoff.tests_passed) == ("did it", True)
    # The facts come from git: the engine committed what the worker left.
    assert handoff.files_changed == ["a.txt"]
    assert handoff.commit_id == git_out(repo_path, "rev-parse", f"rho-mission/{mission.id}/a")
    assert seen == [True]
    assert mission.status == "completed"


async def test_a_raising_worker_fails_its_feature_with_type_message_and_logged_traceback(
    repo_path: Path,
) -> None:
    async def silent(ctx: WorkerContext) -> Handoff | None:
        raise ValueError

    mission = plan(repo_path, ["a", "b"])
    worker = ScriptedWorker({"a": fails("disk on fire"), "b": silent})
    await mission.run_staged(worker, waves=[["a", "b"]])

    assert [(f.status, f.error, f.attempts, f.handoff) for f in mission.features] == [
        ("failed", "RuntimeError: disk on fire", 1, None),
        ("failed", "ValueError", 1, None),
    ]
    log = await anyio.Path(mission.dir, "logs", "a.log").read_text()
    assert log.startswith("Traceback (most recent call last):\n")
    assert "raise RuntimeError(message)" in log
    assert log.endswith("RuntimeError: disk on fire\n")


async def test_the_context_names_feature_worktree_attempt_and_wave_start(repo_path: Path) -> None:
    seen: dict[str, tuple[bool, bool, str, str]] = {}
    mission = plan(repo_path, ["a", "b", "c"])

    async def look(ctx: WorkerContext) -> Handoff | None:
        head = await git_in(ctx.worktree, "rev-parse", "HEAD")
        branch = await git_in(ctx.worktree, "symbolic-ref", "--short", "HEAD")
        same_feature = ctx.feature is mission.feature(ctx.feature.id)
        seen[ctx.feature.id] = (ctx.mission is mission, same_feature, head, branch)
        return None

    worker = ScriptedWorker(dict.fromkeys("abc", look))
    log = JoinLog(repo_path)
    await mission.run_staged(worker, waves=[["a", "b"], ["c"]], observer=log)

    calls = {call.feature: call for call in worker.calls}
    assert calls["a"].base_commit == calls["b"].base_commit == mission.base_commit
    assert calls["c"].base_commit == log.heads[1] != mission.base_commit
    for feature_id, call in calls.items():
        branch = f"rho-mission/{mission.id}/{feature_id}"
        assert seen[feature_id] == (True, True, call.base_commit, branch)
        assert call.worktree.parent == Path(mission.repo, ".rho", "worktrees", "pool")  # shared
        assert call.attempt == 1


async def test_a_feature_is_retried_in_a_clean_worktree_until_it_succeeds(repo_path: Path) -> None:
    leftovers: list[list[str]] = []

    async def flaky(ctx: WorkerContext) -> Handoff | None:
        names = [path.name async for path in anyio.Path(ctx.worktree).glob("junk*")]
        leftovers.append(names)
        await anyio.Path(ctx.worktree / f"junk{ctx.attempt}.txt").write_text("junk\n")
        if ctx.attempt < 3:
            raise RuntimeError(f"try {ctx.attempt}")
        return None

    mission = plan(repo_path, ["a"], retries=2)
    worker = ScriptedWorker({"a": flaky})
    await mission.run_staged(worker, waves=[["a"]])

    feature = mission.feature("a")
    assert (feature.status, feature.attempts, feature.error) == ("completed", 3, None)
    assert [call.attempt for call in worker.calls] == [1, 2, 3]
    assert leftovers == [[], [], []]
    assert feature.handoff is not None
    assert feature.handoff.files_changed == ["a.txt", "junk3.txt"]


async def test_a_feature_failing_every_retry_keeps_the_last_error(repo_path: Path) -> None:
    async def always(ctx: WorkerContext) -> Handoff | None:
        raise RuntimeError(f"try {ctx.attempt}")

    mission = plan(repo_path, ["a"], retries=1)
    await mission.run_staged(ScriptedWorker({"a": always}), waves=[["a"]])

    feature = mission.feature("a")
    assert (feature.status, feature.attempts, feature.error) == ("failed", 2, "RuntimeError: try 2")


async def test_a_worker_past_the_task_timeout_fails_its_feature(repo_path: Path) -> None:
    never = anyio.Event()

    async def hang(ctx: WorkerContext) -> Handoff | None:
        await never.wait()
        return None

    mission = plan(repo_path, ["a", "b"], task_timeout=0.2)
    with anyio.fail_after(WAIT):
        await mission.run_staged(ScriptedWorker({"a": hang}), waves=[["a", "b"]])

    assert mission.feature("a").status == "failed"
    assert mission.feature("a").error == "timed out after 0.2s"
    assert mission.feature("b").status == "completed"
    assert mission.status == "partial"


async def test_the_mission_timeout_cancels_running_features_and_joins(repo_path: Path) -> None:
    never = anyio.Event()

    async def hang(ctx: WorkerContext) -> Handoff | None:
        await never.wait()
        return None

    mission = plan(repo_path, ["a", "b", "c"], timeout=0.5)
    worker = ScriptedWorker({"a": hang, "b": hang})
    with anyio.fail_after(WAIT):
        await mission.run_staged(worker, waves=[["a", "b"], ["c"]])

    assert mission.status == "cancelled"
    assert [(f.id, f.status) for f in mission.features] == [
        ("a", "cancelled"),
        ("b", "cancelled"),
        ("c", "pending"),
    ]
    [join] = mission.wave_joins
    # No feature declares a blocker: the waves are the order, and c waits for wave 1. It was
    # only not reached (a cancellation blocks nothing: a resume runs it).
    assert (join.cancelled_ids, join.blocked_ids, join.not_run_ids) == (["a", "b"], [], ["c"])
    assert join.summary == "wave 1 joined 2 feature(s), 0 completed, 0 failed, 2 cancelled"
    on_disk = Mission.load(mission.dir)
    assert (on_disk.status, on_disk.wave_joins) == ("cancelled", mission.wave_joins)
    assert "c" not in worker.ran
    assert worktree_paths(repo_path) == [Path(mission.repo)]


async def test_an_outer_cancellation_is_recorded_then_re_raised(repo_path: Path) -> None:
    started = anyio.Event()
    reraised: list[bool] = []

    async def hang(ctx: WorkerContext) -> Handoff | None:
        started.set()
        await anyio.sleep_forever()
        return None

    mission = plan(repo_path, ["a", "b"])

    async def run() -> None:
        try:
            await mission.run_staged(ScriptedWorker({"a": hang}), waves=[["a"], ["b"]])
        except anyio.get_cancelled_exc_class():
            reraised.append(True)
            raise

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        await wait_for(started)
        group.cancel_scope.cancel()

    assert reraised == [True]
    assert (mission.status, mission.feature("a").status) == ("cancelled", "cancelled")
    assert [join.cancelled_ids for join in Mission.load(mission.dir).wave_joins] == [["a"]]


# -- waves and joins -----------------------------------------------------------------------------


async def test_downstream_features_see_their_blockers_work(
    repo: GitRepo, snapshot: Callable[[Path], str]
) -> None:
    root = repo.root
    before = snapshot(root)
    seen: dict[str, str] = {}

    async def read_upstream(ctx: WorkerContext) -> Handoff | None:
        for name in ("a.txt", "b.txt"):
            seen[name] = await anyio.Path(ctx.worktree / name).read_text()
        return None

    mission = plan(root, ["a", "b", "c"])
    await mission.run_staged(ScriptedWorker({"c": read_upstream}), waves=[["a", "b"], ["c"]])

    assert mission.status == "completed"
    assert seen == {"a.txt": "a\n", "b.txt": "b\n"}
    integration = f"rho-mission/{mission.id}/integration"
    assert {"a.txt", "b.txt", "c.txt"} <= set(tracked_files(root, integration))
    assert git_out(root, "show", f"{integration}:c.txt") == "c"
    assert branches(root, f"rho-mission/{mission.id}/*") == [
        f"rho-mission/{mission.id}/{name}" for name in ("a", "b", "c", "integration")
    ]
    assert worktree_paths(root) == [root]
    assert not await anyio.Path(root, ".rho", "worktrees", mission.id).exists()
    assert snapshot(root) == before


async def test_kept_worktrees_stay_with_the_features_work(repo_path: Path) -> None:
    mission = plan(repo_path, ["a", "b"], keep_worktrees=True)
    worker = ScriptedWorker()
    await mission.run_staged(worker, waves=[["a"], ["b"]])

    kept = {call.feature: call.worktree for call in worker.calls}
    assert sorted(worktree_paths(repo_path)[1:]) == sorted(kept.values())
    assert (kept["a"] / "a.txt").read_text() == "a\n"
    assert (kept["b"] / "a.txt").read_text() == "a\n"
    # Detached at the feature branch's head, so that a retry elsewhere can still move the branch.
    branch_head = git_out(repo_path, "rev-parse", f"rho-mission/{mission.id}/b")
    assert git_out(kept["b"], "rev-parse", "HEAD") == branch_head


async def test_the_engine_excludes_its_folder_from_the_users_status(repo_path: Path) -> None:
    mission = plan(repo_path, ["a"])
    await mission.run_staged(ScriptedWorker(), waves=[["a"]])

    exclude = (repo_path / ".git" / "info" / "exclude").read_text().splitlines()
    assert ".rho/" in exclude
    assert git_out(repo_path, "status", "--porcelain", "--untracked-files=all") == ""


async def test_a_failed_feature_stops_the_mission_after_its_join(repo_path: Path) -> None:
    mission = plan(repo_path, ["a", "b", "c", "d", "e"])
    worker = ScriptedWorker({"b": fails("b broke")})
    log = JoinLog(repo_path)
    # Listed out of order: every id list of the join comes out sorted.
    await mission.run_staged(worker, waves=[["b", "a"], ["e", "d"], ["c"]], observer=log)

    assert sorted(worker.ran) == ["a", "b"]
    assert {feature for feature, _ in log.changes} == {"a", "b"}
    [join] = mission.wave_joins
    assert join.verification.status == "skipped"  # no verify stage (tests/*/test_verify_*.py)
    assert join.model_dump(exclude={"started_at", "completed_at", "verification"}) == {
        "wave": 1,
        "feature_ids": ["a", "b"],
        "completed_ids": ["a"],
        "failed_ids": ["b"],
        "cancelled_ids": [],
        # None declares a blocker: the caller's waves are the only order there is, and the
        # later waves are downstream of the failure (the seed's record).
        "blocked_ids": ["c", "d", "e"],
        "not_run_ids": [],
        "conflicted_ids": [],
        "summary": "wave 1 joined 2 feature(s), 1 completed, 1 failed, 3 downstream blocked",
        "usage": None,  # library workers that wrote no $RHO_USAGE_FILE: nothing recorded
    }
    assert [mission.feature(i).status for i in "cde"] == ["pending"] * 3
    assert mission.status == "partial"
    dispatched = [e["feature_id"] for e in journal(mission) if e["event"] == "dispatch"]
    assert sorted(dispatched) == ["a", "b"]


async def test_only_what_depends_on_a_failure_is_called_blocked(repo_path: Path) -> None:
    # f fails; i is independent; j waits for i, k for f, m for k: k and m are blocked.
    mission = plan(repo_path, [])
    for feature in (
        Feature("f"),
        Feature("i"),
        Feature("j", blocked_by=["i"]),
        Feature("k", blocked_by=["f"]),
        Feature("m", blocked_by=["k", "j"]),
    ):
        mission.add_feature(feature)
    await mission.run_staged(ScriptedWorker({"f": fails("f broke")}))

    assert mission.waves == [["f", "i"], ["j", "k"], ["m"]]
    [join] = mission.wave_joins
    assert (join.failed_ids, join.blocked_ids, join.not_run_ids) == (["f"], ["k", "m"], ["j"])
    assert join.summary == "wave 1 joined 2 feature(s), 1 completed, 1 failed, 2 downstream blocked"


@pytest.mark.parametrize(
    ("waves", "failing", "status"),
    [
        ([["a", "b"], ["c"]], "", "completed"),
        ([["a", "b"]], "ab", "failed"),
        ([["a"], ["b"]], "a", "failed"),
        ([["a", "b"], ["c"]], "b", "partial"),
        ([["a"], ["b", "c"]], "c", "partial"),
    ],
    ids=["all-done", "all-failed", "first-wave-failed", "some-failed", "last-wave-failed"],
)
async def test_the_final_status_follows_the_outcomes(
    repo_path: Path, waves: list[list[str]], failing: str, status: str
) -> None:
    ids = [i for wave in waves for i in wave]
    mission = plan(repo_path, ids)
    await mission.run_staged(ScriptedWorker({i: fails("no") for i in failing}), waves=waves)

    assert mission.status == status
    assert Mission.load(mission.dir).status == status
    assert mission.completed_at is not None


async def test_a_merge_conflict_fails_the_later_feature_in_sorted_order(repo_path: Path) -> None:
    async def write_shared(ctx: WorkerContext) -> Handoff | None:
        await anyio.Path(ctx.worktree / "shared.txt").write_text(f"from {ctx.feature.id}\n")
        return None

    mission = plan(repo_path, ["a", "b", "c"])
    worker = ScriptedWorker({"a": write_shared, "b": write_shared})
    await mission.run_staged(worker, waves=[["b", "a"], ["c"]])

    a, b, c = mission.features
    assert (a.status, b.status, b.error, b.handoff) == (
        "completed",
        "failed",
        "merge conflict in shared.txt with a (do a)",
        None,
    )
    assert c.status == "pending"
    integration = f"rho-mission/{mission.id}/integration"
    assert git_out(repo_path, "show", f"{integration}:shared.txt") == "from a"
    assert "b.txt" not in tracked_files(repo_path, integration)
    [join] = mission.wave_joins
    assert (join.feature_ids, join.completed_ids, join.failed_ids, join.blocked_ids) == (
        ["a", "b"],
        ["a"],
        ["b"],
        ["c"],
    )
    assert join.summary == (
        "wave 1 joined 2 feature(s), 1 completed, 1 failed, 1 downstream blocked, 1 conflicted"
    )


class _FinishOrder:
    """An observer that lets each feature of *order* finish only after the one before it."""

    def __init__(self, order: str) -> None:
        self.order = order
        self.ended = {feature_id: anyio.Event() for feature_id in order}

    def feature_changed(self, mission: MissionDocument, feature: Feature) -> None:
        if feature.status in ("completed", "failed"):
            self.ended[feature.id].set()

    def wave_joined(self, mission: MissionDocument, join: WaveJoin) -> None:
        pass

    async def script(self, ctx: WorkerContext) -> Handoff | None:
        index = self.order.index(ctx.feature.id)
        if index:
            await wait_for(self.ended[self.order[index - 1]])
        if ctx.feature.id == "b":
            raise RuntimeError("b broke")
        return None


async def _run_finishing_in(repo: Path, order: str) -> tuple[Mission, list[str]]:
    finish = _FinishOrder(order)
    mission = plan(repo, ["a", "b", "c", "d"])
    worker = ScriptedWorker(dict.fromkeys(order, finish.script))
    await mission.run_staged(worker, waves=[["a", "b", "c"], ["d"]], observer=finish)
    ended = [e["feature_id"] for e in journal(mission) if e["event"] == "finish"]
    return mission, ended


async def test_join_records_do_not_depend_on_the_finish_order(repo_path: Path) -> None:
    first, first_order = await _run_finishing_in(repo_path, "abc")
    second, second_order = await _run_finishing_in(repo_path, "cba")

    assert (first_order, second_order) == (["a", "b", "c"], ["c", "b", "a"])
    assert without_times(first.wave_joins) == without_times(second.wave_joins)
    assert without_times(first.wave_joins)[0]["blocked_ids"] == ["d"]
    assert first.status == second.status == "partial"


# -- the worker cap ------------------------------------------------------------------------------


class _Gauge:
    """Counts dispatched features (as an observer) and running workers (as their script).

    A worker goes on once *cap* workers run (or all that are left do) and every dispatched
    feature is in its worker: so if the engine let one more feature start, that feature would
    be caught running alongside the others.
    """

    def __init__(self, cap: int, total: int) -> None:
        self.cap = cap
        self.total = total
        self.active = 0  # dispatched and not ended
        self.running = 0  # inside the worker
        self.left = 0  # done with the worker
        self.peak = 0
        self.peak_active = 0
        self._changed = anyio.Event()

    def _poke(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    def feature_changed(self, mission: MissionDocument, feature: Feature) -> None:
        self.active += 1 if feature.status == "in_progress" else -1
        self.peak_active = max(self.peak_active, self.active)
        self._poke()

    def wave_joined(self, mission: MissionDocument, join: WaveJoin) -> None:
        pass

    def _may_go_on(self) -> bool:
        everyone = self.running >= min(self.cap, self.total - self.left)
        return everyone and self.running == self.active

    async def script(self, ctx: WorkerContext) -> Handoff | None:
        self.running += 1
        self.peak = max(self.peak, self.running)
        self._poke()
        with anyio.fail_after(WAIT):
            while not self._may_go_on():
                await self._changed.wait()
        self.running -= 1
        self.left += 1
        self._poke()
        return Handoff(summary="counted")


@pytest.mark.parametrize(("cap", "total"), [(2, 5), (3, 7)])
async def test_the_worker_cap_holds_and_is_reached(repo_path: Path, cap: int, total: int) -> None:
    ids = [f"f{index}" for index in range(total)]
    gauge = _Gauge(cap, total)
    mission = plan(repo_path, ids, max_workers=cap)
    worker = ScriptedWorker(dict.fromkeys(ids, gauge.script))
    await mission.run_staged(worker, waves=[ids], observer=gauge)

    assert [f.status for f in mission.features] == ["completed"] * total
    assert (gauge.peak, gauge.peak_active) == (cap, cap)
    assert sorted(worker.ran) == ids


async def test_a_join_that_git_refuses_fails_the_feature_and_resume_merges_it(
    repo_path: Path, tmp_path: Path
) -> None:
    """Not only conflicts: any refusal of the merge keeps the work out of the integration
    branch, so the feature is failed, and the wave runs again on resume."""
    mission = plan(repo_path, ["a", "b"])
    holder = tmp_path / "holder"

    async def hold_integration(ctx: WorkerContext) -> Handoff | None:
        # The user checks the integration branch out while the wave runs: the merge must not
        # move a checked-out branch.
        git_out(repo_path, "worktree", "add", "-q", str(holder), mission.integration_branch)
        return None

    await mission.run_staged(ScriptedWorker({"a": hold_integration}), waves=[["a"], ["b"]])
    assert (mission.feature("a").status, mission.feature("b").status) == ("failed", "pending")
    assert "is checked out at" in (mission.feature("a").error or "")

    git_out(repo_path, "worktree", "remove", "--force", str(holder))
    worker = ScriptedWorker()
    await mission.resume(worker)

    assert mission.status == "completed"
    assert worker.ran == ["a", "b"]
    files = git_out(repo_path, "ls-tree", "--name-only", mission.integration_branch).split()
    assert {"a.txt", "b.txt"} <= set(files)


async def test_a_refused_move_of_the_join_fails_every_feature_it_carried(
    repo_path: Path, tmp_path: Path
) -> None:
    """The wave's merges move the integration branch once: when git refuses that move, no
    feature of the wave has its work there, so each of them is failed (and resume merges them)."""
    mission = plan(repo_path, ["a", "b"])
    holder = tmp_path / "holder"

    async def hold_integration(ctx: WorkerContext) -> Handoff | None:
        git_out(repo_path, "worktree", "add", "-q", str(holder), mission.integration_branch)
        (ctx.worktree / "a.txt").write_text("a\n", encoding="utf-8")
        return None

    await mission.run_staged(ScriptedWorker({"a": hold_integration}), waves=[["a", "b"]])
    for name in "ab":
        assert mission.feature(name).status == "failed"
        assert "is checked out at" in (mission.feature(name).error or "")
    assert git_out(repo_path, "rev-parse", mission.integration_branch).strip() == (
        mission.base_commit
    )
    git_out(repo_path, "worktree", "remove", "--force", str(holder))
    await mission.resume(ScriptedWorker())
    assert mission.status == "completed"
    files = git_out(repo_path, "ls-tree", "--name-only", mission.integration_branch).split()
    assert {"a.txt", "b.txt"} <= set(files)


async def test_resume_restarts_the_integration_branch_from_the_last_recorded_join(
    repo_path: Path,
) -> None:
    """A crash in the middle of a join can leave part of a wave merged; resume drops it.

    The stray head is one rho journaled as its own (a join's move noted, then a crash).
    """

    async def fail(ctx: WorkerContext) -> Handoff | None:
        raise RuntimeError("not yet")

    mission = plan(repo_path, ["a", "b"])
    await mission.run_staged(ScriptedWorker({"b": fail}), waves=[["a"], ["b"]])
    recorded = git_out(repo_path, "rev-parse", mission.integration_branch)
    assert mission.integration_head == recorded
    tree = git_out(repo_path, "rev-parse", f"{recorded}^{{tree}}")
    stray = git_out(repo_path, "commit-tree", tree, "-p", recorded, "-m", "half a join")
    history = RefHistory.load(Journal(Path(mission.dir, "journal.jsonl")))
    history.note(mission.integration_branch, stray, "join")
    git_out(repo_path, "update-ref", f"refs/heads/{mission.integration_branch}", stray)

    await mission.resume(ScriptedWorker())

    assert mission.status == "completed"
    commits = git_out(repo_path, "rev-list", mission.integration_branch).split()
    assert recorded in commits
    assert stray not in commits


async def test_kept_worktrees_do_not_stop_a_retry(repo_path: Path) -> None:
    async def fail_once(ctx: WorkerContext) -> Handoff | None:
        if ctx.attempt == 1:
            raise RuntimeError("flaky")
        return None

    mission = plan(repo_path, ["a"], retries=1, keep_worktrees=True)
    await mission.run_staged(ScriptedWorker({"a": fail_once}), waves=[["a"]])

    assert (mission.feature("a").status, mission.feature("a").attempts) == ("completed", 2)


async def test_resume_joins_a_wave_whose_features_finished_but_whose_join_was_lost(
    repo_path: Path,
) -> None:
    """A crash after a wave's features completed but before its join was saved."""
    mission = plan(repo_path, ["a", "b"])
    await mission.run_staged(ScriptedWorker(), waves=[["a"], ["b"]])
    after_wave_1 = git_out(repo_path, "rev-parse", f"rho-mission/{mission.id}/a")
    del mission.wave_joins[1:]
    mission.integration_head = after_wave_1
    git_out(repo_path, "update-ref", f"refs/heads/{mission.integration_branch}", after_wave_1)

    worker = ScriptedWorker()
    await mission.resume(worker)

    assert worker.ran == []  # b completed: not run again, only joined
    assert [join.wave for join in mission.wave_joins] == [1, 2]
    files = git_out(repo_path, "ls-tree", "--name-only", mission.integration_branch).split()
    assert "b.txt" in files


async def test_staged_waves_without_blockers_record_the_next_wave_as_blocked(
    repo_path: Path,
) -> None:
    # The Go original's TestMission_RunWaves_StopsAfterFailure and
    # TestBuildPortableGraphIncludesWaveJoinOperations: features that declare no
    # blocker, staged by the caller's waves, f1 failing.
    mission = plan(repo_path, ["f1", "f2"])
    await mission.run_staged(ScriptedWorker({"f1": fails("f1 broke")}), waves=[["f1"], ["f2"]])

    [join] = mission.wave_joins
    assert (join.blocked_ids, join.not_run_ids) == (["f2"], [])
    assert join.summary == "wave 1 joined 1 feature(s), 0 completed, 1 failed, 1 downstream blocked"
    graph = json.loads((Path(mission.dir) / "mission-graph.json").read_text())
    (wave,) = [n for n in graph["nodes"] if n["attributes"].get("entity_type") == "wave_join"]
    assert int(wave["attributes"]["blocked_count"]) == 1


async def test_declared_blockers_keep_the_finer_rule(repo_path: Path) -> None:
    # Where features say what they wait for, only those downstream of the failure are blocked.
    mission = plan(repo_path, ["f1", "f2", "f3"])
    mission.feature("f3").blocked_by = ["f1"]
    worker = ScriptedWorker({"f1": fails("f1 broke")})
    await mission.run_staged(worker, waves=[["f1"], ["f2", "f3"]])

    [join] = mission.wave_joins
    assert (join.blocked_ids, join.not_run_ids) == (["f3"], ["f2"])
