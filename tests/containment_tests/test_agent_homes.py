"""Agents' own folders under ``--sandbox``: a private writable copy per task, never the user's.

A mission that names an agent (``--agent``, ``--resolve-agent``, ``--planner-agent``) gives
each sandboxed task a private copy of that agent's config folder (``~/.gemini`` here), holding
only what the profile copies (its settings and sign-in); the task writes there freely, and the
user's folder is as it was after. ``--sandbox-allow-write PATH`` binds a real path writable.
The tasks are shell commands standing in for the agent (a task's own command wins over the
agent's line): what is checked is rho's own. ``tests/agent_cli_tests`` runs the real CLIs.

The home here lies in the user's checkout (git excludes it): the sandbox shows that read-only,
as it shows a home under ``/home``; one under ``/tmp`` would be private to the sandbox, and
missing there.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from support.repos import integration_branch, tree_files
from support.rho import run_rho
from support.stores import import_tasks, mission_dir, spec

pytestmark = pytest.mark.usefixtures("no_leftover_tasks", "bwrap")

SETTINGS = '{"security": {"auth": {"selectedType": "gemini-api-key"}}}\n'


def _files(folder: Path) -> dict[str, bytes]:
    # Every file below *folder* with its bytes (folders themselves left out).
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


@pytest.fixture
def home(project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's home: a folder of the checkout, which the sandbox shows read-only."""
    folder = project / ".home"
    folder.mkdir()
    with (project / ".git" / "info" / "exclude").open("a", encoding="utf-8") as exclude:
        exclude.write(".home/\n")
    monkeypatch.setenv("HOME", str(folder))
    return folder


def _gemini_home(home: Path) -> Path:
    gemini = home / ".gemini"
    (gemini / "tmp" / "other-project" / "chats").mkdir(parents=True)
    (gemini / "settings.json").write_text(SETTINGS)
    (gemini / "oauth_creds.json").write_text('{"token": "SIGN-IN"}\n')
    (gemini / "tmp" / "other-project" / "chats" / "session.jsonl").write_text("PRIVATE CHAT\n")
    return gemini


def test_a_sandboxed_task_writes_a_private_copy_of_its_agents_folder(
    project: Path, home: Path
) -> None:
    gemini = _gemini_home(home)
    before = _files(gemini)
    folder = shlex.quote(str(gemini))
    task = (
        f"cat {folder}/settings.json {folder}/oauth_creds.json > seen.txt; "
        f"cat {folder}/tmp/other-project/chats/session.jsonl >> seen.txt 2>/dev/null; "
        f"echo '{{}}' > {folder}/settings.json && echo planted > {folder}/projects.json && "
        f"mkdir -p {folder}/tmp/mine && echo WROTE >> seen.txt"
    )
    import_tasks(project, [spec("a", task), spec("b", f"ls -a {folder} > seen-b.txt", "a")])
    flags = ("--sandbox", "--agent", "gemini")
    result = run_rho("mission", "--from-tasks", *flags, cwd=project)
    assert result.code == 0, result.stderr
    files = tree_files(project, integration_branch(project))
    # The settings and sign-in copied, other projects' chats not; the copy is the task's to
    # write, and the next task starts from the user's folder again.
    assert files["seen.txt"] == SETTINGS + '{"token": "SIGN-IN"}\n' + "WROTE\n"
    assert files["seen-b.txt"].split() == [".", "..", "oauth_creds.json", "settings.json"]
    assert _files(gemini) == before
    assert not (mission_dir(project) / "agent-homes" / "a").exists()


def test_an_agents_folder_the_user_lacks_is_made_empty_and_stays_empty(
    project: Path, home: Path
) -> None:
    import_tasks(project, [spec("a", "mkdir -p ~/.codex/sessions && echo x > ~/.codex/a.log")])
    # The task writes its agent's folder only, not the worktree: a change is not required.
    args = ("--sandbox", "--agent", "codex", "--no-require-changes")
    result = run_rho("mission", "--from-tasks", *args, cwd=project)
    assert result.code == 0, result.stderr
    assert list((home / ".codex").iterdir()) == []


def test_sandbox_allow_write_binds_the_real_path_writable(project: Path, tmp_path: Path) -> None:
    cache = tmp_path / "shared-cache"
    cache.mkdir()
    task = f"echo kept > {shlex.quote(str(cache / 'entry'))} && echo done > done.txt"
    import_tasks(project, [spec("a", task)])
    flags = ("--sandbox", "--sandbox-allow-write", str(cache))
    result = run_rho("mission", "--from-tasks", *flags, cwd=project)
    assert result.code == 0, result.stderr
    assert (cache / "entry").read_text() == "kept\n"
    show = run_rho("mission", "show", "latest", "--json", cwd=project)
    assert json.loads(show.stdout)["config"]["sandbox_allow_write"] == [str(cache)]


