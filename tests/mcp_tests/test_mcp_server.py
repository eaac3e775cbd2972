"""``rho mcp`` driven as agents drive it: a subprocess, the official SDK's stdio client."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from support.repos import init_repo
from support.rho import RHO, Result, run_rho
from taskstore import TaskList, TaskStore

CORE = ["TaskCreate", "TaskGet", "TaskList", "TaskUpdate"]
MISSIONS = ["MissionList", "MissionLog", "MissionShow"]

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return init_repo(tmp_path / "repo", 1)


def rho(repo: Path, *args: str) -> Result:
    """The CLI beside the MCP server, on the same store."""
    return run_rho(*args, cwd=repo)


@asynccontextmanager
async def session(repo: Path, *args: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=str(RHO), args=["mcp", *args], cwd=str(repo))
    with open(repo.parent / "mcp.stderr", "a") as errors:  # noqa: ASYNC230 - a log file
        async with (
            stdio_client(params, errlog=errors) as streams,
            ClientSession(streams[0], streams[1]) as client,
        ):
            await client.initialize()
            yield client


async def call(client: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def refused(client: ClientSession, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result.structured_content
    [content] = result.content
    text: str = getattr(content, "text")  # noqa: B009 - a TextContent
    return text


async def names(client: ClientSession) -> list[str]:
    return sorted(tool.name for tool in (await client.list_tools()).tools)


async def test_the_core_tools_by_default_every_tool_with_all_no_writes_when_read_only(
    repo: Path,
) -> None:
    async with session(repo) as client:
        assert await names(client) == CORE
    async with session(repo, "--tools", "all") as client:
        assert await names(client) == sorted(CORE + MISSIONS)
        schema = next(t for t in (await client.list_tools()).tools if t.name == "TaskList")
        assert schema.input_schema["properties"]["action"]["enum"] == [
            "ready",
            "list",
            "failed",
            "compact",
        ]
    async with session(repo, "--tools", "all", "--read-only") as client:
        assert await names(client) == sorted(["TaskGet", "TaskList", *MISSIONS])


async def test_task_list_ready_is_the_library_answer_and_the_cli_one(repo: Path) -> None:
    assert rho(repo, "task", "add", "one").code == 0
    assert rho(repo, "task", "add", "two", "--blocked-by", "task_1").code == 0
    store = TaskStore(repo / ".rho" / "tasks.json")

    async with session(repo) as client:
        ready = await call(client, "TaskList", action="ready")
        listed = await call(client, "TaskList", action="list")
        compact = await call(client, "TaskList", action="compact")

    assert ready == TaskList(store).run({"action": "ready"})
    assert ready == json.loads(rho(repo, "task", "ready", "--json").stdout)
    assert [t["id"] for t in ready["tasks"]] == ["task_1"]
    assert [t["id"] for t in listed["tasks"]] == ["task_1", "task_2"]
    assert compact["counts"] == {"pending": 2}


async def test_an_invalid_graph_fails_closed_with_the_cli_message(repo: Path) -> None:
    store = repo / ".rho" / "tasks.json"
    store.parent.mkdir()
    cycle = [
        {"id": "a", "subject": "a", "status": "pending",
         "dependencies": [{"targetId": "b", "type": "blocks"}]},
        {"id": "b", "subject": "b", "status": "pending",
         "dependencies": [{"targetId": "a", "type": "blocks"}]},
    ]  # fmt: skip
    store.write_text(json.dumps({"tasks": cycle}))
    cli = rho(repo, "task", "ready", "--json")

    async with session(repo) as client:
        message = await refused(client, "TaskList", action="ready")
        assert (await call(client, "TaskGet", id="a"))["id"] == "a"  # still serving

    assert cli.code == 2
    assert f"error: {message}\n" == cli.stderr
    assert message.startswith("validate task schedule: ")


async def test_create_get_update_and_bad_input_as_the_cli_says_it(repo: Path) -> None:
    async with session(repo) as client:
        made = await call(client, "TaskCreate", subject="Write it", command="make", labels=["x"])
        child = await call(client, "TaskCreate", subject="Test it", parent=made["id"],
                           blockers=[made["id"]], priority=1)  # fmt: skip
        changed = await call(client, "TaskUpdate", id=made["id"], labels=["y", "z"], owner="ada")
        got = await call(client, "TaskGet", id=child["id"])
        missing = await refused(client, "TaskGet", id="nope")
        bad_blocker = await refused(client, "TaskCreate", subject="s", blockers=["nope"])
        bad_status = await refused(client, "TaskUpdate", id=made["id"], status="done")
        typed = await client.call_tool("TaskCreate", {"subject": 3})  # the SDK's own check

    assert (made["id"], child["id"]) == ("task_1", "task_1.1")
    assert (changed["metadata"]["labels"], changed["owner"]) == (["y", "z"], "ada")
    assert got["metadata"]["priority"] == 1
    assert {"targetId": "task_1", "type": "parent-child"} in got["dependencies"]
    assert {"targetId": "task_1", "type": "blocks"} in got["dependencies"]
    for message, args in (
        (missing, ("task", "show", "nope")),
        (bad_blocker, ("task", "add", "s", "--blocked-by", "nope")),
    ):
        cli = rho(repo, *args)
        assert cli.stderr == f"error: {message}\n", args
    assert "done" in bad_status
    assert typed.is_error
    assert json.loads(rho(repo, "task", "list", "--json").stdout)["tasks"][0]["owner"] == "ada"


async def test_a_claim_is_atomic_and_refused_when_taken_or_not_ready(repo: Path) -> None:
    assert rho(repo, "task", "add", "one").code == 0
    assert rho(repo, "task", "add", "two", "--blocked-by", "task_1").code == 0
    outcomes: dict[str, Any] = {}

    async def claim(owner: str) -> None:
        async with session(repo) as client:
            result = await client.call_tool(
                "TaskUpdate", {"id": "task_1", "claim": True, "owner": owner}
            )
            outcomes[owner] = result

    async with anyio.create_task_group() as group:
        for owner in ("agent-a", "agent-b"):
            group.start_soon(claim, owner)

    won = [owner for owner, result in outcomes.items() if not result.is_error]
    [winner] = won
    [loser] = [owner for owner in outcomes if owner != winner]
    text = getattr(outcomes[loser].content[0], "text")  # noqa: B009
    assert text == f'task "task_1" is claimed already by "{winner}"'
    task = json.loads(rho(repo, "task", "show", "task_1", "--json").stdout)
    assert (task["status"], task["owner"]) == ("in_progress", winner)
    async with session(repo) as client:
        not_ready = await refused(client, "TaskUpdate", id="task_2", claim=True, owner="c")
        no_owner = await refused(client, "TaskUpdate", id="task_2", claim=True)
    assert not_ready == 'task "task_2" is not ready: its blocker "task_1" is in_progress'
    assert no_owner == "a claim needs an owner"


async def test_mcp_and_cli_writers_on_one_store_lose_nothing(repo: Path) -> None:
    per_writer = 15

    async def mcp_writer(name: str) -> None:
        async with session(repo) as client:
            for n in range(per_writer):
                await call(client, "TaskCreate", subject=f"{name} {n}")

    def cli_writer(name: str) -> None:
        for n in range(per_writer):
            assert rho(repo, "task", "add", f"{name} {n}").code == 0

    async with anyio.create_task_group() as group:
        group.start_soon(mcp_writer, "mcp-1")
        group.start_soon(mcp_writer, "mcp-2")
        group.start_soon(anyio.to_thread.run_sync, cli_writer, "cli")

    subjects = [
        t["subject"] for t in json.loads(rho(repo, "task", "list", "--json").stdout)["tasks"]
    ]
    assert len(subjects) == 3 * per_writer
    assert sorted(subjects) == sorted(
        f"{name} {n}" for name in ("mcp-1", "mcp-2", "cli") for n in range(per_writer)
    )


async def test_missions_read_through_the_tools(repo: Path) -> None:
    spent = 'echo \'{"cost_usd": 0.5, "output_tokens": 9}\' > "$RHO_USAGE_FILE"; echo ok > ok.txt'
    assert rho(repo, "task", "add", "ok", "--command", spent).code == 0
    assert rho(repo, "task", "add", "bad", "--command", "echo broke; exit 3").code == 0
    assert rho(repo, "mission", "--from-tasks").code == 1
    mission = json.loads(rho(repo, "mission", "list", "--json").stdout)["missions"][0]["id"]

    async with session(repo, "--tools", "all") as client:
        listed = await call(client, "MissionList")
        shown = await call(client, "MissionShow", mission=mission[:4])
        log = await call(client, "MissionLog", mission="latest", task="task_2", tail=5)
        unknown = await refused(client, "MissionShow", mission="ffffffff")
        no_task = await refused(client, "MissionLog", mission="latest", task="nope")

    assert [m["id"] for m in listed["missions"]] == [mission]
    assert (shown["id"], shown["status"]) == (mission, "partial")
    assert {f["id"]: f["error"] for f in shown["features"]} == {
        "task_1": None,
        "task_2": "command failed: exit code 3",
    }
    assert log == {"mission": mission, "task": "task_2", "lines": ["broke"]}
    # What it spent, per task and in all (the task's $RHO_USAGE_FILE), in both tools.
    by_id = {f["id"]: f for f in shown["features"]}
    assert by_id["task_1"]["usage"]["cost_usd"] == 0.5
    assert by_id["task_2"]["usage"] is None
    assert shown["usage"]["output_tokens"] == 9
    assert shown["budget"] == {"usd": None, "tokens": None, "hard": False, "stop": None}
    assert listed["missions"][0]["usage"]["cost_usd"] == 0.5
    assert (
        unknown == rho(repo, "mission", "show", "ffffffff").stderr.removeprefix("error: ").strip()
    )
    assert no_task == f'mission {mission} has no task "nope"'


RESOLVER = Path(__file__).resolve().parents[2] / "examples" / "agents" / "stand-in-resolver.sh"


async def test_mission_show_says_what_came_of_a_conflicted_merge(repo: Path) -> None:
    resolver = RESOLVER
    for name in ("a", "b"):
        added = rho(repo, "task", "add", f"add {name}", "--command", f"echo {name} >> list.txt")
        assert added.code == 0
    ran = rho(repo, "mission", "--from-tasks", "--resolve", str(resolver))
    assert ran.code == 0, ran.stdout + ran.stderr

    async with session(repo, "--tools", "all") as client:
        shown = await call(client, "MissionShow", mission="latest")

    conflicts = {f["id"]: f["conflict"] for f in shown["features"]}
    assert conflicts["task_1"] is None
    assert conflicts["task_2"] == {
        "paths": ["list.txt"],
        "with": ["task_1"],
        "outcome": "resolved",
        "resolve_attempts": 1,
        "replays": 0,
        "reason": None,
    }
    assert shown["wave_joins"][0]["conflicted_ids"] == ["task_2"]


async def test_a_task_an_agent_claimed_over_mcp_is_not_run_by_a_mission(repo: Path) -> None:
    # Before the fix: the next mission ran and completed a task an agent held, with no word.
    for subject in ("claimed", "free"):
        added = rho(repo, "task", "add", subject, "--command", f"echo {subject} > {subject}.txt")
        assert added.code == 0
    async with session(repo) as client:
        await call(client, "TaskUpdate", id="task_1", claim=True, owner="agent-1")

    ran = rho(repo, "mission", "--from-tasks")

    assert ran.code == 0, ran.stdout + ran.stderr
    assert 'task_1: claimed by "agent-1" ' in ran.stderr
    store = TaskStore(repo / ".rho" / "tasks.json")
    claimed = store.get("task_1")
    assert (claimed.status, claimed.owner) == ("in_progress", "agent-1")
    assert store.get("task_2").status == "completed"
    taken = rho(repo, "mission", "--from-tasks", "--include-claimed")
    assert taken.code == 0, taken.stdout + taken.stderr
    assert store.get("task_1").status == "completed"


async def test_an_argument_a_tool_does_not_take_is_refused_naming_the_nearest(
    repo: Path,
) -> None:
    # Before the fix: TaskCreate {"subject": "typo", "blocked_by": [...]} made a task with no
    # blocker.
    assert rho(repo, "task", "add", "first").code == 0
    async with session(repo, "--tools", "all") as client:
        listed = (await client.list_tools()).tools
        typo = await refused(client, "TaskCreate", subject="typo", blocked_by=["task_1"])
        two = await refused(client, "TaskUpdate", id="task_1", stauts="completed", x=1)

    assert all(tool.input_schema["additionalProperties"] is False for tool in listed)
    assert typo == (
        'TaskCreate takes no argument "blocked_by" (did you mean blockers?); it takes '
        "blockers, command, description, labels, parent, priority, subject"
    )
    assert two.startswith('TaskUpdate takes no argument "stauts", "x" (did you mean status?)')
    stored = TaskStore(repo / ".rho" / "tasks.json").tasks()
    assert [task.subject for task in stored] == ["first"]  # nothing was created


async def test_the_server_says_its_version_and_its_tools_speak_the_users_words(
    repo: Path,
) -> None:
    async with session(repo, "--tools", "all") as client:
        tools = (await client.list_tools()).tools
        info = (await client.initialize()).server_info  # the handshake's answer, kept
    assert info.version == importlib.metadata.version("rho-mission")
    for tool in tools:
        assert "seed" not in (tool.description or "").lower(), tool.name


async def test_the_mission_tools_answer_for_their_own_repository_only(
    repo: Path, tmp_path: Path
) -> None:
    # Before the fix: given the path of another repository's mission folder, they returned it.
    other = init_repo(tmp_path / "other", 1)
    assert rho(other, "task", "add", "secret", "--command", "echo secret").code == 0
    assert rho(other, "mission", "--from-tasks").code == 0
    (folder,) = (other / ".rho" / "missions").iterdir()
    assert rho(repo, "task", "add", "mine", "--command", "true").code == 0
    assert rho(repo, "mission", "--from-tasks").code == 0

    async with session(repo, "--tools", "all") as client:
        shown = await refused(client, "MissionShow", mission=str(folder))
        log = await refused(client, "MissionLog", mission=str(folder), task="task_1")
        mine = await call(client, "MissionShow", mission="latest")

    assert shown == log
    assert shown.startswith(f'no mission "{folder}" in this repository')
    assert mine["features"][0]["id"] == "task_1"


def test_a_line_that_is_no_message_gets_json_rpcs_answer_and_the_server_goes_on(
    repo: Path,
) -> None:
    # Before the fix: such a request got no reply at all, and the client waited forever.
    lines = [
        "not json",
        '{"jsonrpc": "2.0", "id": 1}',  # JSON, no request
        "[" * 100_000 + "]" * 100_000,  # nested too deeply to read
        '{"jsonrpc": "2.0", "id": ' + "9" * 5000 + ', "method": "ping"}',
        '{"jsonrpc": "2.0", "id": 7, "method": "ping"}',
    ]
    server = subprocess.Popen(
        [str(RHO), "mcp"],
        cwd=repo,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert server.stdin is not None
    assert server.stdout is not None
    try:
        server.stdin.write("\n".join(lines) + "\n")
        server.stdin.flush()  # and kept open, as a client keeps it: the server answers each
        answers = [json.loads(server.stdout.readline()) for _ in lines]
    finally:
        server.kill()
        server.wait(timeout=60)
    codes = [answer.get("error", {}).get("code") for answer in answers]
    assert codes[:3] == [-32700, -32600, -32700]
    assert all(answer["id"] is None for answer in answers[:3])
    assert "error" in answers[3]  # a 5,000-digit id: answered, whichever error it is
    assert answers[-1] == {"jsonrpc": "2.0", "id": 7, "result": {}}
