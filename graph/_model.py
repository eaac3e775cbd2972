"""Pydantic models of the portable graph envelope ``rho.graph/v1``.

JSON keys are snake_case, except an edge's endpoints, which are ``from`` and
``to`` (aliases of ``source`` and ``target``: ``from`` is a Python keyword). Kinds and event types
are parsed trimmed and lowercased, so ``" Execution "`` reads as ``execution``. Timestamps stay
strings, so that a file read and written again keeps its bytes, but must be RFC 3339 date-times
(``T`` separator, an offset or ``Z``; a leap second ``:60`` is refused).
Attribute dicts are kept sorted by key: two documents that differ only in key order are equal.

Decision: docs/decisions/0201-portable-graph.md
"""

from __future__ import annotations

import functools
import re
from datetime import datetime
from typing import Annotated, Any, Literal, get_args

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field
from pydantic_core import PydanticCustomError

__all__ = [
    "EDGE_KINDS",
    "EVENT_TYPES",
    "NODE_KINDS",
    "SCHEMA_VERSION",
    "Edge",
    "EdgeKind",
    "Event",
    "EventType",
    "Evidence",
    "GraphDocument",
    "Node",
    "NodeKind",
    "Provenance",
    "Ref",
    "Scope",
    "document_data",
    "sort_facts",
]

SCHEMA_VERSION: Literal["rho.graph/v1"] = "rho.graph/v1"

NodeKind = Literal["system", "knowledge", "execution", "policy", "quality", "operations"]
EdgeKind = Literal[
    "contains", "depends_on", "references", "produced", "governed_by", "validated_by"
]
EventType = Literal["created", "updated", "transitioned", "observed", "deleted"]

NODE_KINDS: tuple[str, ...] = get_args(NodeKind)
EDGE_KINDS: tuple[str, ...] = get_args(EdgeKind)
EVENT_TYPES: tuple[str, ...] = get_args(EventType)

# RFC 3339 section 5.6 date-time; the calendar check is left to datetime.fromisoformat.
_RFC3339 = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})", re.ASCII
)


def _normalize_word(value: object) -> object:
    # Non-strings pass through so that the Literal check reports them as unknown.
    return value.strip().lower() if isinstance(value, str) else value


# A graph repeats its timestamps (every edge of a wave join carries the join's end): each
# distinct valid one is parsed once.
@functools.lru_cache(maxsize=4096)
def _check_timestamp(value: str) -> str:
    if _RFC3339.fullmatch(value) is not None:
        try:
            datetime.fromisoformat(value.upper())
        except ValueError:
            pass
        else:
            return value
    raise PydanticCustomError("rfc3339", "not an RFC 3339 timestamp")


def _check_not_blank(value: str) -> str:
    if not value.strip():
        raise PydanticCustomError("blank", "blank")
    return value


def _sorted_attributes(value: dict[str, str]) -> dict[str, str]:
    return dict(sorted(value.items()))


Timestamp = Annotated[str, AfterValidator(_check_timestamp)]
Identifier = Annotated[str, AfterValidator(_check_not_blank)]
Attributes = Annotated[dict[str, str], AfterValidator(_sorted_attributes)]
NodeKindField = Annotated[NodeKind, BeforeValidator(_normalize_word)]
EdgeKindField = Annotated[EdgeKind, BeforeValidator(_normalize_word)]
EventTypeField = Annotated[EventType, BeforeValidator(_normalize_word)]

# Assignments are checked too, so that a document changed after parsing stays well-formed.
_STRICT = ConfigDict(extra="forbid", validate_assignment=True)


class Scope(BaseModel):
    """Where a fact belongs; every part is optional, and ``tenant_id`` never leaves the machine."""

    model_config = _STRICT

    tenant_id: str | None = None
    project_id: str | None = None
    repository_id: str | None = None


class Evidence(BaseModel):
    """One piece of evidence behind a fact: a ``uri``, with an optional digest and media type."""

    model_config = _STRICT

    uri: Identifier
    digest: str | None = None
    media_type: str | None = None


class Provenance(BaseModel):
    """Who produced a fact: ``producer`` (required), its ``version``, a ``source_id``, evidence."""

    model_config = _STRICT

    producer: Identifier
    version: str | None = None
    source_id: str | None = None
    evidence: list[Evidence] = Field(default_factory=list)


class Ref(BaseModel):
    """A reference to a node by kind and id: ``{"kind": "execution", "id": "rho/mission/m"}``."""

    model_config = _STRICT

    kind: NodeKindField
    id: Identifier

    def __str__(self) -> str:
        return f"{self.kind}/{self.id}"


class Node(BaseModel):
    """A node: a thing the graph talks about (a task, a mission, a wave join, ...)."""

    model_config = _STRICT

    id: Identifier
    kind: NodeKindField
    scope: Scope = Field(default_factory=Scope)
    created_at: Timestamp
    effective_at: Timestamp
    provenance: Provenance
    attributes: Attributes = Field(default_factory=dict)

    @property
    def ref(self) -> Ref:
        """This node as a `Ref`, for edge endpoints and event subjects."""
        return Ref(kind=self.kind, id=self.id)


class Edge(BaseModel):
    """A directed edge ``from`` -> ``to`` between nodes (``source`` and ``target`` in Python)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, populate_by_name=True)

    id: Identifier
    kind: EdgeKindField
    source: Ref = Field(alias="from")
    target: Ref = Field(alias="to")
    scope: Scope = Field(default_factory=Scope)
    created_at: Timestamp
    effective_at: Timestamp
    provenance: Provenance
    attributes: Attributes = Field(default_factory=dict)


class Event(BaseModel):
    """Something that happened to a node (its ``subject``) at ``occurred_at``.

    ``correlation_id``, ``causation_id`` and ``idempotency_key`` may all be absent (a ``created``
    event has no cause; Rho itself sends events without an idempotency key). A key that is
    present must not be blank: it names a delivery, and a blank one would name every delivery.
    """

    model_config = _STRICT

    id: Identifier
    type: EventTypeField
    subject: Ref
    scope: Scope = Field(default_factory=Scope)
    occurred_at: Timestamp
    correlation_id: str | None = None
    causation_id: str | None = None
    idempotency_key: Identifier | None = None
    provenance: Provenance


class GraphDocument(BaseModel):
    """The ``rho.graph/v1`` envelope: version, generation time, scope, nodes, edges, events.

    Parsing checks the shape of every fact; `validate_graph` adds duplicate ids and references.
    """

    model_config = _STRICT

    schema_version: Literal["rho.graph/v1"]
    generated_at: Timestamp
    scope: Scope = Field(default_factory=Scope)
    nodes: list[Node] = Field(default_factory=list)
    edges: list[Edge] = Field(default_factory=list)
    events: list[Event] = Field(default_factory=list)

    @property
    def fact_count(self) -> int:
        """How many facts (nodes, edges and events) the document holds."""
        return len(self.nodes) + len(self.edges) + len(self.events)


def sort_facts(doc: GraphDocument) -> GraphDocument:
    """Return a copy of *doc* whose nodes, edges and events are sorted by id."""
    return doc.model_copy(
        update={
            "nodes": sorted(doc.nodes, key=_by_id),
            "edges": sorted(doc.edges, key=_by_id),
            "events": sorted(doc.events, key=_by_id),
        }
    )


def _by_id(fact: Node | Edge | Event) -> str:
    return fact.id


def document_data(doc: GraphDocument) -> dict[str, Any]:
    """Return *doc* as JSON data with rho.graph/v1's keys; absent optional values are omitted."""
    return doc.model_dump(mode="json", by_alias=True, exclude_none=True)
