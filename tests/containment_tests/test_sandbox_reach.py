"""What a sandboxed task cannot reach: the user's objects, the host's sockets, the home's secrets.

Each test is an attack from inside ``--sandbox``, run as a real mission of the real ``rho``
under bubblewrap: forge the loose object of a committed file, delete the packs, plant links in
``objects/XX`` for rho's git to write through; connect to a UNIX socket of the host, read the
home's credentials, read a variable it was not given. The object store is read-only to the task; its
new objects go to a quarantine that rho checks and moves in after it (``containment/
_quarantine``). Where ``bwrap`` cannot start, these tests skip and say so (the suite's
``bwrap`` fixture); CI installs bubblewrap and makes them mandatory.
"""

from __future__ import annotations

import os
import secrets
import shlex
import socket
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.repos import integration_branch, run_git, tree_files
from support.rho import rho_env, run_rho
from support.stores import import_tasks, spec, store_bytes, store_tasks

pytestmark = pytest.mark.usefixtures("no_leftover_tasks", "bwrap")


def q(path: Path | str) -> str:
    return shlex.quote(str(path))


def _objects(project: Path) -> dict[str, bytes]:
    # Every file of the user's object store, as bytes.
    store = project / ".git" / "objects"
    return {
        str(p.relative_to(store)): p.read_bytes() for p in sorted(store.rglob("*")) if p.is_file()
    }


def _fsck(project: Path) -> None:
    run_git(project, "fsck", "--strict", "--no-dangling")


def _forgery_command(project: Path) -> str:
    # The loose object of HEAD:file0000.txt overwritten with another blob, at both paths a
    # task can name for it: the store (in the sandbox, its quarantine) and the store's view.
    name = run_git(project, "rev-parse", "HEAD:file0000.txt").strip()
    forged = zlib.compress(b"blob 5\0EVIL\n")
    python = f"import sys; sys.stdout.buffer.write({forged!r})"
    writes = []
    for store in ('"$(git rev-parse --git-common-dir)/objects"', "/tmp/.rho-objects"):
        target = f"{store}/{name[:2]}/{name[2:]}"
        writes.append(
            f'( mkdir -p "$(dirname {target})"; chmod u+w {target}; '
            f"python3 -c {q(python)} > {target} ) 2>/dev/null"
        )
    return "; ".join(writes) + "; echo done > work.txt; true"


def test_a_forged_loose_object_never_reaches_the_users_history(project: Path) -> None:
    before = _objects(project)
    import_tasks(project, [spec("forge", _forgery_command(project))])
    result = run_rho("mission", "--from-tasks", "--sandbox", cwd=project)
    assert result.code == 1, result.stderr
    error = store_tasks(project)["forge"]["lastError"]
    assert "the task's new git objects were refused" in error, error
    assert "is not what its name says (forged)" in error, error
    assert run_git(project, "show", "main:file0000.txt") == "line 0\n"
    after = _objects(project)
    assert {name: after[name] for name in before} == before
    _fsck(project)


def test_deleting_the_packs_from_the_sandbox_leaves_the_history(project: Path) -> None:
    run_git(project, "gc", "--quiet")
    before = _objects(project)
    assert any(name.startswith("pack/") for name in before)
    delete = (
        'rm -f "$(git rev-parse --git-common-dir)"/objects/pack/* /tmp/.rho-objects/pack/* '
        "2>/dev/null; echo done > work.txt; true"
    )
    import_tasks(project, [spec("delete", delete)])
    result = run_rho("mission", "--from-tasks", "--sandbox", cwd=project)
    assert result.code == 0, result.stderr
    after = _objects(project)
    assert {name: after[name] for name in before} == before
    assert run_git(project, "log", "--format=%s") == "initial\n"
    _fsck(project)