def test_without_sandbox_allow_write_the_path_stays_read_only(
    project: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "shared-cache"
    cache.mkdir()
    import_tasks(project, [spec("a", f"echo kept > {shlex.quote(str(cache / 'entry'))}")])
    result = run_rho("mission", "--from-tasks", "--sandbox", cwd=project)
    assert result.code == 1
    assert not (cache / "entry").exists()


def test_sandbox_allow_write_without_a_sandbox_is_one_error_line(project: Path) -> None:
    import_tasks(project, [spec("a", "true")])
    result = run_rho("mission", "--from-tasks", "--sandbox-allow-write", "/x", cwd=project)
    assert (result.code, result.stderr_lines[0]) == (
        2,
        "error: --sandbox-allow-write needs --sandbox: it says what the sandbox shows",
    )


def test_sandbox_allow_write_of_the_repository_or_a_parent_is_refused(project: Path) -> None:
    import_tasks(project, [spec("a", "true")])
    for path in (project.parent, project / ".git"):
        flags = ("--sandbox", "--sandbox-allow-write", str(path))
        result = run_rho("mission", "--from-tasks", *flags, cwd=project)
        assert (result.code, result.stderr_lines[0]) == (
            2,
            f"error: --sandbox-allow-write {path}: the sandbox keeps the repository "
            f"({project}) out of the tasks' reach; name a folder outside it",
        )
    assert not (project / ".rho" / "missions").exists()


def test_a_link_in_an_agents_folder_is_copied_as_a_link_and_hides_what_it_hides(
    project: Path, home: Path
) -> None:
    # A link planted where the profile copies from (~/.gemini/settings.json -> ~/.ssh/...)
    # must not hand the task a copy of a secret the sandbox hides.
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text("SECRET-key\n")
    (home / ".gemini").mkdir()
    (home / ".gemini" / "settings.json").symlink_to(home / ".ssh" / "id_ed25519")
    folder = shlex.quote(str(home / ".gemini"))
    task = f"cat {folder}/settings.json > seen.txt 2>/dev/null; echo done >> seen.txt"
    import_tasks(project, [spec("a", task)])
    result = run_rho("mission", "--from-tasks", "--sandbox", "--agent", "gemini", cwd=project)
    assert result.code == 0, result.stderr
    assert tree_files(project, integration_branch(project))["seen.txt"] == "done\n"


@pytest.mark.parametrize(("agent", "seen"), [(None, "done\n"), ("codex", "SIGN-IN\ndone\n")])
def test_an_agents_sign_in_is_read_only_by_the_tasks_of_a_mission_naming_it(
    project: Path, home: Path, agent: str | None, seen: str
) -> None:
    (home / ".codex").mkdir()
    (home / ".codex" / "auth.json").write_text("SIGN-IN\n")
    auth = shlex.quote(str(home / ".codex" / "auth.json"))
    import_tasks(project, [spec("a", f"cat {auth} > seen.txt; echo done >> seen.txt")])
    named = ("--agent", agent) if agent else ()
    result = run_rho("mission", "--from-tasks", "--sandbox", *named, cwd=project)
    assert result.code == 0, result.stderr
    assert tree_files(project, integration_branch(project))["seen.txt"] == seen


def test_resume_refuses_a_mission_json_that_lets_the_tasks_write_more(
    project: Path, tmp_path: Path
) -> None:
    import_tasks(project, [spec("a", "exit 1")])
    assert run_rho("mission", "--from-tasks", "--sandbox", cwd=project).code == 1
    record = mission_dir(project) / "mission.json"
    document = json.loads(record.read_text())
    document["config"]["sandbox_allow_write"] = [str(tmp_path)]
    record.write_text(json.dumps(document))
    result = run_rho("mission", "resume", "latest", cwd=project)
    assert result.code == 2
    assert result.stderr_lines[0].startswith(
        f"error: mission {mission_dir(project).name} started with a sandbox that let the "
        "tasks write less (--sandbox-allow-write), and its mission.json no longer says so"
    )


def test_a_tree_thousands_of_folders_deep_in_an_agents_copy_is_removed(
    project: Path, home: Path
) -> None:
    # The private copy is the task's to fill: its removal walks by descriptor, no recursion
    # (shutil.rmtree raised RecursionError on such a tree, past its ignore_errors).
    deep = (
        "cd ~/.codex && python3 -c \"import os\nfor _ in range(3000): os.mkdir('d'); "
        'os.chdir(\'d\')"; cd "$RHO_WORKTREE" && echo a > a.txt'
    )
    import_tasks(project, [spec("a", deep)])
    result = run_rho("mission", "--from-tasks", "--sandbox", "--agent", "codex", cwd=project)
    assert result.code == 0, result.stdout + result.stderr
    assert not (mission_dir(project) / "agent-homes" / "a").exists()
