"""Bad input of every kind: exit 2, one ``error:`` line (maybe a ``hint:``), never a traceback;
refused mutations leave the store byte for byte; ``--debug`` shows the traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.rho import RunRho, assert_bad_input, run_rho
from support.stores import task, write_store

ALL_COMMANDS = [
    ["list"],
    ["show", "task_1"],
    ["update", "task_1", "--status", "completed"],
    ["add", "new"],
    ["ready"],
    ["ready", "--json"],
    ["waves", "--json"],
    ["validate"],
    ["export"],
    ["compact"],
    ["import", "other.json"],
]


@pytest.fixture(scope="module")
def two_tasks_bytes(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A store made by the CLI, once per module: task_1, and task_2 blocked by task_1."""
    folder = tmp_path_factory.mktemp("two-tasks")
    run_rho("task", "add", "first", "--store", "s.json", cwd=folder)
    run_rho("task", "add", "second", "--blocked-by", "task_1", "--store", "s.json", cwd=folder)
    return (folder / "s.json").read_bytes()


@pytest.fixture
def two_tasks(two_tasks_bytes: bytes, tmp_path: Path) -> Path:
    """This test's own copy of that store, as ``s.json`` in its folder."""
    store = tmp_path / "s.json"
    store.write_bytes(two_tasks_bytes)
    return store


@pytest.mark.parametrize("command", ALL_COMMANDS, ids=" ".join)
def test_unparseable_store_is_reported_by_every_command(
    rho: RunRho, tmp_path: Path, command: list[str]
) -> None:
    (tmp_path / "s.json").write_text("{not json")
    (tmp_path / "other.json").write_text("[]")
    result = rho("task", *command, "--store", "s.json")
    assert_bad_input(
        result,
        "read task store s.json: invalid JSON: "
        "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
    )


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ({"tasks": {"task_1": {}}}, "tasks: input should be a valid list"),
        ({"tasks": [{"id": "task_1", "status": "pending"}]}, "tasks.0.subject: field required"),
        ({"schema_version": "rho.tasks/v9"}, "schema_version: input should be 'rho.tasks/v1'"),
        (
            {"tasks": [task("a", dependencies=[{"targetId": "b", "type": ["blocks"]}])]},
            "tasks.0.dependencies.0.type: input should be 'blocks', 'related' or 'parent-child'",
        ),
    ],
    ids=["tasks-not-a-list", "no-subject", "other-schema", "unhashable-dependency-type"],
)
def test_store_that_is_json_but_not_a_task_store_is_reported(
    rho: RunRho, tmp_path: Path, document: object, problem: str
) -> None:
    # `ready --json` reads through the light path first: it must fail exactly as the model does.
    (tmp_path / "s.json").write_text(json.dumps(document))
    result = rho("task", "ready", "--json", "--store", "s.json")
    assert_bad_input(result, f"read task store s.json: {problem}")


@pytest.mark.parametrize("command", [["show"], ["update", "--status", "failed"]], ids=" ".join)
def test_unknown_id_is_reported(rho: RunRho, diamond: Path, command: list[str]) -> None:
    name, *options = command
    result = rho("task", name, "task_77", *options, "--store", str(diamond))
    assert_bad_input(result, 'task "task_77" not found')


INVALID_GRAPHS = {
    "cycle": (
        [task("a", "c"), task("b", "a"), task("c", "b")],
        "cycle detected in blocking task dependency graph: a -> c -> b -> a",
    ),
    "missing-blocker": ([task("a", "ghost")], 'task "a" depends on missing blocker "ghost"'),
    "self-blocker": ([task("a", "a")], 'task "a" blocks itself'),
    "empty-blocker": ([task("a", "  ")], 'task "a" has an empty blocking dependency'),
    "invalid-status": ([task("a", status="done")], 'task "a" has invalid status "done"'),
    "shared-id": ([task("a"), task("a")], 'task schedule contains invalid task identity "a"'),
}


SCHEDULE_COMMANDS = [["ready"], ["ready", "--json"], ["waves"], ["waves", "--json"], ["validate"]]


