"""The tools of ``rho mcp`` and the server that holds them.

Each tool is a method of ``Tools`` (the store and the repository the server was started for).
Its typed parameters are its JSON schema; its dict result is the structured result. A domain
error (a bad id, an invalid graph, a refused claim) is answered as a tool error holding the
CLI's one line, so the agent reads the same words a person would.

Decision: docs/decisions/0803-mcp.md
"""

from __future__ import annotations

import difflib
import functools
import importlib.metadata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    CallToolResult,
    ErrorData,
    InputRequiredResult,
    JSONRPCError,
    TextContent,
)
from mcp_types import Tool as MCPTool
from pydantic import ValidationError

from taskstore import TaskList, TaskStore, TaskStoreError

from .._errors import MissionError, MissionNotFoundError, quote
from ..git._repo import GitRepo

__all__ = ["CORE_TOOLS", "TOOLS", "Tools", "build_server", "serve"]

# The tools an agent gets by default: their descriptions cost its context on every turn.
CORE_TOOLS = ("TaskList", "TaskGet", "TaskCreate", "TaskUpdate")
TOOLS = (*CORE_TOOLS, "MissionList", "MissionShow", "MissionLog")
_WRITES = frozenset({"TaskCreate", "TaskUpdate"})
_LOG_TAIL = 40

F = TypeVar("F", bound=Callable[..., Any])


class _Refused(Exception):
    """A tool's own refusal of its arguments (a claim without an owner...)."""


def _tool_errors(function: F) -> F:
    """Answer the errors the CLI prints as one line with a tool error holding that line.

    Returned as the result itself: the SDK would put ``Error executing tool <name>:`` before
    the text of a raised error, and the agent would then read other words than a person does.
    """

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except (TaskStoreError, MissionError, _Refused) as exc:
            return tool_error(str(exc))
        except OSError as exc:
            where = f": {exc.filename}" if exc.filename else ""
            return tool_error(f"{exc.strerror or exc}{where}")

    return wrapper  # type: ignore[return-value]


def tool_error(message: str) -> CallToolResult:
    """The result of a refused call: *message*, the line the CLI would print after ``error:``."""
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


