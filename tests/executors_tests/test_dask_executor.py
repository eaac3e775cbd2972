"""The Dask executor on a real LocalCluster of 2 worker processes, a bare repository as remote.

A cluster process is started once for the module (``_dask_cluster.py``); missions reach it with
``--scheduler``. One test lets ``rho`` start its own ``--local-cluster``.
"""

from __future__ import annotations

import functools
import os
import shlex
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from distributed import Client

from rho_mission.containment._mission_processes import mission_processes
from rho_mission.executors._remote import kill_remote_task
from support.procs import environ_has
from support.repos import run_git, tree_files
from support.rho import RHO, RhoRuns, read_pid, rho_env, run_rho, wait_file_cmd, wait_until
from support.stores import import_tasks, mission_dir, spec, store_tasks

pytestmark = pytest.mark.usefixtures("no_leftover_tasks")


@pytest.fixture(scope="module")
def scheduler(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The address of a LocalCluster running in a process of its own."""
    home = tmp_path_factory.mktemp("dask-home")
    env = {**rho_env(), "HOME": str(home), "GIT_CONFIG_GLOBAL": os.devnull}
    cluster = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("_dask_cluster.py"))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    assert cluster.stdout is not None
    assert cluster.stdin is not None
    address = cluster.stdout.readline().strip()
    assert address.startswith("tcp://"), "the cluster did not start"
    yield address
    cluster.stdin.close()
    cluster.wait(timeout=60)


def _held_on_its_worker(tmp_path: Path) -> tuple[str, Path, Path]:
    """A task command that writes the pid of the Dask worker running it and waits for a gate;
    with the pid file and the gate."""
    pid_file, gate = tmp_path / "worker.pid", tmp_path / "gate"
    # The shell's parent is its supervisor; the supervisor's parent, the worker's zygote (which
    # forks the supervisors: containment._zygote); the zygote's parent, the Dask worker.
    worker_pid = "zygote=$(cut -d' ' -f4 /proc/$PPID/stat); cut -d' ' -f4 /proc/$zygote/stat"
    return f"{worker_pid} > {shlex.quote(str(pid_file))}; {wait_file_cmd(gate)}", pid_file, gate


def _with_remote(repo: Path) -> Path:
    remote = repo.parent / "remote.git"
    run_git(repo.parent, "init", "--quiet", "--bare", str(remote))
    run_git(repo, "remote", "add", "origin", str(remote))
    return remote


def _diamond(repo: Path) -> None:
    import_tasks(
        repo,
        [
            spec("base", "echo base > base.txt"),
            spec("left", "cat base.txt > left.txt; echo left >> left.txt", "base"),
            spec("right", "cat base.txt > right.txt; echo right >> right.txt", "base"),
            spec("top", "cat left.txt right.txt > top.txt", "left", "right"),
        ],
    )


def _integration_tree(repo: Path) -> dict[str, str]:
    mission = mission_dir(repo).name
    return tree_files(repo, f"rho-mission/{mission}/integration")


def test_a_diamond_on_the_cluster_integrates_as_the_local_executor_does(
    make_repo: Callable[[str, int], Path], scheduler: str
) -> None:
    local, remote_run, own_cluster = (make_repo(name, 1) for name in ("local", "dask", "own"))
    for repo in (local, remote_run, own_cluster):
        _diamond(repo)
    for repo in (remote_run, own_cluster):
        _with_remote(repo)
    assert run_rho("mission", "--from-tasks", cwd=local).code == 0
    on_cluster = run_rho("mission", "--from-tasks", "--executor", "dask", "--scheduler", scheduler,
                         cwd=remote_run)  # fmt: skip
    assert on_cluster.code == 0, on_cluster.stderr
    started = run_rho("mission", "--from-tasks", "--executor", "dask", "--local-cluster", "2",
                      cwd=own_cluster)  # fmt: skip
    assert started.code == 0, started.stderr
    expected = _integration_tree(local)
    assert expected["top.txt"] == "base\nleft\nbase\nright\n"
    assert _integration_tree(remote_run) == expected
    assert _integration_tree(own_cluster) == expected
    assert {t["status"] for t in store_tasks(remote_run).values()} == {"completed"}
    log = (mission_dir(remote_run) / "logs" / "top.log").read_text().splitlines()
    # The task printed nothing: its log came back with rho's two lines only, not missing.
    assert [line.split(":")[0] for line in log] == ["== rho", "== rho"], log


def test_a_wide_wave_runs_on_threaded_workers_at_once(
    make_repo: Callable[[str, int], Path], scheduler: str
) -> None:
    # Two threads a worker: attempts share a worker process (each thread has its own clone).
    repo = make_repo("repo", 1)
    _with_remote(repo)
    import_tasks(repo, [spec(f"t{i}", f"echo {i} > t{i}.txt") for i in range(8)])
    result = run_rho("mission", "--from-tasks", "--workers", "4", "--executor", "dask",
                     "--scheduler", scheduler, cwd=repo)  # fmt: skip
    assert result.code == 0, result.stdout + result.stderr
    assert {f"t{i}.txt" for i in range(8)} <= set(_integration_tree(repo))


def test_a_worker_killed_mid_feature_fails_it_and_blocks_its_downstream(
    make_repo: Callable[[str, int], Path], scheduler: str, tmp_path: Path, runs: RhoRuns
) -> None:
    repo = make_repo("repo", 1)
    _with_remote(repo)
    hold, pid_file, gate = _held_on_its_worker(tmp_path)
    import_tasks(repo, [spec("doomed", hold), spec("after", "echo after > after.txt", "doomed")])
    mission = runs.start("mission", "--from-tasks", "--executor", "dask", "--scheduler", scheduler,
                         cwd=repo)  # fmt: skip
    os.kill(read_pid(pid_file), signal.SIGKILL)  # the Dask worker process running "doomed"
    result = runs.wait(mission)
    gate.touch()
    assert result.code == 1, result.stderr
    tasks = store_tasks(repo)
    assert (tasks["doomed"]["status"], tasks["after"]["status"]) == ("failed", "pending")
    assert "dask worker running this attempt died" in tasks["doomed"]["lastError"]


def test_a_cancelled_mission_leaves_no_process_on_the_workers(
    make_repo: Callable[[str, int], Path], scheduler: str, tmp_path: Path, runs: RhoRuns
) -> None:
    repo = make_repo("repo", 1)
    _with_remote(repo)
    marker = tmp_path / "started"
    import_tasks(repo, [spec("long", f"touch {shlex.quote(str(marker))}; sleep 300")])
    mission = runs.start("mission", "--from-tasks", "--executor", "dask", "--scheduler", scheduler,
                         cwd=repo)  # fmt: skip
    wait_until(marker.exists, "the task to start on a worker")
    mission_id = mission_dir(repo).name
    assert mission_processes(mission_id), "the task runs under the mission's mark"
    mission.send_signal(signal.SIGINT)
    assert runs.wait(mission).code == 130
    assert mission_processes(mission_id) == []
    assert store_tasks(repo)["long"]["status"] == "pending"  # rho's stop: to do again


def test_a_failed_dask_mission_resumes_on_the_local_executor(
    make_repo: Callable[[str, int], Path], scheduler: str
) -> None:
    repo = make_repo("repo", 1)
    _with_remote(repo)
    import_tasks(
        repo,
        [spec("one", "echo one > one.txt; exit 3"), spec("two", "cat one.txt > two.txt", "one")],
    )
    failed = run_rho("mission", "--from-tasks", "--executor", "dask", "--scheduler", scheduler,
                     cwd=repo)  # fmt: skip
    assert failed.code == 1
    assert "exit code 3" in (mission_dir(repo) / "mission.json").read_text()
    assert run_rho("task", "update", "one", "--command", "echo one > one.txt", cwd=repo).code == 0
    resumed = run_rho("mission", "resume", "latest", cwd=repo)
    assert resumed.code == 0, resumed.stderr
    assert _integration_tree(repo)["two.txt"] == "one\n"


def test_a_push_the_remote_refuses_fails_that_feature(
    make_repo: Callable[[str, int], Path], scheduler: str
) -> None:
    repo = make_repo("repo", 1)
    remote = _with_remote(repo)
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\nif grep -q /refused; then echo no >&2; exit 1; fi\n")
    hook.chmod(0o755)
    import_tasks(repo, [spec("refused", "echo x > x.txt"), spec("fine", "echo y > y.txt")])
    result = run_rho("mission", "--from-tasks", "--executor", "dask", "--scheduler", scheduler,
                     cwd=repo)  # fmt: skip
    assert result.code == 1
    tasks = store_tasks(repo)
    assert (tasks["refused"]["status"], tasks["fine"]["status"]) == ("failed", "completed")
    assert "push of rho-mission/" in tasks["refused"]["lastError"]


def test_a_task_timeout_on_the_cluster_fails_the_feature_and_ends_its_process(
    make_repo: Callable[[str, int], Path], scheduler: str
) -> None:
    repo = make_repo("repo", 1)
    _with_remote(repo)
    import_tasks(repo, [spec("slow", "sleep 300")])
    started = time.monotonic()
    result = run_rho("mission", "--from-tasks", "--executor", "dask", "--scheduler", scheduler,
                     "--task-timeout", "1s", "--grace", "1s", cwd=repo)  # fmt: skip
    assert result.code == 1
    assert time.monotonic() - started < 60
    assert store_tasks(repo)["slow"]["lastError"] == "timed out after 1s"
    assert mission_processes(mission_dir(repo).name) == []


def _has_mark(pid: int) -> bool:
    return environ_has(pid, "RHO_MISSION_ID=0badc0de")


def _marked(task_id: str) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "RHO_MISSION_ID": "0badc0de", "RHO_TASK_ID": task_id}


def test_the_remote_kill_ends_a_tasks_processes_on_every_worker(scheduler: str) -> None:
    sleep = ["sleep", "300"]
    # os.spawnve runs on a worker: a process marked as a task's.
    with Client(scheduler) as client:  # type: ignore[no-untyped-call]
        pid = client.submit(os.spawnve, os.P_NOWAIT, "/bin/sleep", sleep, _marked("victim"),
                            pure=False).result()  # fmt: skip
        spared = client.submit(os.spawnve, os.P_NOWAIT, "/bin/sleep", sleep, _marked("bystander"),
                               pure=False).result()  # fmt: skip
        for each in (pid, spared):  # exec'd: until then a child has its parent's environment
            wait_until(functools.partial(_has_mark, each), f"process {each} to carry its mark")
        # Both workers share this machine's /proc: each finds (and kills) the same process.
        killed = client.run(kill_remote_task, "0badc0de", "victim")
        assert {p for found in killed.values() for p in found} == {pid}
        cleaned = client.run(kill_remote_task, "0badc0de", "bystander")
        assert {p for found in cleaned.values() for p in found} == {spared}


def test_without_distributed_the_dask_executor_is_refused_with_a_hint(
    make_repo: Callable[[str, int], Path], tmp_path: Path
) -> None:
    # A stand-in module named like the real one, first on sys.path: it is not installed here.
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "distributed.py").write_text("raise ImportError('not installed')\n")
    repo = make_repo("repo", 1)
    import_tasks(repo, [spec("one", "true")])
    done = subprocess.run(
        [str(RHO), "mission", "--from-tasks", "--executor", "dask",
         "--local-cluster", "2"],
        cwd=repo, env={**rho_env(), "PYTHONPATH": str(shadow)}, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert (done.returncode, done.stderr.splitlines()) == (
        2,
        [
            "error: the Dask executor needs the optional 'dask' extra (distributed is not"
            " installed)",
            "hint: pip install 'rho-mission[dask]'",
        ],
    )
    assert not (repo / ".rho" / "missions").exists()


def test_dasks_own_warnings_stay_out_of_the_missions_output(
    make_repo: Callable[[str, int], Path], tmp_path: Path, runs: RhoRuns
) -> None:
    # A worker of rho's own local cluster is killed mid-task: Dask retries the task on the
    # other worker (which refuses it) and logs the loss; none of that reaches rho's output,
    # the lost worker is said once, on the task's line.
    repo = make_repo("repo", 1)
    _with_remote(repo)
    hold, pid_file, gate = _held_on_its_worker(tmp_path)
    import_tasks(repo, [spec("doomed", hold), spec("fine", "echo fine > fine.txt")])
    mission = runs.start("mission", "--from-tasks", "--executor", "dask", "--local-cluster", "2",
                         cwd=repo)  # fmt: skip
    os.kill(read_pid(pid_file), signal.SIGKILL)
    result = runs.wait(mission)
    gate.touch()
    assert result.code == 1, result.stderr
    assert result.stderr == ""
    lost = [line for line in result.stdout_lines if "worker" in line.lower()]
    assert lost == [
        "doomed failed: dask: WorkerLostError: the dask worker running this attempt died "
        "(lost, killed or crashed)"
    ]
    log = mission_dir(repo) / "logs" / "executor" / "dask.log"
    assert stat.S_IMODE(log.stat().st_mode) == 0o600


def test_clean_deletes_the_branches_a_cluster_run_pushed_to_its_remote(
    make_repo: Callable[[str, int], Path], scheduler: str
) -> None:
    repo = make_repo("cleaned", 1)
    remote = _with_remote(repo)
    import_tasks(repo, [spec("one", "echo one > one.txt")])
    ran = run_rho(
        "mission", "--from-tasks", "--executor", "dask", "--scheduler", scheduler, cwd=repo
    )
    assert ran.code == 0, ran.stderr
    mission = mission_dir(repo).name

    def on_remote() -> list[str]:
        refs = f"refs/heads/rho-mission/{mission}/"
        out = subprocess.run(
            ["git", "for-each-ref", "--format=%(refname:short)", refs],
            cwd=remote, capture_output=True, text=True, check=True,
        )  # fmt: skip
        return out.stdout.split()

    assert on_remote() == [f"rho-mission/{mission}/integration", f"rho-mission/{mission}/one"]
    cleaned = run_rho("mission", "clean", "latest", "--force", "--verbose", cwd=repo)

    assert cleaned.code == 0, cleaned.stderr
    assert on_remote() == []
    assert f"deleted branch rho-mission/{mission}/one on the remote of its Dask run" in (
        cleaned.stdout
    )


def test_a_replayed_culprit_on_the_cluster_gets_the_failed_checks_output(
    make_repo: Callable[[str, int], Path], tmp_path: Path
) -> None:
    repo = make_repo("repo", 1)
    _with_remote(repo)
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (repo / "test_calc.py").write_text(
        "import unittest\n\nimport calc\n\n\nclass Calc(unittest.TestCase):\n"
        "    def test_add(self):\n        self.assertEqual(calc.add(2, 3), 5)\n"
    )
    (repo / ".gitignore").write_text("__pycache__/\n")
    run_git(repo, "add", ".")
    run_git(repo, "commit", "--quiet", "--message=calc and its test")
    told = shlex.quote(str(tmp_path / "told"))
    # Alone it breaks calc.add; given the checks' output, it does its part without breaking it.
    breaker = (
        f'if [ -s "$RHO_VERIFY_LOG" ]; then cp "$RHO_VERIFY_LOG" {told}; echo "Z = 3" > z.py; '
        "else sed -i 's/a + b/a - b/' calc.py; fi"
    )
    import_tasks(repo, [spec("breaker", breaker), spec("docs", "echo docs > README.txt")])

    result = run_rho("mission", "--from-tasks", "--executor", "dask", "--local-cluster", "1",
                     "--verify", "python3 -B -m unittest -q", "--replay-culprits", "1",
                     cwd=repo)  # fmt: skip

    assert result.code == 0, result.stdout + result.stderr
    blamed = (mission_dir(repo) / "logs" / "verify-1-3.log").read_text()
    assert "FAIL: test_add" in blamed
    assert (tmp_path / "told").read_text() == blamed
    assert {"z.py", "README.txt"} <= set(_integration_tree(repo))
    assert store_tasks(repo)["breaker"]["status"] == "completed"
