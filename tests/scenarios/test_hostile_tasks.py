"""A hostile task against what it leaves behind: git's configuration and the pooled worktree.

Each test is an attack a task can make without ``--sandbox``, run as real missions of the
real ``rho`` (``test_sandbox.py`` has those made from inside the sandbox):

- it plants a ``filter.<x>.clean`` in the repository's ``.git/config`` and names it in a
  ``.gitattributes``: rho's git, run after the task, must never run that command
  (``containment/_gitconfig``);
- it poisons the Makefile of its pooled worktree and hides the change from git
  (``update-index --skip-worktree`` or ``--assume-unchanged``, an index entry that lies, in
  the index file or in the shared part of the split index rho writes), and leaves per-worktree
  refs and files in the worktree's git dir: the next mission's task in that worktree must get
  it as new (``git/_handover``);
- it starts a daemon that drops every mark and kills its own supervisor (``kill -9 $PPID``):
  the daemon must not outlive the mission, with a cgroup per task and without
  (``containment/_cgroup``, ``containment/_orphans``); a process that holds a pooled worktree
  open keeps it from the next mission; and when rho itself is killed, its tasks end within
  the grace (the supervisor's parent-death signal).
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rho_mission.git._handover import _read_plain, index_identity, index_is_plain
from rho_mission.git._pool import WorktreePool
from rho_mission.git._repo import GitRepo
from support.procs import pgid_of, pid_gone
from support.repos import integration_branch, run_git, tree_files, worktree_paths
from support.rho import RhoRuns, read_pid, rho_env, run_rho, wait_until
from support.stores import import_tasks, spec, store_tasks

pytestmark = pytest.mark.usefixtures("no_leftover_tasks")


def q(path: Path | str) -> str:
    return shlex.quote(str(path))


def test_a_filter_the_task_wrote_into_the_repository_config_never_runs(
    project: Path, marks: Path
) -> None:
    ran = marks / "filter-ran"
    plant = (
        f"printf '[filter \"evil\"]\\n\\tclean = touch {q(ran)}; cat\\n' "
        '>> "$(git rev-parse --git-common-dir)/config" && '
        "echo '*.txt filter=evil' > .gitattributes && echo more >> file0000.txt"
    )
    import_tasks(project, [spec("a", plant), spec("b", "echo b > b.txt", "a")])
    result = run_rho("mission", "--from-tasks", "--workers", "1", cwd=project)
    assert result.code == 1, result.stderr
    assert not ran.exists(), "rho's git ran the task's filter"
    config = project / ".git" / "config"
    expected = (
        f"git's configuration changed while the mission ran: {config}; rho ran no git with it "
        "(a task may have written it: read it before the next mission)"
    )
    assert store_tasks(project)["a"]["lastError"] == expected
    assert store_tasks(project)["b"]["status"] == "pending"


def test_a_config_file_included_by_the_repository_config_is_held_too(
    project: Path, marks: Path, tmp_path: Path
) -> None:
    included = tmp_path / "included.gitconfig"
    included.write_text("[core]\n\tautocrlf = false\n")
    run_git(project, "config", "include.path", str(included))
    ran = marks / "filter-ran"
    plant = (
        f"printf '[filter \"evil\"]\\n\\tclean = touch {q(ran)}; cat\\n' >> {q(included)} && "
        "echo '*.txt filter=evil' > .gitattributes && echo more >> file0000.txt"
    )
    import_tasks(project, [spec("a", plant)])
    result = run_rho("mission", "--from-tasks", cwd=project)
    assert result.code == 1, result.stderr
    assert not ran.exists(), "rho's git ran the task's filter"
    assert str(included) in store_tasks(project)["a"]["lastError"]


def test_a_mission_whose_tasks_leave_the_config_alone_runs_as_before(project: Path) -> None:
    run_git(project, "config", "rho.test", "kept")  # written before the mission: held as is
    import_tasks(project, [spec("a", "echo a > a.txt"), spec("b", "echo b > b.txt", "a")])
    result = run_rho("mission", "--from-tasks", cwd=project)
    assert result.code == 0, result.stderr


POISON = "printf 'all:\\n\\techo POISON > made.txt\\n' > Makefile"
MAKEFILE = "all:\n\techo good > made.txt\n"


@pytest.fixture
def with_makefile(project: Path) -> Path:
    (project / "Makefile").write_text(MAKEFILE)
    run_git(project, "add", "Makefile")
    run_git(project, "commit", "--quiet", "--message=Makefile")
    return project


MAKE = 'make -s && mv made.txt "made-by-build.txt"'


def _poison_then_build(
    repo: Path, poison: str, build: str = MAKE, first: str | None = None
) -> dict[str, str]:
    """Run *poison* then, in the same worktree (one worker, one wave, in id order), *build*;
    the files of the integration branch. The poison's edit is its own work, committed in the
    open; what the build runs is the wave's start. *first*: a task run before both, in a wave
    of its own."""
    tasks = [] if first is None else [spec("a_first", first)]
    after = [task["id"] for task in tasks]
    tasks += [spec("b_poison", poison, *after), spec("c_build", build, *after)]
    import_tasks(repo, tasks)
    result = run_rho("mission", "--from-tasks", "--workers", "1", cwd=repo)
    assert result.code == 0, result.stderr
    return tree_files(repo, integration_branch(repo))


def test_a_worktree_whose_makefile_a_task_poisoned_and_hid_goes_to_its_next_task_as_new(
    with_makefile: Path,
) -> None:
    files = _poison_then_build(
        with_makefile, f"{POISON} && git update-index --skip-worktree Makefile"
    )
    assert files["made-by-build.txt"] == "good\n"
    assert "POISON" in files["Makefile"], "the hidden edit is the task's work, in its commit"


# An index entry that lies: the original blob's id with the stat data of the edited file, so
# that git takes the edit for the original (status clean, no checkout rewrites it).
LYING_INDEX = """
import hashlib, subprocess
def git(*args):
    return subprocess.check_output(["git", *args]).decode().strip()
