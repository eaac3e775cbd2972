"""Validation of a ``rho.graph/v1`` document: shape, unique ids, resolvable references.

The checks run in this order and the first failure is the answer: the envelope and every fact
parse (required fields, known kinds, RFC 3339 timestamps, no unknown keys: pydantic's order,
which is the document's order), then node ids are unique, then each edge in document order has a
unique id, a source and a target that name a node of that kind and id, then each event has a
unique id and a subject that names a node. Pydantic's errors are translated here, in one place,
into `GraphValidationError` messages that name the fact (``node "ID"`` or ``node at index N``).

Decision: docs/decisions/0201-portable-graph.md
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from ._errors import (
    GraphReferenceError,
    GraphSchemaVersionError,
    GraphValidationError,
    fact_label,
    quote,
)
from ._model import (
    EDGE_KINDS,
    EVENT_TYPES,
    NODE_KINDS,
    SCHEMA_VERSION,
    Edge,
    Event,
    GraphDocument,
    Node,
    Ref,
)

__all__ = ["parse_fact", "parse_graph", "validate_graph"]

FactT = TypeVar("FactT", Node, Edge, Event)

_FACTS = {"nodes": "node", "edges": "edge", "events": "event"}
_KNOWN_WORDS = {"node": NODE_KINDS, "edge": EDGE_KINDS, "event": EVENT_TYPES}


def validate_graph(doc: GraphDocument | Mapping[str, Any]) -> GraphDocument:
    """Check *doc* against the ``rho.graph/v1`` contract and return it as a `GraphDocument`.

    *doc* may be JSON data (a mapping, e.g. from ``json.loads``) or a `GraphDocument`. The
    first problem is reported, naming the fact it belongs to, e.g.
    ``edge "e1" references missing target execution/rho/task/7``. A `GraphDocument` had its
    shape checked when it was built (and on every assignment), so only its ids and references
    are checked here.

    Raises:
        GraphSchemaVersionError: ``schema_version`` is not ``rho.graph/v1``.
        GraphReferenceError: an edge endpoint or event subject names no node of that kind and id.
        GraphValidationError: a missing field, an unknown kind or key, a bad timestamp, a blank
            id, or an id used by two facts of the same list.
    """
    graph = doc if isinstance(doc, GraphDocument) else parse_graph(doc)
    _check_references(graph)
    return graph


def parse_graph(data: object) -> GraphDocument:
    """Parse JSON data into a `GraphDocument`, translating the first pydantic error.

    Raises:
        GraphValidationError: the data does not have the shape of a ``rho.graph/v1`` document.
    """
    if not isinstance(data, Mapping):
        raise GraphValidationError(
            f"graph document must be a JSON object, not {_json_type(data)}", fact="graph"
        )
    try:
        return GraphDocument.model_validate(data)
    except ValidationError as exc:
        raise _translate(exc.errors()[0], data) from None


def parse_fact(model: type[FactT], fact: str, data: Mapping[str, Any]) -> FactT:
    """Parse one fact (*model* is `Node`, `Edge` or `Event`), translating the first error.

    Raises:
        GraphValidationError: *data* does not have the shape of that fact; the message names
            it, e.g. ``node "rho/task/1" field "created_at" is not an RFC 3339 timestamp: ""``.
    """
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        fact_id = _usable_id(data)
        message = _describe(error, fact, fact_label(fact, fact_id), error["loc"])
        raise GraphValidationError(message, fact=fact, fact_id=fact_id) from None


def _check_references(graph: GraphDocument) -> None:
    nodes: set[tuple[str, str]] = set()
    seen: set[str] = set()
    for node in graph.nodes:
        # Node ids are unique whatever their kind: lists are sorted by id, and an id names one node.
        _claim("node", node.id, seen)
        nodes.add((node.kind, node.id))
    seen = set()
    for edge in graph.edges:
        _claim("edge", edge.id, seen)
        _resolve("edge", edge.id, "source", edge.source, nodes)
        _resolve("edge", edge.id, "target", edge.target, nodes)
    seen = set()
    for event in graph.events:
        _claim("event", event.id, seen)
        _resolve("event", event.id, "subject", event.subject, nodes)


def _claim(fact: str, fact_id: str, seen: set[str]) -> None:
    if fact_id in seen:
        raise GraphValidationError(
            f"{fact_label(fact, fact_id)} is defined more than once", fact=fact, fact_id=fact_id
        )
    seen.add(fact_id)


def _resolve(fact: str, fact_id: str, role: str, ref: Ref, nodes: set[tuple[str, str]]) -> None:
    if (ref.kind, ref.id) not in nodes:
        raise GraphReferenceError(fact, fact_id, role, ref.kind, ref.id)


def _translate(error: ErrorDetails, data: Mapping[str, Any]) -> GraphValidationError:
    loc = error["loc"]
    fact, fact_id, index, rest = _locate(loc, data)
    if fact == "graph" and rest == ("schema_version",) and error["type"] == "literal_error":
        return GraphSchemaVersionError(error["input"], SCHEMA_VERSION)
    message = _describe(error, fact, fact_label(fact, fact_id, index), rest)
    return GraphValidationError(message, fact=fact, fact_id=fact_id)


def _locate(
    loc: tuple[int | str, ...], data: Mapping[str, Any]
) -> tuple[str, str | None, int | None, tuple[int | str, ...]]:
    """Split an error location into (fact, fact id, index, location inside the fact)."""
    if len(loc) >= 2 and loc[0] in _FACTS and isinstance(loc[1], int):
        items = data.get(str(loc[0]))
        item = items[loc[1]] if isinstance(items, Sequence) else None
        return _FACTS[str(loc[0])], _usable_id(item), loc[1], loc[2:]
    return "graph", None, None, loc


def _usable_id(item: object) -> str | None:
    raw_id = item.get("id") if isinstance(item, Mapping) else None
    return raw_id if isinstance(raw_id, str) and raw_id.strip() else None


def _describe(error: ErrorDetails, fact: str, label: str, rest: tuple[int | str, ...]) -> str:
    kind = error["type"]
    field = ".".join(str(part) for part in rest)
    if not rest:
        if kind in {"model_type", "dict_type"}:
            return f"{label} must be a JSON object, not {_json_type(error['input'])}"
        return f"{label} is invalid: {_lower_first(error['msg'])}"
    if kind == "missing":
        return f"{label} is missing required field {quote(field)}"
    if kind == "extra_forbidden":
        return f"{label} has unknown field {quote(field)}"
    if kind == "blank":
        return f"{label} has blank field {quote(field)}"
    if kind == "rfc3339":
        return f"{label} field {quote(field)} is not an RFC 3339 timestamp: {quote(error['input'])}"
    if kind == "literal_error" and rest[-1] in {"kind", "type"} and fact in _KNOWN_WORDS:
        return _unknown_word(error, fact, label, rest)
    return f"{label} field {quote(field)} is invalid: {_lower_first(error['msg'])}"


def _unknown_word(error: ErrorDetails, fact: str, label: str, rest: tuple[int | str, ...]) -> str:
    word = str(rest[-1])
    if len(rest) > 1:  # the kind of a reference (``from``, ``to``, ``subject``) is a node kind
        known, where = NODE_KINDS, f" in field {quote(str(rest[0]))}"
    else:
        known, where = _KNOWN_WORDS[fact], ""
    value = quote(error["input"])
    return f"{label} has unknown {word} {value}{where}; expected one of {', '.join(known)}"


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


def _json_type(value: object) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    for python_type, name in names.items():
        if isinstance(value, python_type):
            return name
    return "number" if isinstance(value, int | float) else type(value).__name__