@dataclass(frozen=True)
class Tools:
    """The tools' world: the task store and the repository whose missions they read."""

    store_path: Path
    repo: Path | None

    @property
    def store(self) -> TaskStore:
        return TaskStore(self.store_path)

    # -- the task store ------------------------------------------------------------------------

    @_tool_errors
    def task_list(self, action: Literal["ready", "list", "failed", "compact"]) -> dict[str, Any]:
        """What to work on. ready: the pending tasks whose every blocker is completed,
        and the waves ({"tasks": [...], "waves": [...]}); list: every task; failed: the failed
        ones with their last error; compact: counts and one line per unfinished task."""
        answer = TaskList(self.store).run({"action": action})
        if "error" in answer:  # fails closed: no partial answer for an invalid graph
            raise _Refused(str(answer["error"]))
        return answer

    @_tool_errors
    def task_get(self, id: str) -> dict[str, Any]:
        """One task, every field."""
        return self.store.get(id).model_dump(by_alias=True, mode="json")

    @_tool_errors
    def task_create(
        self,
        subject: str,
        description: str = "",
        blockers: list[str] | None = None,
        parent: str | None = None,
        command: str | None = None,
        priority: int | None = None,
        labels: list[str] | None = None,
    ) -> dict[str, Any]:
        """Add a pending task (blocked by `blockers`, a subtask of `parent`); returns it."""
        created = self.store.add(
            subject,
            description=description,
            blocked_by=blockers or (),
            parent=parent,
            command=command,
            priority=priority,
            labels=labels or (),
        )
        return created.model_dump(by_alias=True, mode="json")

    @_tool_errors
    def task_update(
        self,
        id: str,
        status: str | None = None,
        subject: str | None = None,
        description: str | None = None,
        command: str | None = None,
        priority: int | None = None,
        labels: list[str] | None = None,
        claim: bool = False,
        owner: str | None = None,
    ) -> dict[str, Any]:
        """Change a task. claim=true takes a ready task atomically (pending -> in_progress,
        owned by `owner`), refused when it is claimed already or not ready."""
        store = self.store
        if claim:
            if status is not None:
                raise _Refused("claim sets the status itself: pass claim or status, not both")
            if not owner:
                raise _Refused("a claim needs an owner")
            claimed = store.claim(id, owner)
            others = (subject, description, command, priority, labels)
            if all(value is None for value in others):
                return claimed.model_dump(by_alias=True, mode="json")
            owner = None
        changed = store.update(
            id,
            status=status,
            subject=subject,
            description=description,
            command=command,
            priority=priority,
            labels=labels,
            owner=owner,
        )
        return changed.model_dump(by_alias=True, mode="json")

    # -- missions ----------------------------------------------------------------------------

    @_tool_errors
    def mission_list(self) -> dict[str, Any]:
        """The repository's missions, newest first: id, status, counts, when."""
        from ..mission._mission import list_missions, mission_state

        rows = [
            {
                "id": m.id,
                "status": m.status,
                "state": mission_state(m),
                "features": len(m.features),
                "completed": sum(f.status == "completed" for f in m.features),
                "started_at": m.started_at,
                "completed_at": m.completed_at,
                # What its attempts spent (None: nothing recorded), and a budget's stop.
                "usage": m.usage.model_dump(mode="json") if m.usage else None,
                "budget_stop": m.budget_stop,
            }
            for m in list_missions(self._repo())
        ]
        return {"missions": rows}

    @_tool_errors
    def mission_show(self, mission: str) -> dict[str, Any]:
        """A mission (an id, a unique prefix, or 'latest'): its status, waves, joins, and each
        feature's status, error, what it spent and, when its merge conflicted, what came of
        that; the mission's spend and budgets."""
        found = self._mission(mission)
        from ..mission._mission import mission_state

        return {
            "id": found.id,
            "status": found.status,
            "state": mission_state(found),
            "waves": found.waves,
            "features": [
                {
                    "id": f.id,
                    "status": f.status,
                    "attempts": f.attempts,
                    "error": f.error,
                    "conflict": f.conflict.model_dump(mode="json") if f.conflict else None,
                    "usage": f.usage.model_dump(mode="json") if f.usage else None,
                }
                for f in found.features
            ],
            "usage": found.usage.model_dump(mode="json") if found.usage else None,
            "budget": {
                "usd": found.config.budget_usd,
                "tokens": found.config.budget_tokens,
                "hard": found.config.budget_hard,
                "stop": found.budget_stop,
            },
            "wave_joins": [j.model_dump(mode="json") for j in found.wave_joins],
            "held": [h.model_dump(mode="json") for h in found.held],
        }

    @_tool_errors
    def mission_log(self, mission: str, task: str, tail: int = _LOG_TAIL) -> dict[str, Any]:
        """The last `tail` lines of one task's log in a mission (its output)."""
        # The log reader lives with the CLI's log commands (as for `rho serve`).
        from ..records._logs import log_path, read_tail

        found = self._mission(mission)
        if task not in {f.id for f in found.features}:
            raise _Refused(f"mission {found.id} has no task {quote(task)}")
        if tail < 1:
            raise _Refused(f"tail must be at least 1, not {tail}")
        lines = read_tail(log_path(found, task), tail, output_only=True)
        return {"mission": found.id, "task": task, "lines": lines}

    def _repo(self) -> Path:
        if self.repo is None:
            raise _Refused("rho mcp was started outside a git repository: it has no missions")
        return self.repo

    def _mission(self, name: str) -> Any:
        """The mission *name* names in this repository: an id, a unique prefix, ``latest``,
        or a folder below its ``.rho/missions``; never one of another repository (an agent
        reads the missions of the repository it was given, and no other).

        Raises:
            MissionNotFoundError: no such mission here.
        """
        from ..mission._mission import Mission
        from ..mission._names import resolve_mission
        from ..records._places import missions_folder

        repo = self._repo()
        folder = resolve_mission(repo, name)
        here = missions_folder(GitRepo.open(repo).root).resolve()
        if folder.resolve().parent != here:
            raise MissionNotFoundError(
                f"no mission {quote(name)} in this repository: name one by its id, a prefix "
                "of it, or latest"
            )
        return Mission.load(folder)


# Each tool's name, and the method of ``Tools`` that answers it.
_METHODS = {
    "TaskList": "task_list",
    "TaskGet": "task_get",
    "TaskCreate": "task_create",
    "TaskUpdate": "task_update",
    "MissionList": "mission_list",
    "MissionShow": "mission_show",
    "MissionLog": "mission_log",
}


