"""Helpers for the projections that build graphs (task store, mission): facts in one call each.

The projections themselves live with their owners (``rho_mission``); this module gives them the
pieces: ``make_node``/``make_edge``/``make_event`` with the defaults of rho.graph/v1 (provenance
producer ``rho-mission``, ``effective_at`` = ``created_at``, ``data_classification`` =
``metadata_only`` on nodes), `sha256_hex` for ``*_sha256`` digests, `format_timestamp`, and a
`GraphBuilder` that collects facts and returns a validated, sorted `GraphDocument`.

Decision: docs/decisions/0201-portable-graph.md
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TypedDict

from ._model import (
    SCHEMA_VERSION,
    Edge,
    Event,
    GraphDocument,
    Node,
    Provenance,
    Ref,
    Scope,
    sort_facts,
)
from ._validate import parse_fact, validate_graph

__all__ = [
    "DEFAULT_PRODUCER",
    "AttributeValue",
    "GraphBuilder",
    "format_timestamp",
    "make_edge",
    "make_event",
    "make_node",
    "sha256_hex",
]

DEFAULT_PRODUCER = "rho-mission"
METADATA_ONLY = "metadata_only"

AttributeValue = str | int | bool


class _Common(TypedDict):
    producer: str
    version: str | None
    scope: Scope


def sha256_hex(text: str) -> str:
    """Return the SHA-256 of *text* (UTF-8) as 64 lowercase hex digits: a ``*_sha256`` value."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def format_timestamp(moment: datetime) -> str:
    """Return *moment* as an RFC 3339 UTC timestamp (``2024-05-01T12:00:00Z``; microseconds kept).

    Raises:
        ValueError: *moment* is naive (no time zone), so its instant is unknown.
    """
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"timestamp {moment.isoformat()} has no time zone")
    utc = moment.astimezone(UTC)
    text = utc.strftime("%Y-%m-%dT%H:%M:%S")
    return f"{text}.{utc.microsecond:06d}Z" if utc.microsecond else f"{text}Z"


def _attributes(values: Mapping[str, AttributeValue]) -> dict[str, str]:
    # Counts and flags come in as int/bool; the contract stores strings only.
    return {key: _attribute_text(value) for key, value in values.items()}