@pytest.mark.parametrize(
    ("graph", "command"),
    # Every command with one graph, and every graph with one command (the matrix costs too long).
    [("cycle", command) for command in SCHEDULE_COMMANDS]
    + [
        (graph, SCHEDULE_COMMANDS[n % len(SCHEDULE_COMMANDS)])
        for n, graph in enumerate(INVALID_GRAPHS)
        if graph != "cycle"
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else value,
)
def test_invalid_graph_is_reported_with_the_validator_message(
    rho: RunRho, tmp_path: Path, graph: str, command: list[str]
) -> None:
    tasks, message = INVALID_GRAPHS[graph]
    write_store(tmp_path / "s.json", tasks)
    result = rho("task", *command, "--store", "s.json")
    assert_bad_input(result, f"validate task schedule: {message}")


def test_graph_over_the_task_cap_is_reported(rho: RunRho, tmp_path: Path) -> None:
    write_store(tmp_path / "s.json", [task(f"t{n:04}") for n in range(1001)])
    result = rho("task", "waves", "--json", "--store", "s.json")
    assert_bad_input(result, "validate task schedule: task schedule exceeds 1000-task limit")


def test_graph_with_a_cycle_still_lists(rho: RunRho, tmp_path: Path) -> None:
    write_store(tmp_path / "s.json", INVALID_GRAPHS["cycle"][0])
    result = rho("task", "list", "--json", "--store", "s.json")
    assert [t["id"] for t in result.json()["tasks"]] == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("args", "message", "hint"),
    [
        (["task", "list", "--bogus"], "No such option '--bogus'.", "rho task list"),
        (["task", "frobnicate"], "No such command 'frobnicate'.", "rho task"),
        (["bogus"], "No such command 'bogus'.", "rho"),
        (["task", "show"], "Missing argument 'ID'.", "rho task show"),
        (["task", "list", "extra"], "Got unexpected extra argument (extra)", "rho task list"),
        (["task", "add", "x", "--blocked-by"], "Option '--blocked-by' requires an argument.", None),
        (["task", "list", "--json=yes"], "Option '--json' does not take a value.", None),
        (["--store"], "Option '--store' requires an argument.", None),
        (["--store", "x.json"], "Missing command.", "rho"),
        (
            ["--store", ".", "task", "ready", "--json"],
            "Invalid value for '--store': File '.' is a directory.",
            "rho",
        ),
        (
            ["task", "ready", "--json", "--store", "."],
            "Invalid value for '--store': File '.' is a directory.",
            "rho task ready",
        ),
        (
            ["task", "import", "."],
            "Invalid value for 'FILE': File '.' is a directory.",
            "rho task import",
        ),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else "",
)
def test_bad_command_line_is_reported_with_a_usage_hint(
    rho: RunRho, args: list[str], message: str, hint: str | None
) -> None:
    expected_hint = None if hint is None else f"run '{hint} --help' for usage"
    assert_bad_input(rho(*args), message, expected_hint)


def test_bad_status_value_is_refused(rho: RunRho, two_tasks: Path) -> None:
    before = two_tasks.read_bytes()
    result = rho("task", "update", "task_1", "--status", "done", "--store", "s.json")
    assert_bad_input(
        result,
        'invalid status "done"; expected one of '
        "cancelled, completed, failed, in_progress, pending, reviewing, skipped",
    )
    assert two_tasks.read_bytes() == before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["update", "task_1", "--add-blocker", "task_1"], 'task "task_1" blocks itself'),
        (
            ["update", "task_1", "--add-blocker", "task_9"],
            'task "task_1" depends on missing blocker "task_9"',
        ),
        (
            ["add", "third", "--blocked-by", "task_9"],
            'task "task_3" depends on missing blocker "task_9"',
        ),
        (
            ["update", "task_1", "--add-blocker", "task_2"],
            "cycle detected in blocking task dependency graph: task_1 -> task_2 -> task_1",
        ),
        (["add", "third", "--blocked-by", " "], 'task "task_3" has an empty blocking dependency'),
        (["add", "third", "--parent", "task_9"], 'task "task_9" not found'),
        (["add", "third", "--related", "task_9"], 'task "task_9" not found'),
        (["add", "  "], "task subject must not be blank"),
        (
            ["update", "task_2", "--remove-blocker", "task_9"],
            'task "task_2" is not blocked by "task_9"',
        ),
        (["import", "again.json"], 'task "task_1" already exists'),
        (["import", "cycle.json"], "cycle detected in blocking task dependency graph: x -> y -> x"),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else "",
)
def test_refused_mutation_leaves_the_store_byte_for_byte(
    rho: RunRho, two_tasks: Path, args: list[str], message: str
) -> None:
    folder = two_tasks.parent
    (folder / "again.json").write_text(json.dumps([task("task_1")]))
    (folder / "cycle.json").write_text(json.dumps([task("x", "y"), task("y", "x")]))
    before = two_tasks.read_bytes()
    files_before = {p.name for p in folder.iterdir()}
    assert_bad_input(rho("task", *args, "--store", "s.json"), message)
    assert two_tasks.read_bytes() == before
    # No temporary file left behind; the lock file of a writer may stay (it is empty).
    assert {p.name for p in folder.iterdir()} - {"s.json.lock"} == files_before


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "read missing.json: No such file or directory"),
        (
            "[{",
            "read missing.json: invalid JSON: "
            "Expecting property name enclosed in double quotes: line 1 column 3 (char 2)",
        ),
        (b"\xff\xfe", "read missing.json: not UTF-8 text"),
        (
            '"a string"',
            "read missing.json: document: expected a JSON object",
        ),
        ('[{"id": "z", "subject": "s"}]', "read missing.json: tasks.0.status: field required"),
    ],
    ids=["missing", "invalid-json", "not-utf8", "not-tasks", "task-without-status"],
)
def test_import_of_a_bad_file_is_reported(
    rho: RunRho, two_tasks: Path, content: str | bytes | None, message: str
) -> None:
    file = two_tasks.parent / "missing.json"
    if isinstance(content, str):
        file.write_text(content)
    elif isinstance(content, bytes):
        file.write_bytes(content)
    before = two_tasks.read_bytes()
    assert_bad_input(rho("task", "import", "missing.json", "--store", "s.json"), message)
    assert two_tasks.read_bytes() == before


