"""Cloud preparation: the sensitive-key rule, tenant removal, bounds, limits, the sync id."""

from __future__ import annotations

import copy
import hashlib
import json
import random
import re
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from graph import GraphValidationError, document_data, sha256_hex
from graph.cloud import (
    GraphLimitError,
    SensitiveKeyCollisionError,
    is_sensitive_key,
    prepare_for_cloud,
)

from ._docs import contract_case, document, edge, event, node, sample

SENSITIVE_TABLE: list[tuple[str, bool]] = [
    # The cases the issue pins.
    ("message_index", True),
    ("MESSAGE_COUNT", False),
    ("Prompt_Tokens", False),
    ("sast_source", False),
    ("file_path", True),
    ("command", True),
    ("provider", True),
    ("model", True),
    ("reason", True),
    # Every listed part, in any case.
    ("content", True),
    ("system_prompt", True),
    ("SECRET", True),
    ("credential_ref", True),
    ("db_password", True),
    ("api_key", True),
    ("x-api-key", True),
    ("ApiKey", True),
    ("search_query", True),
    ("docs_url", True),
    ("worktree_path", True),
    ("repository", True),
    ("branch", True),
    ("commit", True),
    ("source", True),
    ("target", True),
    ("evidence", True),
    ("element", True),
    ("profile", True),  # contains "file"
    ("fix", True),
    ("prefix", True),  # contains "fix": the rule is a substring rule, on purpose
    ("curl_flags", True),  # contains "url"
    # The exceptions: sast_source in any case, and the safe suffixes.
    ("SAST_SOURCE", False),
    ("sast_source_kind", True),
    ("subject_sha256", False),
    ("prompt_sha256", False),
    ("commit_digest", False),
    ("file_count", False),
    ("message_token", False),
    ("completion_tokens", False),
    ("prompttoken_count", False),
    ("prompt_token_count", False),
    ("prompt_tokens_total", True),
    ("prompt_sha256x", True),
    # Keys that name none of the parts.
    ("status", False),
    ("data_classification", False),
    ("dependency_type", False),
    ("wave", False),
    ("attempts", False),
    ("token", False),
    ("", False),
]


@pytest.mark.parametrize(("key", "sensitive"), SENSITIVE_TABLE)
def test_sensitive_key_rule(key: str, sensitive: bool) -> None:
    assert is_sensitive_key(key) is sensitive


def _attrs_doc(**attributes: str) -> dict[str, Any]:
    return document(nodes=[node("n", **attributes)])


@pytest.mark.parametrize(("key", "sensitive"), [row for row in SENSITIVE_TABLE if row[0]])
def test_a_sensitive_key_is_replaced_by_its_digest(key: str, sensitive: bool) -> None:
    # The sensitive-name rule alone (another producer's graph): rho's own allow-list is off.
    prepared = prepare_for_cloud(_attrs_doc(**{key: "clear text value"}), rho_only=False)
    attributes = prepared.document.nodes[0].attributes
    if sensitive:
        assert attributes == {f"{key}_sha256": sha256_hex("clear text value")}
    elif key.lower().endswith("_sha256"):  # a digest key whose value is no digest
        assert attributes == {key: sha256_hex("clear text value")}
    else:
        assert attributes == {key: "clear text value"}


DIGEST = sha256_hex("a value hashed on this machine")
FORGED_TABLE: list[tuple[str, str, str]] = [
    # (key, value sent by the producer, value Rho Cloud receives)
    ("reason_sha256", "private value", sha256_hex("private value")),
    ("reason_sha256", DIGEST, DIGEST),
    ("Subject_SHA256", "private value", sha256_hex("private value")),
    ("reason_sha256", DIGEST.upper(), sha256_hex(DIGEST.upper())),
    ("reason_sha256", DIGEST[:63], sha256_hex(DIGEST[:63])),
    ("reason_sha256", DIGEST + "0", sha256_hex(DIGEST + "0")),
    ("reason_sha256", f"sha256:{DIGEST}", sha256_hex(f"sha256:{DIGEST}")),
    ("reason_sha256", f" {DIGEST}", sha256_hex(f" {DIGEST}")),
    ("reason_sha256", "", sha256_hex("")),
    # Only *_sha256 claims a SHA-256; other safe suffixes keep their values.
    ("commit_digest", "private value", "private value"),
    ("file_count", "3", "3"),
]


