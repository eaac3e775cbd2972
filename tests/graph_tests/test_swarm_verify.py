"""`verify_swarm_task_graph`: the shared fixtures, then one signed vector for every check."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from graph.swarm import SwarmGraphRejected, SwarmKeyError, failure_code, verify_swarm_task_graph

from ._swarm_vectors import (
    NOW,
    OTHER_KEY,
    SCOPE,
    TRUSTED,
    VALID_SHA256,
    base,
    chain,
    edge,
    fixture,
    node,
    seal,
)

Mutation = Callable[[dict[str, Any]], None]


def _rejection(doc: dict[str, Any], keys: list[str] | None = None) -> SwarmGraphRejected:
    with pytest.raises(SwarmGraphRejected) as caught:
        verify_swarm_task_graph(doc, [TRUSTED] if keys is None else keys, NOW)
    return caught.value


@pytest.mark.parametrize(
    ("name", "reason", "code"),
    [
        (
            "graph-cycle",
            "swarm task graph cycle at task-child-a",
            "proof-room.negative.swarm-task-graph-cycle-at-task-child-a",
        ),
        (
            "max-depth-exceeded",
            "swarm task exceeds max depth: task-child-a",
            "proof-room.negative.swarm-task-exceeds-max-depth",
        ),
    ],
)
def test_the_shared_negative_fixtures_fail_with_their_message_and_code(
    name: str, reason: str, code: str
) -> None:
    rejected = _rejection(fixture(name))
    assert (rejected.reason, rejected.code, str(rejected)) == (reason, code, reason)


def test_the_shared_valid_fixture_is_accepted_with_its_graph_sha256() -> None:
    assert verify_swarm_task_graph(fixture("valid-recursive-delegation"), [TRUSTED], NOW) == (
        VALID_SHA256
    )


def test_the_fixture_expires_at_its_expiry_and_not_a_millisecond_before() -> None:
    doc = fixture("valid-recursive-delegation")
    assert verify_swarm_task_graph(doc, [TRUSTED], 1_800_000_060_999) == VALID_SHA256
    with pytest.raises(SwarmGraphRejected, match=r"^swarm task graph is expired$"):
        verify_swarm_task_graph(doc, [TRUSTED], 1_800_000_061_000)


def test_a_graph_verifies_against_any_one_of_several_trusted_keys() -> None:
    other = OTHER_KEY.public_key().public_bytes_raw().hex()
    assert verify_swarm_task_graph(base(), [other, TRUSTED.upper()], NOW)


def _set(**fields: Any) -> Mutation:
    return lambda doc: doc.update(fields)


def _node(index: int, **fields: Any) -> Mutation:
    return lambda doc: doc["nodes"][index].update(fields)


def _edge(index: int, **fields: Any) -> Mutation:
    return lambda doc: doc["edges"][index].update(fields)


def _join(**fields: Any) -> Mutation:
    return lambda doc: doc["joins"][0].update(fields)


def _drop(key: str) -> Mutation:
    return lambda doc: doc.pop(key)


def _append(key: str, value: dict[str, Any] | str) -> Mutation:
    return lambda doc: doc[key].append(value)


# Every check of the swarm contract in its order, each by a graph that is re-signed after the
# change, so that the structural check (not the signature) is what must refuse it.
STRUCTURE: list[tuple[str, Mutation, str]] = [
    ("unknown key", _set(extra=1), "swarm task graph schema invalid: extra: extra inputs are"),
    ("missing key", _drop("joins"), "swarm task graph schema invalid: joins: field required"),
    ("snake_case key", _set(graph_id="g"), "swarm task graph schema invalid: graph_id: extra"),
    ("unknown node key", _node(1, note="x"), "swarm task graph schema invalid: nodes.1.note:"),
    ("string depth", _node(1, depth="1"), "swarm task graph schema invalid: nodes.1.depth:"),
    ("boolean ceiling", _set(maxDepth=True), "swarm task graph schema invalid: maxDepth:"),
    ("float time", _set(createdAtUnixMs=1.0), "swarm task graph schema invalid: createdAtUnix"),
    ("negative depth", _node(1, depth=-1), "swarm task graph schema invalid: nodes.1.depth:"),
    ("depth over u32", _node(1, depth=2**32), "swarm task graph schema invalid: nodes.1.depth:"),
    ("time over u64", _set(expiresAtUnixMs=2**64), "swarm task graph schema invalid: expiresAt"),
    ("schema", _set(schema="chio.swarm.task-graph.v2"), "unsupported swarm task graph schema: "),
    ("graph id", _set(graphId=""), "swarm graph id must not be empty"),
    ("root ref", _set(rootTransactionRef=""), "swarm root transaction ref must not be empty"),
    ("planner", _set(plannerSubject=""), "swarm planner subject must not be empty"),
    ("issuer", _set(issuer=""), "swarm issuer must not be empty"),
    ("budget", _set(budgetPoolRef=""), "swarm budget pool ref must not be empty"),
    ("epoch", _set(revocationEpochRef=""), "swarm revocation epoch ref must not be empty"),
    ("future", _set(createdAtUnixMs=NOW + 1), "swarm task graph is from the future"),
    ("expired", _set(expiresAtUnixMs=NOW), "swarm task graph is expired"),
    ("no task", _set(nodes=[], edges=[], joins=[]), "swarm task graph requires at least one task"),
    ("no fanout", _set(maxFanout=0), "swarm task graph max_fanout must be positive"),
    ("task id", _node(3, taskId=""), "swarm task id must not be empty"),
    ("scope empty", _node(1, scopeHash=""), "swarm task scope hash must not be empty"),
    ("scope upper", _node(1, scopeHash=SCOPE.upper()), "swarm task scope hash must be a lowercase"),
    ("scope short", _node(1, scopeHash=SCOPE[:63]), "swarm task scope hash must be a lowercase"),
    ("duplicate task", _node(3, taskId="a"), "duplicate swarm task id: a"),
    ("two roots", _node(3, depth=0, parentTaskId=None), "swarm task graph requires exactly one"),
    ("root has parent", _append("nodes", node("r2", 0, "root")), "swarm root-depth task has "),
    ("missing parent", _append("nodes", node("x", 1)), "swarm non-root task missing parent: x"),
    ("edge source", _edge(0, fromTaskId=""), "swarm edge source must not be empty"),
    ("edge target", _edge(0, toTaskId=""), "swarm edge target must not be empty"),
    ("edge type", _edge(0, edgeType=""), "swarm edge type must not be empty"),
    ("unknown source", _edge(2, fromTaskId="zz"), "unknown swarm edge source: zz"),
    ("unknown target", _edge(2, toTaskId="zz"), "unknown swarm edge target: zz"),
    ("duplicate edge", _append("edges", edge("a", "b")), "duplicate swarm task graph edge"),
    ("edge moved", _edge(2, toTaskId="b"), "swarm task parent edge missing: root -> c"),
    ("no parent edge", _node(2, parentTaskId="c"), "swarm task parent edge missing: c -> b"),
    ("join id", _join(joinId=""), "swarm join id must not be empty"),
    ("join next", _join(nextTaskId=""), "swarm join next task id must not be empty"),
    ("join twice", _append("joins", {"joinId": "join-bc", "parentTaskIds": [], "nextTaskId": "a"}),
     "duplicate swarm join id: join-bc"),
    ("no parents", _join(parentTaskIds=[]), "swarm join requires parents: join-bc"),
    ("one parent", _join(parentTaskIds=["b"]), "swarm join requires at least two parents: join-bc"),
    ("next unknown", _join(nextTaskId="zz"), "swarm join next task is unknown: zz"),
    ("parent twice", _join(parentTaskIds=["b", "b"]), "duplicate swarm join parent task: b"),
    ("empty parent", _join(parentTaskIds=["b", ""]), "swarm join parent task must not be empty"),
    ("next is parent", _join(parentTaskIds=["b", "root"]), "swarm join next task is a parent: "),
    ("parent unknown", _join(parentTaskIds=["b", "zz"]), "swarm join parent task is unknown: zz"),
    ("route empty", _append("routePlanRefs", ""), "swarm route plan ref must not be empty"),
    ("route twice", _append("routePlanRefs", "route-a"), "duplicate swarm route plan ref: route-a"),
    ("cycle", _append("edges", edge("b", "root")), "swarm task graph cycle at a"),
    ("depth", _node(2, depth=3), "swarm task depth mismatch: a -> b"),
    ("ceiling", _set(maxDepth=1), "swarm task exceeds max depth: b"),
    ("fanout", _set(maxFanout=1), "swarm task exceeds max fanout: root"),
]  # fmt: skip


@pytest.mark.parametrize(("change", "reason"), [(m, r) for _, m, r in STRUCTURE],
                         ids=[name for name, _, _ in STRUCTURE])  # fmt: skip
def test_every_structural_check_refuses_a_signed_graph_that_breaks_it(
    change: Mutation, reason: str
) -> None:
    doc = base()
    change(doc)
    rejected = _rejection(seal(doc))
    assert rejected.reason.startswith(reason)
    assert rejected.code == failure_code(rejected.reason)


def test_a_lowered_ceiling_met_by_reparenting_without_fixing_depth_is_a_depth_mismatch() -> None:
    # The attack the swarm contract names: maxDepth 2 -> 1, and b (depth 2 under a) hung under
    # the root so that no parent link is deeper than 1, but b still says depth 2.
    doc = base()
    doc["maxDepth"] = 1
    doc["nodes"][2]["parentTaskId"] = "root"
    doc["edges"][1] = edge("root", "b")
    rejected = _rejection(seal(doc))
    assert rejected.reason == "swarm task depth mismatch: root -> b"
    assert rejected.code == "proof-room.negative.swarm-task-depth-mismatch"


def test_a_widened_ceiling_with_resealed_digests_but_no_new_signature_is_refused() -> None:
    # The second attack: the fan-out ceiling raised and every scope digest "re-sealed" to a new
    # value that is well formed, but the graph itself not signed again.
    doc = base()
    doc["maxFanout"] = 64
    for each in doc["nodes"]:
        each["scopeHash"] = "ab" * 32
    rejected = _rejection(doc)
    assert rejected.reason == "swarm task graph signature invalid: swarm-graph-tests"
    assert rejected.code == "proof-room.negative.swarm-task-graph-signature-invalid"


def test_an_edited_ceiling_is_refused_by_its_structure_before_its_signature() -> None:
    doc = base()
    doc["maxDepth"] = 1  # not re-signed: the depth check still comes first
    assert _rejection(doc).reason == "swarm task exceeds max depth: b"


SIGNATURE: list[tuple[str, Mutation, str]] = [
    ("untrusted issuer", lambda doc: doc.update(seal(doc, OTHER_KEY), issuer=_did(OTHER_KEY)),
     "swarm task graph issuer is not trusted: swarm-graph-tests"),
    ("did not self-certifying", _set(issuer=f"did:chio:{TRUSTED.upper()}"),
     "swarm witness issuer did:chio is not self-certifying"),
    ("issuer not a key", _set(issuer="alice"), "swarm witness issuer public key invalid: "),
    ("signature not hex", _set(signature="zz" * 64),
     "swarm task graph signature invalid: swarm-graph-tests: not 128 hex digits"),
    ("signature short", _set(signature="ab" * 63),
     "swarm task graph signature invalid: swarm-graph-tests: not 128 hex digits"),
    ("tampered", _node(1, scopeHash="cd" * 32),
     "swarm task graph signature invalid: swarm-graph-tests"),
]  # fmt: skip


def _did(key: Ed25519PrivateKey) -> str:
    return "did:chio:" + key.public_key().public_bytes_raw().hex()


@pytest.mark.parametrize(("change", "reason"), [(m, r) for _, m, r in SIGNATURE],
                         ids=[name for name, _, _ in SIGNATURE])  # fmt: skip
def test_the_signature_checks_come_last_and_name_the_graph(change: Mutation, reason: str) -> None:
    doc = base()
    change(doc)
    assert _rejection(doc).reason.startswith(reason)


def test_no_trusted_key_is_refused_before_anything_else() -> None:
    rejected = _rejection({"not": "a graph"}, keys=[])
    assert rejected.code == "proof-room.negative.trusted-swarm-witness-keys-missing"


@pytest.mark.parametrize("key", ["abc", "zz" * 32, TRUSTED + "00"])
def test_a_malformed_trusted_key_is_the_callers_mistake(key: str) -> None:
    with pytest.raises(SwarmKeyError, match=r"^not an Ed25519 public key: "):
        verify_swarm_task_graph(base(), [key], NOW)


def test_a_1024_task_chain_verifies_without_meeting_the_recursion_limit() -> None:
    doc = chain(1024)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)  # far below the chain's length: no recursion may be at work
    try:
        assert verify_swarm_task_graph(doc, [TRUSTED], NOW)
        doc["edges"].append(edge("t1023", "t0000"))
        assert _rejection(seal(doc)).reason == "swarm task graph cycle at t0000"
    finally:
        sys.setrecursionlimit(limit)


def test_a_cycle_is_named_from_the_first_task_in_sorted_order() -> None:
    # Tasks are entered in sorted order, children in edge order: from "a", the path a -> b -> c
    # meets b again, whatever the order of the node list.
    doc = base()
    doc["nodes"].reverse()
    doc["edges"] += [edge("b", "c"), edge("c", "b")]
    assert _rejection(seal(doc)).reason == "swarm task graph cycle at b"


def test_depth_arithmetic_is_checked_at_the_u32_limit() -> None:
    doc = base()
    doc["maxDepth"] = 2**32 - 1
    doc["nodes"] += [node("deep", 2**32 - 1, "c"), node("deeper", 0, "deep")]
    doc["nodes"][-1].update(depth=1)
    doc["edges"] = [edge("deep", "deeper"), *doc["edges"], edge("c", "deep")]
    assert _rejection(seal(doc)).reason == "swarm task depth overflow"


@pytest.mark.parametrize(
    ("reason", "code"),
    [
        ("swarm task graph cycle at t1", "proof-room.negative.swarm-task-graph-cycle-at-t1"),
        ("swarm task exceeds max fanout: x: y",
         "proof-room.negative.swarm-task-exceeds-max-fanout"),
        ("swarm task graph max_fanout must be positive",
         "proof-room.negative.swarm-task-graph-max-fanout-must-be-positive"),
        ("  Odd -- Message!  ", "proof-room.negative.odd-message"),
        (": nothing before", "proof-room.negative.unknown"),
    ],
)  # fmt: skip
def test_a_failure_code_is_the_slug_of_the_message_before_its_first_colon(
    reason: str, code: str
) -> None:
    assert failure_code(reason) == code
