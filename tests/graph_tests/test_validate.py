"""Validation: every message pinned, each naming the first problem and the fact it belongs to."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import pytest

from graph import (
    GraphDocument,
    GraphError,
    GraphReferenceError,
    GraphSchemaVersionError,
    GraphValidationError,
    document_data,
    validate_graph,
)

from ._docs import document, edge, event, node, ref, sample

Doc = dict[str, Any]
KINDS = "system, knowledge, execution, policy, quality, operations"
EDGE_KINDS = "contains, depends_on, references, produced, governed_by, validated_by"
TYPES = "created, updated, transitioned, observed, deleted"


def _set(path: tuple[str | int, ...], value: object) -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        target: Any = doc
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value

    return change


def _drop(path: tuple[str | int, ...]) -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        target: Any = doc
        for part in path[:-1]:
            target = target[part]
        del target[path[-1]]

    return change


def _append(key: str, fact: dict[str, Any]) -> Callable[[Doc], None]:
    return lambda doc: doc[key].append(fact)


CASES: list[tuple[str, Callable[[Doc], None], str]] = [
    ("no-generated-at", _drop(("generated_at",)), 'graph is missing required field "generated_at"'),
    (
        "no-schema-version",
        _drop(("schema_version",)),
        'graph is missing required field "schema_version"',
    ),
    ("unknown-envelope-key", _set(("extra",), 1), 'graph has unknown field "extra"'),
    (
        "unknown-scope-key",
        _set(("scope", "team"), "x"),
        'graph has unknown field "scope.team"',
    ),
    (
        "nodes-not-a-list",
        _set(("nodes",), {}),
        'graph field "nodes" is invalid: input should be a valid list',
    ),
    (
        "node-not-an-object",
        _set(("nodes", 1), "rho/task/b"),
        "node at index 1 must be a JSON object, not string",
    ),
    ("node-no-id", _drop(("nodes", 0, "id")), 'node at index 0 is missing required field "id"'),
    ("node-blank-id", _set(("nodes", 0, "id"), "  "), 'node at index 0 has blank field "id"'),
    (
        "node-unknown-kind",
        _set(("nodes", 1, "kind"), " Robot "),
        f'node "rho/task/b" has unknown kind "robot"; expected one of {KINDS}',
    ),
    (
        "node-kind-not-a-string",
        _set(("nodes", 1, "kind"), 7),
        f'node "rho/task/b" has unknown kind 7; expected one of {KINDS}',
    ),
    (
        "node-no-created-at",
        _drop(("nodes", 2, "created_at")),
        'node "rho/task/c" is missing required field "created_at"',
    ),
    (
        "node-no-producer",
        _set(("nodes", 0, "provenance"), {}),
        'node "rho/task/a" is missing required field "provenance.producer"',
    ),
    (
        "node-unknown-key",
        _set(("nodes", 0, "labels"), []),
        'node "rho/task/a" has unknown field "labels"',
    ),
    (
        "node-attribute-not-string",
        _set(("nodes", 0, "attributes", "count"), 3),
        'node "rho/task/a" field "attributes.count" is invalid: input should be a valid string',
    ),
    (
        "evidence-no-uri",
        _set(("nodes", 0, "provenance", "evidence"), [{"digest": "d"}]),
        'node "rho/task/a" is missing required field "provenance.evidence.0.uri"',
    ),
    (
        "edge-unknown-kind",
        _set(("edges", 0, "kind"), "blocks"),
        f'edge "rho/edge/b/a" has unknown kind "blocks"; expected one of {EDGE_KINDS}',
    ),
    (
        "edge-unknown-ref-kind",
        _set(("edges", 0, "from", "kind"), "task"),
        f'edge "rho/edge/b/a" has unknown kind "task" in field "from"; expected one of {KINDS}',
    ),
    (
        "edge-no-to",
        _drop(("edges", 1, "to")),
        'edge "rho/edge/c/b" is missing required field "to"',
    ),
    (
        "edge-bad-effective-at",
        _set(("edges", 1, "effective_at"), "soon"),
        'edge "rho/edge/c/b" field "effective_at" is not an RFC 3339 timestamp: "soon"',
    ),
    (
        "event-unknown-type",
        _set(("events", 0, "type"), "Exploded"),
        f'event "rho/event/1" has unknown type "exploded"; expected one of {TYPES}',
    ),
    (
        "event-unknown-subject-kind",
        _set(("events", 0, "subject", "kind"), "task"),
        f'event "rho/event/1" has unknown kind "task" in field "subject"; expected one of {KINDS}',
    ),
    (
        "event-blank-idempotency-key",
        _set(("events", 1, "idempotency_key"), " "),
        'event "rho/event/2" has blank field "idempotency_key"',
    ),
    (
        "duplicate-node",
        _append("nodes", node("rho/task/a", kind="policy")),
        'node "rho/task/a" is defined more than once',
    ),
    (
        "duplicate-edge",
        _append("edges", edge("rho/edge/b/a", "rho/task/c", "rho/task/a")),
        'edge "rho/edge/b/a" is defined more than once',
    ),
    (
        "duplicate-event",
        _append("events", event("rho/event/1", "rho/task/c")),
        'event "rho/event/1" is defined more than once',
    ),
    (
        "missing-source",
        _set(("edges", 0, "from"), ref("rho/task/x")),
        'edge "rho/edge/b/a" references missing source execution/rho/task/x',
    ),
    (
        "missing-target",
        _set(("edges", 1, "to"), ref("rho/task/x")),
        'edge "rho/edge/c/b" references missing target execution/rho/task/x',
    ),
    (
        "target-of-another-kind",
        _set(("edges", 1, "to"), ref("rho/task/b", "quality")),
        'edge "rho/edge/c/b" references missing target quality/rho/task/b',
    ),
    (
        "missing-subject",
        _set(("events", 1, "subject"), ref("rho/task/gone")),
        'event "rho/event/2" references missing subject execution/rho/task/gone',
    ),
]


@pytest.mark.parametrize(
    ("change", "message"), [(c, m) for _, c, m in CASES], ids=[name for name, _, _ in CASES]
)
def test_validation_reports_the_first_problem_naming_its_fact(
    change: Callable[[Doc], None], message: str
) -> None:
    doc = sample()
    change(doc)
    with pytest.raises(GraphValidationError, match=rf"^{re.escape(message)}$"):
        validate_graph(doc)


def test_the_sample_is_valid() -> None:
    assert isinstance(validate_graph(sample()), GraphDocument)


@pytest.mark.parametrize("field", ["idempotency_key", "correlation_id", "causation_id"])
def test_an_event_without_an_optional_id_validates_and_stays_without_it(field: str) -> None:
    # Rho's own contract test sends an event without an idempotency key.
    doc = sample()
    for event_data in doc["events"]:
        event_data.pop(field, None)
    graph = validate_graph(doc)
    assert [getattr(e, field) for e in graph.events] == [None, None]
    assert all(field not in e for e in document_data(graph)["events"])


@pytest.mark.parametrize(
    ("version", "shown"), [("rho.graph/v2", '"rho.graph/v2"'), (1, "1"), (None, "null")]
)
def test_unsupported_schema_version_is_named(version: object, shown: str) -> None:
    doc = {**sample(), "schema_version": version}
    message = f'unsupported graph schema version {shown}; expected "rho.graph/v1"'
    with pytest.raises(GraphSchemaVersionError, match=rf"^{re.escape(message)}$") as caught:
        validate_graph(doc)
    assert caught.value.version == version


def test_a_document_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(
        GraphValidationError, match=r"^graph document must be a JSON object, not array$"
    ):
        validate_graph([])  # type: ignore[arg-type]


def test_the_first_problem_wins_in_document_order() -> None:
    doc = sample()
    doc["nodes"][3]["kind"] = "robot"
    doc["edges"][0]["to"] = ref("rho/task/x")
    with pytest.raises(GraphValidationError, match=r'^node "rho/task/p" has unknown kind'):
        validate_graph(doc)


def test_errors_carry_the_fact_and_its_id() -> None:
    doc = sample()
    doc["events"][0]["subject"] = ref("rho/task/z", "policy")
    with pytest.raises(GraphReferenceError) as caught:
        validate_graph(doc)
    error = caught.value
    assert (error.fact, error.fact_id, error.role) == ("event", "rho/event/1", "subject")
    assert (error.ref_kind, error.ref_id) == ("policy", "rho/task/z")
    assert isinstance(error, GraphError)
    assert isinstance(error, ValueError)
    assert error.exit_code == 2


def test_a_built_document_is_checked_for_references_too() -> None:
    doc = GraphDocument.model_validate(document(nodes=[node("a")], edges=[edge("e", "a", "b")]))
    with pytest.raises(
        GraphReferenceError, match=r'^edge "e" references missing target execution/b$'
    ):
        validate_graph(doc)


def test_validation_does_not_change_its_input() -> None:
    doc = sample()
    before = copy.deepcopy(doc)
    validate_graph(doc)
    assert doc == before