@pytest.mark.parametrize(("key", "value", "sent"), FORGED_TABLE)
def test_a_digest_key_never_carries_clear_text(key: str, value: str, sent: str) -> None:
    prepared = prepare_for_cloud(_attrs_doc(**{key: value}), rho_only=False)
    assert prepared.document.nodes[0].attributes == {key: sent}


def test_a_forged_digest_on_an_edge_is_hashed_and_preparing_again_changes_nothing() -> None:
    doc = sample()
    doc["edges"][0]["attributes"]["reason_sha256"] = "private value"
    once = prepare_for_cloud(doc)
    assert once.document.edges[0].attributes["reason_sha256"] == sha256_hex("private value")
    assert b"private value" not in once.body
    twice = prepare_for_cloud(once.document)
    assert (twice.body, twice.sync_id) == (once.body, once.sync_id)


def test_tenant_id_is_removed_everywhere() -> None:
    doc = sample()
    doc["scope"] = {"tenant_id": "acme", "project_id": "p", "repository_id": "r"}
    for fact in doc["nodes"] + doc["edges"] + doc["events"]:
        fact["scope"] = {"tenant_id": "acme", "project_id": "p"}
    doc["nodes"][0]["attributes"]["Tenant_ID"] = "acme"
    prepared = prepare_for_cloud(doc)
    assert b"tenant" not in prepared.body.lower()
    assert b"acme" not in prepared.body
    data = document_data(prepared.document)
    assert data["scope"] == {"project_id": "p", "repository_id": "r"}
    assert data["events"][0]["scope"] == {"project_id": "p"}


def test_a_collision_with_an_existing_digest_key_is_an_error() -> None:
    doc = _attrs_doc(prompt="hello", prompt_sha256="something")
    message = (
        'node "n" attribute "prompt" cannot be replaced by its digest:'
        ' "prompt_sha256" is already present'
    )
    with pytest.raises(SensitiveKeyCollisionError, match=rf"^{re.escape(message)}$") as caught:
        prepare_for_cloud(doc)
    assert (caught.value.fact, caught.value.fact_id, caught.value.key) == ("node", "n", "prompt")


def test_edge_attributes_are_hashed_too() -> None:
    doc = sample()
    doc["edges"][0]["attributes"]["branch"] = "feature/secret-plan"
    prepared = prepare_for_cloud(doc)
    assert b"secret-plan" not in prepared.body
    hashed = prepared.document.edges[0].attributes["branch_sha256"]
    assert hashed == sha256_hex("feature/secret-plan")


def test_evidence_uris_become_digests_and_digests_stay() -> None:
    doc = sample()
    doc["nodes"][0]["provenance"]["evidence"] = [
        {"uri": "file:///home/me/secret.txt", "digest": "sha256:abc", "media_type": "text/plain"}
    ]
    prepared = prepare_for_cloud(doc)
    evidence = prepared.document.nodes[0].provenance.evidence[0]
    assert evidence.uri == "sha256:" + sha256_hex("file:///home/me/secret.txt")
    assert (evidence.digest, evidence.media_type) == ("sha256:abc", "text/plain")
    assert b"/home/me" not in prepared.body


def test_preparing_a_prepared_document_changes_nothing() -> None:
    doc = sample()
    doc["nodes"][0]["attributes"]["prompt"] = "p"
    doc["nodes"][0]["provenance"]["evidence"] = [{"uri": "https://example.invalid/x"}]
    once = prepare_for_cloud(doc)
    twice = prepare_for_cloud(once.document)
    assert (twice.body, twice.sync_id) == (once.body, once.sync_id)


def test_preparation_does_not_change_its_input() -> None:
    doc = sample()
    doc["nodes"][0]["attributes"]["prompt"] = "p"
    doc["scope"]["tenant_id"] = "t"
    before = copy.deepcopy(doc)
    prepare_for_cloud(doc)
    assert doc == before


def _many(nodes: int = 0, edges: int = 0, events: int = 0) -> dict[str, Any]:
    node_list = [node(f"n{i:04d}") for i in range(max(nodes, 1))]
    edge_list = [edge(f"e{i:04d}", "n0000", "n0000") for i in range(edges)]
    event_list = [event(f"v{i:04d}", "n0000") for i in range(events)]
    return document(nodes=node_list, edges=edge_list, events=event_list)