original = bytes.fromhex(git("rev-parse", "HEAD:Makefile"))
subprocess.check_call(["git", "add", "Makefile"])
path = git("rev-parse", "--git-path", "index")
data = bytearray(open(path, "rb").read())
offset = 12
for _ in range(int.from_bytes(data[8:12], "big")):
    length = int.from_bytes(data[offset + 60 : offset + 62], "big") & 0xFFF
    if data[offset + 62 : offset + 62 + length] == b"Makefile":
        data[offset + 40 : offset + 60] = original
    offset += (62 + length + 8) & ~7
body = bytes(data[:-20])
open(path, "wb").write(body + hashlib.sha1(body).digest())
"""


# The same lie told in a split index's shared part, where most entries are: the "assume
# valid" bit set on the entry of the file named, in place, its checksum left as it was (git
# does not check it on reading), the index beside it untouched.
LYING_SHARED_INDEX = """
import subprocess, sys
path = subprocess.check_output(["git", "rev-parse", "--shared-index-path"]).decode().strip()
assert path, "the index rho left is not split"
data = bytearray(open(path, "rb").read())
offset, found = 12, False
for _ in range(int.from_bytes(data[8:12], "big")):
    flags = int.from_bytes(data[offset + 60 : offset + 62], "big")
    length = flags & 0xFFF
    if data[offset + 62 : offset + 62 + length] == sys.argv[1].encode():
        data[offset + 60 : offset + 62] = (flags | 0x8000).to_bytes(2, "big")
        found = True
    offset += (62 + length + 8) & ~7
assert found, "no such entry in the shared index"
with open(path, "r+b") as handle:
    handle.write(data)