def test_links_planted_in_the_object_folders_are_never_written_through(
    project: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    plant = (
        'cd "$(git rev-parse --git-common-dir)/objects" && '
        f"for x in $(seq 0 255); do d=$(printf %02x $x); [ -e $d ] || ln -s {q(outside)} $d; "
        'done; cd "$RHO_WORKTREE" && echo new > new.txt && git add new.txt && '
        "git commit -qm mine 2>/dev/null; echo more > more.txt; true"
    )
    import_tasks(project, [spec("links", plant)])
    result = run_rho("mission", "--from-tasks", "--sandbox", cwd=project)
    assert result.code == 1, result.stderr
    assert list(outside.iterdir()) == []
    error = store_tasks(project)["links"]["lastError"]
    assert "the task's new git objects were refused" in error, error
    assert not any(path.is_symlink() for path in (project / ".git" / "objects").iterdir())
    _fsck(project)


def test_a_sandboxed_task_that_commits_and_packs_lands_its_work(project: Path) -> None:
    work = (
        "echo one > one.txt && git add one.txt && git commit -qm 'agent one' && "
        "git repack -q -l && echo two > two.txt && git add two.txt && git commit -qm 'agent two'"
    )
    import_tasks(
        project, [spec("agent", work), spec("next", "cat one.txt two.txt > both.txt", "agent")]
    )
    result = run_rho("mission", "--from-tasks", "--sandbox", cwd=project)
    assert result.code == 0, result.stderr
    assert run_rho("mission", "merge", "latest", cwd=project).code == 0
    files = tree_files(project, "HEAD")
    assert files["both.txt"] == "one\ntwo\n"
    subjects = run_git(project, "log", "--format=%s").splitlines()
    assert {"agent one", "agent two"} <= set(subjects)
    assert not (project / ".git" / "rho-quarantine").exists() or not any(
        (project / ".git" / "rho-quarantine").iterdir()
    )
    _fsck(project)


# -- host sockets, home secrets, the environment ----------------------------------------------

SECRET_FILES = (
    ".ssh/id_ed25519",
    ".aws/credentials",
    ".config/gh/hosts.yml",
    ".netrc",
    ".git-credentials",
    ".gnupg/private-keys-v1.d/key",
    ".docker/config.json",
    ".kube/config",
)


def _home_with_secrets() -> Path:
    home = Path(os.environ["HOME"])
    for name in SECRET_FILES:
        path = home / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"SECRET-{name}\n")
    return home


@pytest.fixture
def sockets(tmp_path: Path) -> Iterator[list[Path]]:
    """Listening UNIX sockets where a host has them: in /run, in the home, one folder below."""
    home = Path(os.environ["HOME"])
    (home / ".agent").mkdir(exist_ok=True)
    paths = [Path(f"/run/rho-test-{secrets.token_hex(4)}.sock"), home / "x.sock"]
    paths.append(home / ".agent" / "agent.sock")
    listeners = []
    for path in paths:
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(path))
        server.listen(8)
        listeners.append(server)
    yield paths
    for server, path in zip(listeners, paths, strict=True):
        server.close()
        path.unlink()


def _reach_command(home: Path, sockets: list[Path]) -> str:
    reads = "; ".join(f"cat {q(home / name)} >> seen.txt 2>/dev/null" for name in SECRET_FILES)
    connect = (
        "import socket, sys\n"
        "for path in sys.argv[1:]:\n"
        "    s = socket.socket(socket.AF_UNIX)\n"
        "    try:\n"
        "        s.connect(path)\n"
        "        print('CONNECTED', path)\n"
        "    except OSError as exc:\n"
        "        print('refused', path, exc.errno)\n"
    )
    targets = " ".join(q(path) for path in sockets)
    return f"{reads}; python3 -c {q(connect)} {targets} >> seen.txt; true"


@pytest.mark.parametrize("flag", ["--sandbox", "--sandbox-no-network"])
def test_host_sockets_and_home_secrets_are_out_of_a_sandboxed_tasks_reach(
    project: Path, sockets: list[Path], flag: str
) -> None:
    home = _home_with_secrets()
    import_tasks(project, [spec("reach", _reach_command(home, sockets))])
    result = run_rho("mission", "--from-tasks", flag, cwd=project)
    assert result.code == 0, result.stderr
    seen = tree_files(project, integration_branch(project))["seen.txt"]
    assert "SECRET" not in seen
    assert "CONNECTED" not in seen
    assert seen.count("refused") == len(sockets)