@pytest.mark.parametrize(
    ("counts", "message"),
    [
        ({"nodes": 260}, "graph has 260 nodes; Rho Cloud accepts at most 250"),
        ({"edges": 501}, "graph has 501 edges; Rho Cloud accepts at most 500"),
        ({"events": 501}, "graph has 501 events; Rho Cloud accepts at most 500"),
        (
            {"nodes": 250, "edges": 500, "events": 151},
            "graph has 901 facts; Rho Cloud accepts at most 900",
        ),
    ],
)
def test_count_limits(counts: dict[str, int], message: str) -> None:
    with pytest.raises(GraphLimitError, match=rf"^{re.escape(message)}$") as caught:
        prepare_for_cloud(_many(**counts))
    assert caught.value.count > caught.value.limit
    assert caught.value.exit_code == 2


def test_a_graph_at_every_limit_is_accepted() -> None:
    prepared = prepare_for_cloud(_many(nodes=250, edges=400, events=250))
    assert prepared.facts == 900


def test_the_body_limit_counts_the_prepared_body() -> None:
    value = "v" * 512
    nodes = [node(f"n{i:03d}", **{f"k{j:02d}": value for j in range(9)}) for i in range(250)]
    message_pattern = r"^graph body is (\d+) bytes; Rho Cloud accepts at most 1 MiB$"
    with pytest.raises(GraphLimitError, match=message_pattern) as caught:
        prepare_for_cloud(document(nodes=nodes), rho_only=False)
    assert caught.value.count > 1024 * 1024


@pytest.mark.parametrize(
    ("attributes", "message"),
    [
        (
            {f"k{i:02d}": "v" for i in range(65)},
            'node "n" has 65 attributes; Rho Cloud accepts at most 64',
        ),
        ({"": "v"}, 'node "n" has attribute key "" of 0 characters; Rho Cloud accepts 1 to 64'),
        (
            {"k" * 65: "v"},
            f'node "n" has attribute key "{"k" * 65}" of 65 characters; Rho Cloud accepts 1 to 64',
        ),
        (
            {"x" * 54 + "_reason": "v"},  # 61 characters, but 68 once hashed
            f'node "n" has attribute key "{"x" * 54}_reason_sha256" of 68 characters;'
            " Rho Cloud accepts 1 to 64",
        ),
        (
            {"status": "s" * 513},
            'node "n" attribute "status" has a value of 513 characters;'
            " Rho Cloud accepts at most 512",
        ),
    ],
)
def test_attribute_bounds_name_the_fact(attributes: dict[str, str], message: str) -> None:
    with pytest.raises(GraphLimitError, match=rf"^{re.escape(message)}$") as caught:
        prepare_for_cloud(_attrs_doc(**attributes), rho_only=False)
    assert (caught.value.fact, caught.value.fact_id) == ("node", "n")


def test_bounds_allow_64_attributes_and_long_sensitive_values() -> None:
    attributes = {f"k{i:02d}": "v" * 512 for i in range(63)} | {"prompt": "p" * 5000}
    prepared = prepare_for_cloud(_attrs_doc(**attributes), rho_only=False)
    assert len(prepared.document.nodes[0].attributes) == 64


def test_an_invalid_graph_is_refused_before_preparation() -> None:
    doc = sample()
    doc["edges"][0]["to"]["id"] = "gone"
    with pytest.raises(GraphValidationError):
        prepare_for_cloud(doc)


def test_the_body_is_rfc8785_and_the_sync_id_is_its_sha256() -> None:
    prepared = prepare_for_cloud(sample())
    assert prepared.body == rfc8785.dumps(json.loads(prepared.body))
    assert prepared.sync_id == "graph_" + hashlib.sha256(prepared.body).hexdigest()
    assert re.fullmatch(r"graph_[0-9a-f]{64}", prepared.sync_id)


SAMPLE_SYNC_ID = "graph_dbbf514eee6ab4edd4d2982b0cd129808f801d907e705375a38142af32c47fe0"


def test_the_sync_id_is_pinned_for_the_sample() -> None:
    # A change here gives every existing snapshot a new id: make it only on purpose. The
    # sample is not shaped like rho's graphs (its "done" status, its task waves): pinned with
    # the name rule alone; rho's own graphs prepare the same either way (test_vocabulary.py).
    assert prepare_for_cloud(sample(), rho_only=False).sync_id == SAMPLE_SYNC_ID
    assert prepare_for_cloud(sample(), rho_only=False).sync_id == SAMPLE_SYNC_ID


def test_the_sync_id_changes_with_the_snapshot() -> None:
    changed = sample()
    changed["nodes"][0]["attributes"]["status"] = "failed"
    assert prepare_for_cloud(changed).sync_id != prepare_for_cloud(sample()).sync_id