def _attribute_text(value: AttributeValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@functools.lru_cache(maxsize=256)
def _provenance(producer: str, version: str | None, source_id: str | None) -> Provenance:
    # Shared between facts: a projection of 1,000 features makes thousands of identical ones,
    # and facts are never mutated after they are built.
    return Provenance(producer=producer, version=version, source_id=source_id)


def _ref(value: Ref | Node) -> Ref:
    return value.ref if isinstance(value, Node) else value


def make_node(
    id: str,
    kind: str,
    attributes: Mapping[str, AttributeValue],
    *,
    created_at: str,
    effective_at: str | None = None,
    producer: str = DEFAULT_PRODUCER,
    version: str | None = None,
    source_id: str | None = None,
    scope: Scope | None = None,
    classification: str | None = METADATA_ONLY,
) -> Node:
    """Build a node; ints and bools in *attributes* become strings.

    ``effective_at`` defaults to ``created_at``. Unless *classification* is None or the
    attributes already carry one, ``data_classification`` is set to *classification*.

    Raises:
        GraphValidationError: an unknown kind, a blank id, or a timestamp not in RFC 3339.
    """
    values = _attributes(attributes)
    if classification is not None:
        values.setdefault("data_classification", classification)
    return parse_fact(
        Node,
        "node",
        {
            "id": id,
            "kind": kind,
            "scope": scope or Scope(),
            "created_at": created_at,
            "effective_at": effective_at or created_at,
            "provenance": _provenance(producer, version, source_id),
            "attributes": values,
        },
    )


def make_edge(
    id: str,
    kind: str,
    source: Ref | Node,
    target: Ref | Node,
    *,
    created_at: str,
    attributes: Mapping[str, AttributeValue] | None = None,
    effective_at: str | None = None,
    producer: str = DEFAULT_PRODUCER,
    version: str | None = None,
    source_id: str | None = None,
    scope: Scope | None = None,
) -> Edge:
    """Build an edge ``source -> target``; endpoints may be given as nodes or refs.

    Raises:
        GraphValidationError: an unknown kind, a blank id, or a timestamp not in RFC 3339.
    """
    return parse_fact(
        Edge,
        "edge",
        {
            "id": id,
            "kind": kind,
            "from": _ref(source),
            "to": _ref(target),
            "scope": scope or Scope(),
            "created_at": created_at,
            "effective_at": effective_at or created_at,
            "provenance": _provenance(producer, version, source_id),
            "attributes": _attributes(attributes or {}),
        },
    )


def make_event(
    id: str,
    type: str,
    subject: Ref | Node,
    *,
    occurred_at: str,
    correlation_id: str | None = None,
    causation_id: str | None = None,
    idempotency_key: str | None = None,
    producer: str = DEFAULT_PRODUCER,
    version: str | None = None,
    source_id: str | None = None,
    scope: Scope | None = None,
) -> Event:
    """Build an event about *subject*; ``idempotency_key`` defaults to the event id.

    Raises:
        GraphValidationError: an unknown type, a blank id, or a timestamp not in RFC 3339.
    """
    return parse_fact(
        Event,
        "event",
        {
            "id": id,
            "type": type,
            "subject": _ref(subject),
            "scope": scope or Scope(),
            "occurred_at": occurred_at,
            "correlation_id": correlation_id,
            "causation_id": causation_id,
            "idempotency_key": idempotency_key or id,
            "provenance": _provenance(producer, version, source_id),
        },
    )


class GraphBuilder:
    """Collect nodes, edges and events, then `build` a validated document sorted by id.

    The builder's *scope*, *producer* and *version* apply to every fact it makes, so a
    projection writes one line per fact::

        builder = GraphBuilder(generated_at=now, scope=Scope(project_id="p"))
        task = builder.node("rho/task/1", "execution", {"status": "open"}, created_at=now)
        builder.event("rho/event/1", "created", task, occurred_at=now)
        doc = builder.build()

    ``generated_at`` is part of the snapshot (and of the cloud sync id): derive it from the
    data, not from the clock, when a repeated export of unchanged data must give the same bytes.
    """

    def __init__(
        self,
        *,
        generated_at: str,
        scope: Scope | None = None,
        producer: str = DEFAULT_PRODUCER,
        version: str | None = None,
    ) -> None:
        self.generated_at = generated_at
        self.scope = scope or Scope()
        self.producer = producer
        self.version = version
        self.nodes: list[Node] = []
        self.edges: list[Edge] = []
        self.events: list[Event] = []

    def node(
        self,
        id: str,
        kind: str,
        attributes: Mapping[str, AttributeValue],
        *,
        created_at: str,
        effective_at: str | None = None,
        source_id: str | None = None,
    ) -> Node:
        """Add a node (see `make_node`) and return it, to be used as an edge endpoint."""
        node = make_node(
            id,
            kind,
            attributes,
            created_at=created_at,
            effective_at=effective_at,
            source_id=source_id,
            **self._common(),
        )
        self.nodes.append(node)
        return node

    def edge(
        self,
        id: str,
        kind: str,
        source: Ref | Node,
        target: Ref | Node,
        *,
        created_at: str,
        attributes: Mapping[str, AttributeValue] | None = None,
        effective_at: str | None = None,
    ) -> Edge:
        """Add an edge ``source -> target`` (see `make_edge`) and return it."""
        edge = make_edge(
            id,
            kind,
            source,
            target,
            created_at=created_at,
            attributes=attributes,
            effective_at=effective_at,
            **self._common(),
        )
        self.edges.append(edge)
        return edge

    def edge_like(self, template: Edge, id: str, target: Ref | Node) -> Edge:
        """Add an edge equal to *template* (an edge made by `edge`) but for its *id* and
        *target*, and return it.

        For the many edges from one node (a wave join's to its features): only the id (not
        blank) and the target (a ref, checked when it was made) are new, the rest was checked
        with *template*, so the edge is built without checking it all again.

        Raises:
            GraphValidationError: a blank id (as `edge` raises it).
        """
        if not id.strip():
            created = template.created_at
            return self.edge(id, template.kind, template.source, target, created_at=created)
        edge = template.model_copy(update={"id": id, "target": _ref(target)})
        self.edges.append(edge)
        return edge

    def event(
        self,
        id: str,
        type: str,
        subject: Ref | Node,
        *,
        occurred_at: str,
        correlation_id: str | None = None,
        causation_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> Event:
        """Add an event about *subject* (see `make_event`) and return it."""
        event = make_event(
            id,
            type,
            subject,
            occurred_at=occurred_at,
            correlation_id=correlation_id,
            causation_id=causation_id,
            idempotency_key=idempotency_key,
            **self._common(),
        )
        self.events.append(event)
        return event

    def build(self) -> GraphDocument:
        """Return the collected facts as a document sorted by id.

        Raises:
            GraphValidationError: an id used twice, or a reference to a node never added.
        """
        doc = GraphDocument(
            schema_version=SCHEMA_VERSION,
            generated_at=self.generated_at,
            scope=self.scope,
            nodes=list(self.nodes),
            edges=list(self.edges),
            events=list(self.events),
        )
        return sort_facts(validate_graph(doc))

    def _common(self) -> _Common:
        return {"producer": self.producer, "version": self.version, "scope": self.scope}