@pytest.mark.parametrize(
    "args",
    [
        ["task", "show", "task_77", "--store", "s.json"],
        ["task", "ready", "--json", "--store", "cycle.json"],
        ["task", "update", "task_1", "--add-blocker", "task_2", "--store", "s.json"],
    ],
    ids=["unknown-id", "invalid-graph", "refused-cycle"],
)
def test_debug_shows_the_traceback_then_the_same_error_line(
    rho: RunRho, two_tasks: Path, args: list[str]
) -> None:
    write_store(two_tasks.parent / "cycle.json", INVALID_GRAPHS["cycle"][0])
    plain = rho(*args)
    debug = rho("--debug", *args)
    assert plain.code == debug.code == 2
    assert "Traceback" not in plain.stderr
    assert debug.stderr_lines[0] == "Traceback (most recent call last):"
    assert debug.stderr_lines[-1] == plain.stderr_lines[-1]
    assert debug.stderr_lines[-1].startswith("error: ")


def test_bare_command_groups_print_their_help(rho: RunRho) -> None:
    for args in ([], ["task"]):
        result = rho(*args)
        assert (result.code, result.stderr) == (0, "")
        assert result.stdout.startswith(f"Usage: {' '.join(['rho', *args])} [OPTIONS] COMMAND")


def test_store_in_a_folder_that_cannot_be_created_is_reported(rho: RunRho, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    result = rho("task", "add", "x", "--store", "file/tasks.json")
    assert result.code == 2
    assert len(result.stderr_lines) == 1
    assert result.stderr_lines[0].startswith("error: ")
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("word", ["NaN", "Infinity", "-Infinity"])
@pytest.mark.parametrize(
    "command", [["list", "--json"], ["show", "a", "--json"], ["update", "a", "--priority", "1"]]
)
def test_a_store_holding_nan_or_infinity_is_refused_not_printed_or_nulled(
    rho: RunRho, tmp_path: Path, word: str, command: list[str]
) -> None:
    # Python's parser takes these words; JSON has none of them. Printed, they break every
    # other reader; rewritten, they became null without a word.
    store = tmp_path / "s.json"
    store.write_text(
        '{"schema_version": "rho.tasks/v1", "tasks": '
        f'[{{"id": "a", "subject": "s", "status": "pending", "metadata": {{"cost": {word}}}}}]}}'
    )
    before = store.read_bytes()
    assert_bad_input(
        rho("task", *command, "--store", "s.json"),
        f"read task store s.json: invalid JSON: {word} is not JSON (JSON has no NaN or Infinity)",
    )
    assert store.read_bytes() == before


def test_an_import_holding_nan_is_refused(rho: RunRho, two_tasks: Path) -> None:
    (two_tasks.parent / "in.json").write_text('[{"id": "z", "subject": "s", "x": NaN}]')
    before = two_tasks.read_bytes()
    assert_bad_input(
        rho("task", "import", "in.json", "--store", "s.json"),
        "read in.json: invalid JSON: NaN is not JSON (JSON has no NaN or Infinity)",
    )
    assert two_tasks.read_bytes() == before
