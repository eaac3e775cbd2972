"""The resolver's last step is rho's (design §10, rung 2): rho stages what a resolver left.

Real agents are often not allowed to ``git add`` (claude under ``acceptEdits`` is denied the
command, codex's sandbox cannot write the index lock), so a resolver that only edits files
must land its resolution: rho stages the worktree as it stages a task's work and commits the
merge. Real ``rho`` runs, real repositories, shell resolvers:

- one that only edits the conflicted file lands three appends to one ``__init__.py``;
- on a project's tree (three tasks that each add a helper to one module, export it from
  ``__init__.py`` and add a changelog line under a Markdown heading underlined with seven
  ``=``) one that only edits files lands all three in one run;
- one that commits by itself (aider does) lands the files, never its commit;
- a modify/delete conflict may be resolved by deleting the path;
- a ``--copy`` file a resolver leaves is never staged;
- a resolver whose index lies (``assume-unchanged``) cannot hide a marker from rho;
- under ``--sandbox`` the same file-editing resolver lands all three.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from support.overlap import NAMES, REGISTRY, features, package, registering_tasks, runs_of
from support.repos import integration_branch, run_git, tree_files
from support.rho import run_rho
from support.stores import import_tasks, spec

pytestmark = pytest.mark.usefixtures("no_leftover_tasks")

# Keeps both sides of pkg/__init__.py's conflict: edits the file, runs no git.
EDITS_ONLY = "sed -i -e '/^<<<<<<< /d' -e '/^=======$/d' -e '/^>>>>>>> /d' pkg/__init__.py"

# A resolver that edits files only: every conflicted path of the brief keeps both sides'
# lines, ours first (the markers' own lines dropped; a line of "=" only between markers).
KEEP_BOTH = """\
import json, os, re
brief = json.load(open(os.environ["RHO_CONFLICT_FILE"]))
for path in brief["paths"]:
    kept, inside = [], False
    for line in open(path).read().splitlines(keepends=True):
        bare = line.rstrip("\\n")
        if re.match(r"<{7}( |$)", bare):
            inside = True
        elif inside and re.match(r">{7}( |$)", bare):
            inside = False
        elif not (inside and bare == "=" * 7):
            kept.append(line)
    open(path, "w").write("".join(kept))
