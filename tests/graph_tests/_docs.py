"""Raw ``rho.graph/v1`` JSON data for the graph tests: small documents that tests then break."""

from __future__ import annotations

from typing import Any

T0 = "2024-05-01T12:00:00Z"
PROVENANCE: dict[str, Any] = {"producer": "rho-mission"}


def node(node_id: str, kind: str = "execution", **attributes: str) -> dict[str, Any]:
    """A node of *kind* with string *attributes*."""
    return {
        "id": node_id,
        "kind": kind,
        "created_at": T0,
        "effective_at": T0,
        "provenance": dict(PROVENANCE),
        "attributes": dict(attributes),
    }


def ref(node_id: str, kind: str = "execution") -> dict[str, str]:
    """A reference ``{kind, id}``."""
    return {"kind": kind, "id": node_id}


def edge(
    edge_id: str, source: str, target: str, kind: str = "depends_on", **attributes: str
) -> dict[str, Any]:
    """An edge between two execution nodes."""
    return {
        "id": edge_id,
        "kind": kind,
        "from": ref(source),
        "to": ref(target),
        "created_at": T0,
        "effective_at": T0,
        "provenance": dict(PROVENANCE),
        "attributes": dict(attributes),
    }


def event(event_id: str, subject: str, event_type: str = "created") -> dict[str, Any]:
    """An event about an execution node."""
    return {
        "id": event_id,
        "type": event_type,
        "subject": ref(subject),
        "occurred_at": T0,
        "idempotency_key": event_id,
        "provenance": dict(PROVENANCE),
    }


def document(
    nodes: list[dict[str, Any]] | None = None,
    edges: list[dict[str, Any]] | None = None,
    events: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """An envelope around the given facts."""
    return {
        "schema_version": "rho.graph/v1",
        "generated_at": T0,
        "scope": {"project_id": "proj"},
        "nodes": nodes or [],
        "edges": edges or [],
        "events": events or [],
    }


def sample() -> dict[str, Any]:
    """Three tasks a <- b <- c (c depends on b depends on a), a parent, events; valid."""
    return document(
        nodes=[
            node("rho/task/a", status="done", wave="1"),
            node("rho/task/b", status="open", wave="2"),
            node("rho/task/c", status="open", wave="3"),
            node("rho/task/p", kind="knowledge"),
        ],
        edges=[
            edge("rho/edge/b/a", "rho/task/b", "rho/task/a", dependency_type="blocks"),
            edge("rho/edge/c/b", "rho/task/c", "rho/task/b", dependency_type="blocks"),
            {
                **edge("rho/edge/p/a", "rho/task/p", "rho/task/a", kind="contains"),
                "from": ref("rho/task/p", "knowledge"),
            },
        ],
        events=[event("rho/event/1", "rho/task/a"), event("rho/event/2", "rho/task/b")],
    )


def contract_case() -> dict[str, Any]:
    """The Go original's TestGraphSyncConformsToContract: a session and a tool of the Rho
    graph, under ``rho/``, and the edge between them."""
    session = node(
        "rho/session/s1",
        entity_type="session",
        MESSAGE_COUNT="12",
        sast_source="semgrep",
        Prompt_Tokens="300",
        provider="anthropic",
        model="m-1",
    )
    tool = node(
        "rho/tool/t1",
        entity_type="tool",
        tool_name="bash",
        command="make test",
        file_path="/home/a/x.py",
    )
    used = edge("rho/edge/session/s1/used/t1", "rho/session/s1", "rho/tool/t1", reason="broke")
    return document(nodes=[session, tool], edges=[used])
