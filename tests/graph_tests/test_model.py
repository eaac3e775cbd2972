"""Parsing of the ``rho.graph/v1`` models and the builders' helpers."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta, timezone

import pytest
from pydantic import ValidationError

from graph import (
    EDGE_KINDS,
    EVENT_TYPES,
    NODE_KINDS,
    Edge,
    Event,
    GraphBuilder,
    GraphDocument,
    GraphValidationError,
    Node,
    Ref,
    Scope,
    document_data,
    fact_text,
    format_timestamp,
    make_edge,
    make_event,
    make_node,
    sha256_hex,
    validate_graph,
)

from ._docs import T0, document, edge, event, node


def test_kinds_and_types_follow_design_section_4() -> None:
    assert NODE_KINDS == ("system", "knowledge", "execution", "policy", "quality", "operations")
    assert EDGE_KINDS == (
        "contains",
        "depends_on",
        "references",
        "produced",
        "governed_by",
        "validated_by",
    )
    assert EVENT_TYPES == ("created", "updated", "transitioned", "observed", "deleted")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(" Execution ", "execution"), ("SYSTEM", "system"), ("\tpolicy\n", "policy")],
)
def test_node_kind_is_trimmed_and_lowercased(raw: str, expected: str) -> None:
    assert Node.model_validate(node("n", kind=raw)).kind == expected


def test_edge_kind_ref_kind_and_event_type_are_trimmed_and_lowercased() -> None:
    raw_edge = {**edge("e", "a", "b", kind=" Depends_On "), "to": {"kind": " Quality", "id": "b"}}
    parsed = Edge.model_validate(raw_edge)
    assert (parsed.kind, parsed.target.kind) == ("depends_on", "quality")
    assert Event.model_validate(event("v", "a", event_type="OBSERVED ")).type == "observed"


def test_edge_endpoints_are_from_and_to_in_json() -> None:
    parsed = Edge.model_validate(edge("e", "a", "b"))
    assert (parsed.source.id, parsed.target.id) == ("a", "b")
    dumped = parsed.model_dump(mode="json", by_alias=True)
    assert list(dumped) == [
        "id",
        "kind",
        "from",
        "to",
        "scope",
        "created_at",
        "effective_at",
        "provenance",
        "attributes",
    ]


def test_document_data_omits_absent_optional_values_and_sorts_attributes() -> None:
    raw = document(nodes=[node("a", zeta="1", alpha="2")])
    data = document_data(GraphDocument.model_validate(raw))
    assert data["nodes"][0]["attributes"] == {"alpha": "2", "zeta": "1"}
    assert list(data["nodes"][0]["attributes"]) == ["alpha", "zeta"]
    assert data["nodes"][0]["provenance"] == {"producer": "rho-mission", "evidence": []}
    assert data["scope"] == {"project_id": "proj"}


@pytest.mark.parametrize(
    "stamp",
    ["2024-05-01T12:00:00Z", "2024-05-01t12:00:00z", "2024-05-01T12:00:00.123456+02:00"],
)
def test_rfc3339_timestamps_are_accepted_and_kept_as_written(stamp: str) -> None:
    raw = {**node("a"), "created_at": stamp}
    assert Node.model_validate(raw).created_at == stamp


@pytest.mark.parametrize(
    "stamp", ["2024-05-01", "2024-05-01T12:00:00", "2024-02-30T12:00:00Z", "yesterday", ""]
)
def test_timestamps_outside_rfc3339_are_refused(stamp: str) -> None:
    raw = document(nodes=[{**node("a"), "created_at": stamp}])
    message = f'node "a" field "created_at" is not an RFC 3339 timestamp: {json.dumps(stamp)}'
    with pytest.raises(ValueError, match=rf"^{re.escape(message)}$"):
        validate_graph(raw)


def test_attribute_values_must_be_strings() -> None:
    with pytest.raises(ValidationError):
        Node.model_validate({**node("a"), "attributes": {"count": 3}})


def test_sha256_hex_is_the_utf8_digest() -> None:
    assert sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert sha256_hex("é") == sha256_hex("\u00e9")
    assert len(sha256_hex("prompt")) == 64


def test_format_timestamp_is_utc_with_z() -> None:
    moment = datetime(2024, 5, 1, 14, 0, tzinfo=timezone(timedelta(hours=2)))
    assert format_timestamp(moment) == "2024-05-01T12:00:00Z"
    precise = datetime(2024, 5, 1, 12, 0, 0, 1500, tzinfo=UTC)
    assert format_timestamp(precise) == "2024-05-01T12:00:00.001500Z"


def test_format_timestamp_refuses_a_naive_datetime() -> None:
    with pytest.raises(ValueError, match=r"^timestamp 2024-05-01T12:00:00 has no time zone$"):
        format_timestamp(datetime(2024, 5, 1, 12))


def test_make_node_converts_values_and_marks_metadata_only() -> None:
    made = make_node("rho/task/1", "Execution", {"count": 3, "ok": True}, created_at=T0)
    assert made.attributes == {"count": "3", "data_classification": "metadata_only", "ok": "true"}
    assert (made.kind, made.effective_at, made.provenance.producer) == (
        "execution",
        T0,
        "rho-mission",
    )


def test_make_node_keeps_an_explicit_classification_or_none() -> None:
    explicit = make_node("a", "system", {"data_classification": "public"}, created_at=T0)
    assert explicit.attributes == {"data_classification": "public"}
    assert make_node("a", "system", {}, created_at=T0, classification=None).attributes == {}


def test_make_edge_and_event_take_nodes_or_refs() -> None:
    a = make_node("a", "execution", {}, created_at=T0)
    made = make_edge("e", "contains", a, Ref(kind="policy", id="b"), created_at=T0)
    assert (str(made.source), str(made.target)) == ("execution/a", "policy/b")
    happened = make_event("v", "created", a, occurred_at=T0)
    assert (happened.subject, happened.idempotency_key) == (a.ref, "v")


def test_builder_returns_a_sorted_valid_document_with_its_scope() -> None:
    builder = GraphBuilder(generated_at=T0, scope=Scope(project_id="p"), version="1.0")
    z = builder.node("z", "execution", {}, created_at=T0)
    a = builder.node("a", "execution", {}, created_at=T0)
    builder.edge("e2", "depends_on", z, a, created_at=T0)
    builder.edge("e1", "references", a, z, created_at=T0)
    builder.event("v", "created", a, occurred_at=T0)
    doc = builder.build()
    assert [n.id for n in doc.nodes] == ["a", "z"]
    assert [e.id for e in doc.edges] == ["e1", "e2"]
    assert {n.scope.project_id for n in doc.nodes} == {"p"}
    assert doc.events[0].provenance.version == "1.0"
    assert doc.fact_count == 5


def test_builder_refuses_an_edge_to_a_node_never_added() -> None:
    builder = GraphBuilder(generated_at=T0)
    a = builder.node("a", "execution", {}, created_at=T0)
    builder.edge("e", "contains", a, Ref(kind="execution", id="ghost"), created_at=T0)
    message = 'edge "e" references missing target execution/ghost'
    with pytest.raises(ValueError, match=rf"^{re.escape(message)}$"):
        builder.build()


def test_builder_helpers_report_bad_input_as_graph_validation_errors() -> None:
    message = 'node "rho/task/1" field "created_at" is not an RFC 3339 timestamp: "last week"'
    with pytest.raises(GraphValidationError, match=rf"^{re.escape(message)}$"):
        make_node("rho/task/1", "execution", {}, created_at="last week")
    message = f'edge "e" has unknown kind "blocks"; expected one of {", ".join(EDGE_KINDS)}'
    a = Ref(kind="execution", id="a")
    with pytest.raises(GraphValidationError, match=rf"^{re.escape(message)}$"):
        make_edge("e", "blocks", a, a, created_at=T0)
    with pytest.raises(GraphValidationError, match=r'^event has blank field "id"$'):
        make_event(" ", "created", a, occurred_at=T0)


def test_assignments_are_validated() -> None:
    made = make_node("a", "execution", {}, created_at=T0)
    with pytest.raises(ValidationError):
        made.kind = "robot"  # type: ignore[assignment]
    made.kind = "policy"
    assert made.ref == Ref(kind="policy", id="a")


def test_an_edge_like_another_is_the_edge_the_builder_would_make() -> None:
    scope = Scope(repository_id="repo")
    builder = GraphBuilder(generated_at="2026-11-30T09:00:00Z", scope=scope)
    wave = Ref(kind="operations", id="rho/mission-wave/m/1")
    first, second = (Ref(kind="execution", id=f"rho/mission-feature/m/f{n}") for n in (1, 2))
    template = builder.edge(
        "rho/e/1", "contains", wave, first, created_at="2026-11-30T09:05:00.250Z"
    )
    like = builder.edge_like(template, "rho/e/2", second)
    made = GraphBuilder(generated_at="2026-11-30T09:00:00Z", scope=scope).edge(
        "rho/e/2", "contains", wave, second, created_at="2026-11-30T09:05:00.250Z"
    )
    assert like == made
    assert fact_text(like) == fact_text(made)
    assert builder.edges == [template, like]
    assert template.id == "rho/e/1"  # the template is left as it was
    assert template.target == first


def test_an_edge_like_another_with_a_blank_id_is_refused_as_an_edge_is() -> None:
    builder = GraphBuilder(generated_at="2026-11-30T09:00:00Z")
    wave = Ref(kind="operations", id="rho/mission-wave/m/1")
    target = Ref(kind="execution", id="rho/mission-feature/m/f1")
    template = builder.edge("rho/e/1", "contains", wave, target, created_at="2026-11-30T09:05:00Z")
    with pytest.raises(GraphValidationError) as refused:
        builder.edge_like(template, "  ", target)
    with pytest.raises(GraphValidationError) as expected:
        builder.edge("  ", "contains", wave, target, created_at="2026-11-30T09:05:00Z")
    assert str(refused.value) == str(expected.value)
    assert builder.edges == [template]