def _reordered(doc: dict[str, Any], seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    result = copy.deepcopy(doc)
    for key in ("nodes", "edges", "events"):
        rng.shuffle(result[key])
    for fact in result["nodes"] + result["edges"] + result["events"]:
        items = list(fact.items())
        rng.shuffle(items)
        fact.clear()
        fact.update(items)
        if "attributes" in fact:
            pairs = list(fact["attributes"].items())
            rng.shuffle(pairs)
            fact["attributes"] = dict(pairs)
    return result


@settings(max_examples=50, deadline=None)
@given(st.integers(min_value=0, max_value=2**32))
def test_the_sync_id_does_not_depend_on_list_or_key_order(seed: int) -> None:
    doc = sample()
    doc["nodes"][1]["attributes"]["prompt"] = "write the code"
    expected = prepare_for_cloud(doc)
    again = prepare_for_cloud(_reordered(doc, seed))
    assert (again.sync_id, again.body) == (expected.sync_id, expected.body)


def test_another_producers_kinds_keep_the_contracts_counts_and_flags() -> None:
    # The Go original's TestGraphSyncConformsToContract: a session's counts and flags
    # stay, its provider, model, command, path and reason are hashed; rho's own facts keep
    # only what rho writes.
    session = {
        "entity_type": "session",
        "MESSAGE_COUNT": "12",
        "sast_source": "semgrep",
        "Prompt_Tokens": "300",
        "provider": "anthropic",
        "model": "m-1",
        "command": "make test",
        "path": "/home/a/x",
        "reason": "it broke",
    }
    doc = document(
        nodes=[
            node("session/s1", **session),
            node("rho/mission/m1", entity_type="mission", notes="x"),
        ]
    )

    prepared = {n.id: n.attributes for n in prepare_for_cloud(doc).document.nodes}

    clear = {
        k: session[k] for k in ("entity_type", "MESSAGE_COUNT", "sast_source", "Prompt_Tokens")
    }
    hashed = {
        f"{k}_sha256": sha256_hex(session[k])
        for k in ("provider", "model", "command", "path", "reason")
    }
    assert prepared["session/s1"] == {**clear, **hashed}
    assert prepared["rho/mission/m1"] == {"entity_type": "mission", "notes_sha256": sha256_hex("x")}
    assert prepare_for_cloud(doc, rho_only=False).document.nodes[1].attributes == {
        **clear,
        **hashed,
    }


def test_sessions_and_tools_under_rho_get_the_contracts_rule_not_rho_missions_list() -> None:
    prepared = prepare_for_cloud(contract_case()).document
    attributes = {n.id: n.attributes for n in prepared.nodes}
    attributes.update({e.id: e.attributes for e in prepared.edges})
    assert attributes["rho/session/s1"] == {
        "MESSAGE_COUNT": "12",
        "Prompt_Tokens": "300",
        "entity_type": "session",
        "model_sha256": sha256_hex("m-1"),
        "provider_sha256": sha256_hex("anthropic"),
        "sast_source": "semgrep",
    }
    assert attributes["rho/tool/t1"] == {
        "command_sha256": sha256_hex("make test"),
        "entity_type": "tool",
        "file_path_sha256": sha256_hex("/home/a/x.py"),
        "tool_name": "bash",
    }
    assert attributes["rho/edge/session/s1/used/t1"] == {"reason_sha256": sha256_hex("broke")}


def test_rho_missions_own_kinds_keep_the_allow_list_whatever_they_claim() -> None:
    # A mission node that claims to be a session is still rho-mission's: its added note, which
    # the contract's rule would let through (no sensitive name), is hashed.
    mission = node("rho/mission/m1", entity_type="session", notes="private")
    feature = node("rho/custom/f1", entity_type="mission_feature", notes="private")
    contains = edge("rho/edge/mission/m1/contains/f1", "rho/mission/m1", "rho/custom/f1", note="x")
    doc = document(nodes=[mission, feature], edges=[contains])
    prepared = prepare_for_cloud(doc).document
    attributes = {n.id: n.attributes for n in prepared.nodes}
    attributes.update({e.id: e.attributes for e in prepared.edges})
    assert attributes["rho/mission/m1"]["notes_sha256"] == sha256_hex("private")
    assert attributes["rho/custom/f1"]["notes_sha256"] == sha256_hex("private")
    assert attributes["rho/edge/mission/m1/contains/f1"] == {"note_sha256": sha256_hex("x")}
