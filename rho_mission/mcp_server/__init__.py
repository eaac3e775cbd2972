"""``rho mcp``: the task store and the missions as MCP tools, for agents (stdio, official SDK).

An agent asks the validated store what it may start (``TaskList {"action": "ready"}``, the
seed's agent tool), claims a task atomically, and reads missions, without a process per call.
Tools are plain functions over ``taskstore`` and the mission library, registered on the SDK's
``MCPServer`` (``_server``); every error the CLI would print as ``error: <line>`` is a tool
error with that same line, and the server keeps serving.

Direction: imports ``taskstore`` and the library (``mission``, ``records``,
``rho_mission._errors``); never the CLI or the server. The CLI only starts it (``cli/_mcp``);
nothing else imports it.

Decision: docs/decisions/0803-mcp.md
"""

from __future__ import annotations

from ._server import CORE_TOOLS, TOOLS, build_server, serve

__all__ = ["CORE_TOOLS", "TOOLS", "build_server", "serve"]