"""


def test_a_worktree_whose_index_a_task_made_lie_goes_to_its_next_task_as_new(
    with_makefile: Path, marks: Path
) -> None:
    script = marks / "lie.py"
    script.write_text(LYING_INDEX)
    # An old modification time: git's check of a "racily clean" entry would see through it.
    # The index rho left is split: made whole first, so that every entry is in this file.
    whole = "git update-index --no-split-index"
    lie = f"touch -d 2000-01-01 Makefile && {whole} && python3 {q(script)}"
    files = _poison_then_build(
        with_makefile, f'{POISON} && {lie} && test -z "$(git status --porcelain)"'
    )
    assert files["made-by-build.txt"] == "good\n"
    assert "POISON" in files["Makefile"], "the hidden edit is the task's work, in its commit"


def test_a_worktree_whose_shared_index_a_task_made_lie_goes_to_its_next_task_as_new(
    project: Path, marks: Path
) -> None:
    script = marks / "lie.py"
    script.write_text(LYING_SHARED_INDEX)
    # The poisoned file's entry must be in the shared part alone, where no newer entry in the
    # index overrides it. So a first wave adds the build script with more files than git lets
    # an index hold beside its shared part (20 %): git writes a new shared part at rho's
    # commit of them, and the files are by then old enough not to be "racily clean". Then,
    # in the same worktree, the poison and the build.
    fill = "for i in 1 2 3 4 5 6 7 8 9; do echo $i > f$i.txt; done"
    add = f"echo 'echo good > made.txt' > build.sh && {fill} && sleep 1.1"
    poison = "echo 'echo POISON > made.txt' > build.sh"
    lie = f'{poison} && python3 {q(script)} build.sh && test -z "$(git status --porcelain)"'
    build = 'sh build.sh && mv made.txt "made-by-build.txt"'
    files = _poison_then_build(project, lie, build, first=add)
    assert files["made-by-build.txt"] == "good\n"
    assert "POISON" in files["build.sh"], "the hidden edit is the task's work, in its commit"


def test_a_link_a_task_put_at_its_shared_index_is_never_followed(
    with_makefile: Path, marks: Path
) -> None:
    # git sets a shared index's times at every read, through a link too; the file the link
    # names is a copy of the shared index, so that git could read it.
    outside = marks / "outside"
    swap = (
        f'p="$(git rev-parse --shared-index-path)" && cp "$p" {q(outside)} && '
        f'touch -d 2000-01-01 {q(outside)} && ln -sf {q(outside)} "$p"'
    )
    files = _poison_then_build(with_makefile, f"{POISON} && {swap}")
    assert files["made-by-build.txt"] == "good\n"
    assert outside.stat().st_mtime < 10**9, "rho's git touched the file the link names"


def test_a_pooled_worktree_whose_makefile_a_task_poisoned_and_hid_is_new_to_the_next_mission(
    with_makefile: Path,
) -> None:
    poison = f"{POISON} && git update-index --skip-worktree Makefile"
    import_tasks(with_makefile, [spec("poison", poison)])
    assert run_rho("mission", "--from-tasks", cwd=with_makefile).code == 0
    import_tasks(with_makefile, [spec("build", "make -s")])
    result = run_rho("mission", "--from-tasks", cwd=with_makefile)
    assert result.code == 0, result.stderr
    assert tree_files(with_makefile, integration_branch(with_makefile))["made.txt"] == "good\n"


def test_a_pooled_worktree_git_dir_keeps_only_what_worktree_add_makes(project: Path) -> None:
    plant = (
        'g="$(git rev-parse --git-dir)" && git rev-parse HEAD > head.txt && '
        'mkdir -p "$g/refs/bisect" "$g/refs/worktree" "$g/info" && '
        'cp head.txt "$g/refs/bisect/bad" && cp head.txt "$g/refs/worktree/mine" && '
        'echo "*.txt" > "$g/info/exclude" && echo "/x" > "$g/info/sparse-checkout" && '
        'echo note > "$g/COMMIT_EDITMSG" && rm head.txt && '
        'cp "$(git rev-parse --shared-index-path)" "$g/sharedindex.$(git rev-parse HEAD)"'
    )
    import_tasks(project, [spec("plant", plant)])
    assert run_rho("mission", "--from-tasks", cwd=project).code == 0
    look = (
        'g="$(git rev-parse --git-dir)"; ls -A "$g" > gitdir.txt; ls -A "$g/logs" > logs.txt; '
        'basename "$(git rev-parse --shared-index-path)" > shared.txt'
    )
    import_tasks(project, [spec("look", look), spec("add", "echo new > new.txt", "look")])
    result = run_rho("mission", "--from-tasks", "--workers", "1", cwd=project)
    assert result.code == 0, result.stderr
    files = tree_files(project, integration_branch(project))
    # What "worktree add" makes, and the shared part of the split index rho's checkout wrote:
    # the one its index names, not the copy the task planted.
    shared = files["shared.txt"].strip()
    assert shared.startswith("sharedindex.")
    expected = ["HEAD", "commondir", "gitdir", "index", "locked", "logs", shared]
    assert sorted(files["gitdir.txt"].split()) == sorted(expected)
    assert files["logs.txt"].split() == ["HEAD"]
    assert files["new.txt"] == "new\n"


@pytest.mark.parametrize("version", ["2", "3", "4"])
@pytest.mark.parametrize("bit", ["--skip-worktree", "--assume-unchanged"])
def test_an_index_with_a_bit_a_task_set_is_not_plain(repo: GitRepo, bit: str, version: str) -> None:
    # The forced checkout of a reused worktree rewrites an assume-unchanged file but keeps its
    # bit, which would hide the next task's edit of it from rho's commit: neither bit passes,
    # whether rho reads the index itself (versions 2 and 3) or asks git (version 4).
    with WorktreePool(repo, repo.root / ".rho" / "worktrees" / "m1", "m1") as pool:
        path = pool.acquire("rho-mission/m1/a", "HEAD")
        run_git(path, "update-index", "--index-version", version)
        assert index_is_plain(repo, path, None)
        left = index_identity(path)
        assert index_is_plain(repo, path, left)
        run_git(path, "update-index", bit, "file0002.txt")
        assert not index_is_plain(repo, path, left)
        assert not index_is_plain(repo, path, None)
        pool.release(path)


@pytest.mark.parametrize("bit", ["--skip-worktree", "--assume-unchanged"])
def test_a_split_index_with_a_bit_in_its_shared_part_is_not_plain(repo: GitRepo, bit: str) -> None:
    # With every entry pushed to the shared part, the index file itself holds none: read
    # alone, it would pass. git is asked instead. (The files are made old first: git keeps
    # the entries of "racily clean" ones in the index file.)
    with WorktreePool(repo, repo.root / ".rho" / "worktrees" / "m1", "m1") as pool:
        path = pool.acquire("rho-mission/m1/a", "HEAD")
        index = Path(run_git(path, "rev-parse", "--absolute-git-dir").strip()) / "index"
        assert _read_plain(index) is True
        for name in run_git(path, "ls-files", "-z").split("\0"):
            if name:
                os.utime(path / name, (946684800, 946684800))
        run_git(path, "update-index", "--refresh")
        run_git(path, "update-index", bit, "file0002.txt")
        run_git(path, "update-index", "--split-index")
        assert index.read_bytes()[8:12] == bytes(4), "every entry is in the shared part"
        assert _read_plain(index) is False  # read here, with its shared part: no git process
        assert not index_is_plain(repo, path, None)
        pool.release(path)


@pytest.mark.parametrize("cgroups", ["1", "0"], ids=["a cgroup per task", "no cgroup"])
def test_a_daemon_whose_task_killed_its_supervisor_does_not_outlive_the_mission(
    project: Path, marks: Path, cgroups: str
) -> None:
    pid_file = marks / "daemon.pid"
    daemon = f"( setsid env -i sh -c 'cd /; echo $$ > {q(pid_file)}; exec sleep 300' & )"
    wait = f"while [ ! -s {q(pid_file)} ]; do sleep 0.05; done"
    task = f"{daemon}; {wait}; echo a > a.txt; kill -9 $PPID; sleep 1"
    import_tasks(project, [spec("a", task)])
    env = {**rho_env(), "RHO_TASK_CGROUPS": cgroups}
    result = run_rho("mission", "--from-tasks", "--grace", "1s", cwd=project, env=env)
    assert result.code == 1, result.stderr
    pid = read_pid(pid_file)
    assert pid_gone(pid), f"the daemon {pid} outlived its mission"
    assert "killed by SIGKILL" in store_tasks(project)["a"]["lastError"]


@pytest.fixture
def holder() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes a test starts to hold files open; killed at teardown."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        process.kill()
        process.wait()


def test_a_pooled_worktree_a_process_holds_open_is_not_handed_to_the_next_mission(
    project: Path, holder: list[subprocess.Popen[bytes]]
) -> None:
    import_tasks(project, [spec("first", "echo first > first.txt")])
    assert run_rho("mission", "--from-tasks", cwd=project).code == 0
    [_, pooled] = worktree_paths(project, pooled=True)
    # What a daemon that did "cd /" but kept a file of its old worktree open looks like.
    hold = "import sys, time; f = open(sys.argv[1], 'rb'); print(1, flush=True); time.sleep(300)"
    process = subprocess.Popen(
        [sys.executable, "-c", hold, f"{pooled}/file0000.txt"], cwd="/", stdout=subprocess.PIPE
    )
    holder.append(process)
    assert process.stdout is not None
    assert process.stdout.readline() == b"1\n"
    import_tasks(project, [spec("second", 'echo "$RHO_WORKTREE" > where.txt')])
    assert run_rho("mission", "--from-tasks", cwd=project).code == 0
    where = tree_files(project, integration_branch(project))["where.txt"].strip()
    assert where != pooled


def test_a_task_of_a_killed_rho_ends_within_the_grace(
    project: Path, marks: Path, runs: RhoRuns
) -> None:
    pid_file = marks / "task.pid"
    import_tasks(project, [spec("a", f"echo $$ > {q(pid_file)}; exec sleep 300")])
    mission = runs.start("mission", "--from-tasks", "--grace", "1s", cwd=project)
    pid = read_pid(pid_file)
    supervisor = pgid_of(pid)  # the task's group leader
    mission.send_signal(signal.SIGKILL)
    mission.wait()
    ended = (pid, supervisor)
    wait_until(lambda: all(map(pid_gone, ended)), "the task of the killed rho to end", timeout=10)


@pytest.mark.usefixtures("task_cgroups")
def test_a_task_runs_in_a_cgroup_of_its_own_removed_after_it(project: Path) -> None:
    import_tasks(project, [spec("a", "cat /proc/self/cgroup > cgroup.txt")])
    assert run_rho("mission", "--from-tasks", cwd=project).code == 0
    lines = tree_files(project, integration_branch(project))["cgroup.txt"].splitlines()
    [unified] = [line.removeprefix("0::") for line in lines if line.startswith("0::")]
    assert re.fullmatch(r".*/rho-\d+-\d+", unified), unified
    mount = next(
        Path(line.split()[4])
        for line in Path("/proc/self/mountinfo").read_text().splitlines()
        if line.split(" - ", 1)[1].startswith("cgroup2 ")
    )
    assert not (mount / unified.lstrip("/")).exists(), "the task's cgroup was left behind"


@pytest.mark.parametrize(("cgroups", "said"), [("0", "none (turned off by RHO_TASK_CGROUPS=0)")])
def test_rho_doctor_says_what_keeps_a_task_in(project: Path, cgroups: str, said: str) -> None:
    result = run_rho("doctor", cwd=project, env={**rho_env(), "RHO_TASK_CGROUPS": cgroups})
    assert result.code == 0, result.stderr
    names = [line.partition(":")[0] for line in result.stdout_lines]
    assert names == ["supervisor", "orphans", "cgroups", "sandbox"]
    assert result.stdout_lines[2].startswith(f"cgroups: {said}")