class _StrictServer(MCPServer[Any]):
    """An MCP server whose tools take the arguments they name and no other.

    The SDK's argument models ignore an unknown key, so a typo (``blocked_by`` for
    ``blockers``) would succeed and silently drop what the agent meant. Here every tool's input
    schema says ``additionalProperties: false``, and a call with a key the tool does not take
    is a tool error naming it, the keys there are, and the nearest one.
    """

    async def list_tools(self) -> list[MCPTool]:
        listed = await super().list_tools()
        return [
            tool.model_copy(
                update={"input_schema": {**tool.input_schema, "additionalProperties": False}}
            )
            for tool in listed
        ]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Any = None
    ) -> CallToolResult | InputRequiredResult:
        problem = await self._unknown_arguments(name, arguments)
        if problem is not None:
            return tool_error(problem)
        return await super().call_tool(name, arguments, context)

    async def run_stdio_async(self) -> None:
        """Serve over stdio, answering every line that is no JSON-RPC message.

        The SDK's stdio transport hands such a line to the session as an exception, which
        logs it and answers nothing: a client that sent it waits forever. Here it gets
        JSON-RPC's answer (``id`` null): -32700 for a line that is not JSON (or nested too
        deeply to read), -32600 for JSON that is no request.
        """
        async with stdio_server() as (wire_in, wire_out):
            send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)

            async def relay() -> None:
                async with send:
                    async for item in wire_in:
                        if isinstance(item, Exception):
                            await wire_out.send(SessionMessage(_bad_line_answer(item)))
                        else:
                            await send.send(item)

            # The SDK's own run_stdio_async drives this same lowlevel server.
            lowlevel = self._lowlevel_server
            async with anyio.create_task_group() as group:
                group.start_soon(relay)
                await lowlevel.run(receive, wire_out, lowlevel.create_initialization_options())

    # Each tool's argument names, read once from the schemas (the tools are all added before
    # the server serves): not a listing of every tool at every call.
    _arguments: dict[str, list[str]] | None = None

    async def _unknown_arguments(self, name: str, arguments: dict[str, Any]) -> str | None:
        if self._arguments is None:
            listed = await super().list_tools()
            self._arguments = {t.name: sorted(t.input_schema.get("properties", {})) for t in listed}
        taken = self._arguments.get(name)
        if taken is None:
            return None  # the SDK answers an unknown tool
        unknown = sorted(key for key in arguments if key not in taken)
        if not unknown:
            return None
        first = unknown[0]
        nearest = difflib.get_close_matches(first, taken, n=1, cutoff=0.5)
        hint = f" (did you mean {nearest[0]}?)" if nearest else ""
        return (
            f"{name} takes no argument {', '.join(map(quote, unknown))}{hint}; "
            f"it takes {', '.join(taken)}"
        )


def _bad_line_answer(problem: Exception) -> JSONRPCError:
    """JSON-RPC's answer to a line the transport could not take as a message."""
    kinds = (
        {error["type"] for error in problem.errors()}
        if isinstance(problem, ValidationError)
        else set()
    )
    if "json_invalid" in kinds:
        error = ErrorData(code=PARSE_ERROR, message="Parse error: the line is not JSON")
    else:
        error = ErrorData(code=INVALID_REQUEST, message="Invalid Request: no JSON-RPC message")
    return JSONRPCError(jsonrpc="2.0", id=None, error=error)


def package_version() -> str:
    """rho-mission's version, as ``rho --version`` says it (the server's ``serverInfo``)."""
    try:
        return importlib.metadata.version("rho-mission")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree not installed
        return "0+unknown"


def build_server(
    store_path: Path, repo: Path | None, *, names: Sequence[str] = CORE_TOOLS, read_only: bool
) -> MCPServer:
    """An MCP server offering the tools *names* (less the writes when *read_only*)."""
    tools = Tools(store_path, repo)
    server: MCPServer = _StrictServer(
        "rho",
        version=package_version(),
        log_level="ERROR",  # stderr is the agent's terminal: no line per refused call
        instructions=(
            "rho's task store: ask TaskList {action: 'ready'} what may start now, claim a task "
            "with TaskUpdate {id, claim: true, owner}, and mark it completed when done."
        ),
    )
    for name in names:
        if read_only and name in _WRITES:
            continue
        method = getattr(tools, _METHODS[name])  # bound: its schema has no ``self``
        description = " ".join((method.__doc__ or "").split())
        server.add_tool(method, name=name, description=description)
    return server


def serve(store_path: Path, repo: Path | None, *, names: Sequence[str], read_only: bool) -> None:
    """Serve the tools over stdio until the client closes the connection."""
    build_server(store_path, repo, names=names, read_only=read_only).run("stdio")
