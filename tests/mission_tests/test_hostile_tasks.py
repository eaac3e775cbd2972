"""A hostile task against what it leaves behind: git's configuration and the pooled worktree.

Each test is an attack a task can make without ``--sandbox``, run as real missions of the
real ``rho`` (``test_sandbox.py`` has those made from inside the sandbox):

- it plants a ``filter.<x>.clean`` in the repository's ``.git/config`` and names it in a
  ``.gitattributes``: rho's git, run after the task, must never run that command
  (``containment/_gitconfig``);
- it poisons the Makefile of its pooled worktree and hides the change from git
  (``update-index --skip-worktree`` or ``--assume-unchanged``), and leaves per-worktree refs and
  files in the worktree's git dir: the next mission's task in that worktree must get it as
  new (``git/_handover``).
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from rho_mission.git._handover import index_identity, index_is_plain
from rho_mission.git._repo import GitRepo
from rho_mission.git._worktrees import WorktreePool

from ._cli_helpers import import_tasks, run_rho, spec, store_tasks, tree_files
from .conftest import run_git

pytestmark = pytest.mark.usefixtures("no_leftover_tasks")


def q(path: Path | str) -> str:
    return shlex.quote(str(path))


def _integration(repo: Path) -> str:
    listed = run_git(repo, "for-each-ref", "--sort=-creatordate", "--format=%(refname:short)")
    return next(ref for ref in listed.splitlines() if ref.endswith("/integration"))


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


def test_a_worktree_whose_makefile_a_task_poisoned_and_hid_goes_to_its_next_task_as_new(
    with_makefile: Path,
) -> None:
    # One worker: the next wave's task gets the same worktree, which came back "spotless".
    poison = f"{POISON} && git update-index --skip-worktree Makefile"
    import_tasks(with_makefile, [spec("poison", poison), spec("build", "make -s", "poison")])
    result = run_rho("mission", "--from-tasks", "--workers", "1", cwd=with_makefile)
    assert result.code == 0, result.stderr
    assert tree_files(with_makefile, _integration(with_makefile))["made.txt"] == "good\n"


def test_a_pooled_worktree_whose_makefile_a_task_poisoned_and_hid_is_new_to_the_next_mission(
    with_makefile: Path,
) -> None:
    poison = f"{POISON} && git update-index --skip-worktree Makefile"
    import_tasks(with_makefile, [spec("poison", poison)])
    assert run_rho("mission", "--from-tasks", cwd=with_makefile).code == 0
    import_tasks(with_makefile, [spec("build", "make -s")])
    result = run_rho("mission", "--from-tasks", cwd=with_makefile)
    assert result.code == 0, result.stderr
    assert tree_files(with_makefile, _integration(with_makefile))["made.txt"] == "good\n"


def test_a_pooled_worktree_git_dir_keeps_only_what_worktree_add_makes(project: Path) -> None:
    plant = (
        'g="$(git rev-parse --git-dir)" && git rev-parse HEAD > head.txt && '
        'mkdir -p "$g/refs/bisect" "$g/refs/worktree" "$g/info" && '
        'cp head.txt "$g/refs/bisect/bad" && cp head.txt "$g/refs/worktree/mine" && '
        'echo "*.txt" > "$g/info/exclude" && echo "/x" > "$g/info/sparse-checkout" && '
        'echo note > "$g/COMMIT_EDITMSG" && rm head.txt'
    )
    import_tasks(project, [spec("plant", plant)])
    assert run_rho("mission", "--from-tasks", cwd=project).code == 0
    look = 'g="$(git rev-parse --git-dir)"; ls -A "$g" > gitdir.txt; ls -A "$g/logs" > logs.txt'
    import_tasks(project, [spec("look", look), spec("add", "echo new > new.txt", "look")])
    result = run_rho("mission", "--from-tasks", "--workers", "1", cwd=project)
    assert result.code == 0, result.stderr
    files = tree_files(project, _integration(project))
    assert files["gitdir.txt"].split() == ["HEAD", "commondir", "gitdir", "index", "locked", "logs"]
    assert files["logs.txt"].split() == ["HEAD"]
    assert files["new.txt"] == "new\n"


@pytest.mark.parametrize("bit", ["--skip-worktree", "--assume-unchanged"])
def test_an_index_with_a_bit_a_task_set_is_not_plain(repo: GitRepo, bit: str) -> None:
    # The forced checkout of a reused worktree rewrites an assume-unchanged file but keeps its
    # bit, which would hide the next task's edit of it from rho's commit: neither bit passes.
    with WorktreePool(repo, repo.root / ".rho" / "worktrees" / "m1", "m1") as pool:
        path = pool.acquire("rho-mission/m1/a", "HEAD")
        left = index_identity(path)
        assert index_is_plain(repo, path, left)
        run_git(path, "update-index", bit, "file0002.txt")
        assert not index_is_plain(repo, path, left)
        assert not index_is_plain(repo, path, None)
        pool.release(path)