def test_sandbox_allow_shows_one_more_path_read_only(project: Path) -> None:
    home = _home_with_secrets()
    allowed = home / ".netrc"
    write = f"echo x >> {q(allowed)} 2>/dev/null && echo WROTE >> seen.txt"
    import_tasks(project, [spec("allowed", f"cat {q(allowed)} > seen.txt; {write}; true")])
    flags = ("--sandbox", "--sandbox-allow", str(allowed))
    result = run_rho("mission", "--from-tasks", *flags, cwd=project)
    assert result.code == 0, result.stderr
    assert tree_files(project, integration_branch(project))["seen.txt"] == "SECRET-.netrc\n"
    assert allowed.read_text() == "SECRET-.netrc\n"


def test_sandbox_env_passes_only_the_named_variables(project: Path) -> None:
    task = 'echo "key=${AGENT_API_KEY:-} token=${CLOUD_TOKEN:-} task=$RHO_TASK_ID" > seen.txt'
    import_tasks(project, [spec("env", task)])
    env = {**rho_env(), "AGENT_API_KEY": "kept", "CLOUD_TOKEN": "dropped"}
    flags = ("--sandbox", "--sandbox-env", "AGENT_API_KEY")
    result = run_rho("mission", "--from-tasks", *flags, cwd=project, env=env)
    assert result.code == 0, result.stderr
    seen = tree_files(project, integration_branch(project))["seen.txt"]
    assert seen == "key=kept token= task=env\n"


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ("--sandbox-allow", "/x"),
            "error: --sandbox-allow needs --sandbox: it says what the sandbox shows",
        ),
        (
            ("--sandbox-env", "A"),
            "error: --sandbox-env needs --sandbox: it says what the sandbox shows",
        ),
        (
            ("--sandbox", "--sandbox-env", "A,,B"),
            "error: --sandbox-env takes variable names, comma-separated",
        ),
    ],
)
def test_sandbox_reach_options_without_a_sandbox_are_one_error_line(
    project: Path, flags: tuple[str, ...], message: str
) -> None:
    import_tasks(project, [spec("a", "true")])
    before = store_bytes(project)
    result = run_rho("mission", "--from-tasks", *flags, cwd=project)
    assert (result.code, result.stderr_lines[0]) == (2, message)
    assert store_bytes(project) == before


def test_secrets_behind_links_are_hidden_where_they_lead(project: Path, tmp_path: Path) -> None:
    home = Path(os.environ["HOME"])
    dotfiles = tmp_path / "dotfiles"
    (dotfiles / "ssh").mkdir(parents=True)
    (dotfiles / "ssh" / "id_ed25519").write_text("SECRET-linked-key\n")
    (dotfiles / "netrc").write_text("SECRET-linked-netrc\n")
    (home / ".ssh").symlink_to(dotfiles / "ssh")
    (home / ".netrc").symlink_to(dotfiles / "netrc")
    (home / ".git-credentials").symlink_to(tmp_path / "nowhere")  # dangling: nothing to read
    reads = f"cat {q(home / '.ssh' / 'id_ed25519')} {q(home / '.netrc')} > seen.txt 2>/dev/null"
    import_tasks(project, [spec("reach", f"{reads}; echo done >> seen.txt")])
    result = run_rho("mission", "--from-tasks", "--sandbox", cwd=project)
    assert result.code == 0, result.stderr
    assert tree_files(project, integration_branch(project))["seen.txt"] == "done\n"


def test_a_shown_parent_of_the_repository_lies_under_rhos_own_mounts(project: Path) -> None:
    task = (
        f"cat {q(project / '.rho' / 'tasks.json')} > seen.txt 2>/dev/null; "
        "echo written > written.txt"
    )
    import_tasks(project, [spec("reach", task)])
    flags = ("--sandbox", "--sandbox-allow", str(project.parent))
    result = run_rho("mission", "--from-tasks", *flags, cwd=project)
    assert result.code == 0, result.stderr
    files = tree_files(project, integration_branch(project))
    assert (files["seen.txt"], files["written.txt"]) == ("", "written\n")