print("kept both sides in", *brief["paths"])
"""


@pytest.fixture
def overlapping(project: Path, marks: Path) -> Path:
    package(project)
    registering_tasks(project, marks)
    return project


def _python_resolver(folder: Path, source: str) -> str:
    script = folder / "resolver.py"
    script.write_text(source)
    return f"python3 {shlex.quote(str(script))}"


def test_a_resolver_that_only_edits_the_file_lands_all_three_in_one_run(
    overlapping: Path, marks: Path
) -> None:
    result = run_rho("mission", "--from-tasks", "--resolve", EDITS_ONLY, cwd=overlapping)

    assert result.code == 0, result.stdout + result.stderr
    files = tree_files(overlapping, integration_branch(overlapping))
    assert files["pkg/__init__.py"] == REGISTRY
    assert {f"pkg/{n}.py" for n in NAMES} <= set(files)
    assert [runs_of(marks, f"add_{n}") for n in NAMES] == [1, 1, 1]
    outcomes = [features(overlapping)[f"add_{n}"]["conflict"] for n in NAMES]
    assert [o and o["outcome"] for o in outcomes] == [None, "resolved", "resolved"]


HELPERS_BASE = '"""Small helpers."""\n'
CHANGES_BASE = "Changes\n=======\n\n"


def _helper_tasks(project: Path) -> None:
    """The issue's tree: three tasks, each adds a helper to ``app/helpers.py``, exports it
    from ``app/__init__.py`` and adds a line to ``CHANGELOG.md``."""
    (project / "app").mkdir()
    (project / "app" / "helpers.py").write_text(HELPERS_BASE)
    (project / "app" / "__init__.py").write_text("")
    (project / "CHANGELOG.md").write_text(CHANGES_BASE)
    run_git(project, "add", "--all")
    run_git(project, "commit", "--quiet", "--message=app")
    tasks = []
    for name in NAMES:
        command = (
            f"printf '\\n\\ndef {name}_helper():\\n    return \"{name}\"\\n' >> app/helpers.py && "
            f"echo 'from .helpers import {name}_helper' >> app/__init__.py && "
            f"echo '- add {name}_helper' >> CHANGELOG.md"
        )
        task = spec(f"helper_{name}", command)
        task["subject"] = f"add {name}_helper"
        tasks.append(task)
    import_tasks(project, tasks)


def test_three_helpers_exported_and_logged_land_with_a_file_editing_resolver(
    project: Path, tmp_path: Path
) -> None:
    _helper_tasks(project)
    resolver = _python_resolver(tmp_path, KEEP_BOTH)

    result = run_rho("mission", "--from-tasks", "--resolve", resolver, cwd=project)

    assert result.code == 0, result.stdout + result.stderr
    files = tree_files(project, integration_branch(project))
    assert files["app/__init__.py"] == "".join(f"from .helpers import {n}_helper\n" for n in NAMES)
    assert files["CHANGELOG.md"] == CHANGES_BASE + "".join(f"- add {n}_helper\n" for n in NAMES)
    helpers = files["app/helpers.py"]
    assert all(f"def {n}_helper():" in helpers for n in NAMES), helpers
    compile(helpers, "app/helpers.py", "exec")
    by_id = features(project)
    assert by_id["helper_c"]["conflict"]["paths"] == [
        "CHANGELOG.md",
        "app/__init__.py",
        "app/helpers.py",
    ]
    assert [by_id[f"helper_{n}"]["status"] for n in NAMES] == ["completed"] * 3


def test_a_resolver_that_commits_by_itself_lands_its_files_never_its_commit(
    overlapping: Path,
) -> None:
    # As aider does: its own "git add" and "git commit" in the resolve worktree.
    commits = f"{EDITS_ONLY} && git add -A && echo extra > extra.txt && git commit -qm mine"

    result = run_rho("mission", "--from-tasks", "--resolve", commits, cwd=overlapping)

    assert result.code == 0, result.stdout + result.stderr
    branch = integration_branch(overlapping)
    files = tree_files(overlapping, branch)
    assert files["pkg/__init__.py"] == REGISTRY
    assert files["extra.txt"] == "extra\n"  # left in the worktree: staged as a task's file is
    parents = run_git(overlapping, "rev-list", "--parents", "-n", "1", branch).split()
    assert parents[2] == features(overlapping)["add_c"]["handoff"]["commit_id"]
    subjects = run_git(overlapping, "log", "--format=%s", branch).splitlines()
    assert "mine" not in subjects


def _modify_delete(project: Path) -> None:
    (project / "notes.txt").write_text("one\n")
    run_git(project, "add", "--all")
    run_git(project, "commit", "--quiet", "--message=notes")
    import_tasks(project, [spec("a_drop", "rm notes.txt"), spec("b_edit", "echo two >> notes.txt")])


@pytest.mark.parametrize(("resolver", "left"), [("rm notes.txt", None), ("true", "one\ntwo\n")])
def test_a_modify_delete_conflict_may_be_resolved_either_way(
    project: Path, resolver: str, left: str | None
) -> None:
    _modify_delete(project)

    result = run_rho("mission", "--from-tasks", "--resolve", resolver, cwd=project)

    assert result.code == 0, result.stdout + result.stderr
    assert features(project)["b_edit"]["conflict"]["outcome"] == "resolved"
    assert tree_files(project, integration_branch(project)).get("notes.txt") == left


def test_a_copy_file_a_resolver_leaves_is_never_staged(overlapping: Path) -> None:
    (overlapping / ".env").write_text("SECRET=never-leaves\n")
    leaves = f"{EDITS_ONLY} && echo SECRET=mine > .env"

    args = ("--copy", ".env", "--resolve", leaves)
    result = run_rho("mission", "--from-tasks", *args, cwd=overlapping)

    assert result.code == 0, result.stdout + result.stderr
    files = tree_files(overlapping, integration_branch(overlapping))
    assert files["pkg/__init__.py"] == REGISTRY
    assert ".env" not in files


def test_a_resolver_whose_index_lies_cannot_hide_a_marker(overlapping: Path) -> None:
    # Resolves, stages, then puts a marker back and tells its index the file is unchanged.
    lies = (
        f"{EDITS_ONLY} && git add pkg/__init__.py && echo '<<<<<<< HEAD' >> pkg/__init__.py "
        "&& git update-index --assume-unchanged pkg/__init__.py"
    )

    result = run_rho("mission", "--from-tasks", "--resolve", lies, cwd=overlapping)

    assert result.code == 1, result.stdout + result.stderr
    reason = features(overlapping)["add_b"]["conflict"]["reason"]
    assert reason == "the resolver failed: conflict markers left in pkg/__init__.py"


@pytest.mark.usefixtures("bwrap")
def test_a_sandboxed_resolver_that_only_edits_the_file_lands_all_three(project: Path) -> None:
    package(project)
    registering_tasks(project, None)  # no marks: the sandbox holds no folder of the test's
    args = ("--sandbox", "--resolve", EDITS_ONLY)
    result = run_rho("mission", "--from-tasks", *args, cwd=project)

    assert result.code == 0, result.stdout + result.stderr
    assert tree_files(project, integration_branch(project))["pkg/__init__.py"] == REGISTRY
