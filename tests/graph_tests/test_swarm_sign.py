"""`sign_swarm_task_graph` and key files: an issuer's side of a swarm task graph."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st

from graph.swarm import (
    SwarmGraphRejected,
    SwarmKeyError,
    issuer_for,
    load_signing_key,
    parse_swarm_task_graph,
    public_key_hex,
    sign_swarm_task_graph,
    swarm_graph_sha256,
    verify_swarm_task_graph,
)

from ._swarm_vectors import ISSUER_KEY, NOW, OTHER_KEY, SEED, TRUSTED, base, edge, fixture, node


def test_signing_the_shared_fixture_gives_its_signature_byte_for_byte() -> None:
    doc = fixture("valid-recursive-delegation")
    assert sign_swarm_task_graph(doc, ISSUER_KEY) == doc


def test_an_empty_or_absent_issuer_becomes_the_keys_did() -> None:
    doc = base()
    doc.pop("signature")
    doc["issuer"] = ""
    signed = sign_swarm_task_graph(doc, OTHER_KEY)
    assert signed["issuer"] == issuer_for(OTHER_KEY) == "did:chio:" + public_key_hex(OTHER_KEY)
    assert verify_swarm_task_graph(signed, [public_key_hex(OTHER_KEY)], NOW)


def test_a_key_that_is_not_the_issuers_cannot_sign() -> None:
    with pytest.raises(SwarmKeyError, match=r"^swarm task graph signer does not match issuer: "):
        sign_swarm_task_graph(base(), OTHER_KEY)


def test_a_graph_the_verifier_would_refuse_for_its_shape_is_never_signed() -> None:
    doc = base()
    doc["maxFanout"] = 1
    with pytest.raises(SwarmGraphRejected, match=r"^swarm task exceeds max fanout: root$"):
        sign_swarm_task_graph(doc, ISSUER_KEY)


def test_the_graph_sha256_covers_the_signature() -> None:
    one = parse_swarm_task_graph(base())
    other = one.model_copy(update={"signature": "00" * 64})
    assert swarm_graph_sha256(one) != swarm_graph_sha256(other)


def test_a_key_file_may_hold_the_seed_as_hex_or_a_pem(tmp_path: Path) -> None:
    seed_file = tmp_path / "seed.hex"
    seed_file.write_text(SEED.hex() + "\n")
    pem_file = tmp_path / "key.pem"
    pem_file.write_bytes(
        ISSUER_KEY.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    assert public_key_hex(load_signing_key(seed_file)) == TRUSTED
    assert public_key_hex(load_signing_key(pem_file)) == TRUSTED


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"abc", "key file holds neither a 32-byte seed as 64 hex digits nor a PEM private key"),
        (b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", "key file is not an"),
        (b"\xff" * 64, "key file holds neither"),
    ],
)
def test_a_key_file_of_another_shape_is_refused(
    tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "key"
    path.write_bytes(content)
    with pytest.raises(SwarmKeyError, match=f"^{message}"):
        load_signing_key(path)


def test_a_missing_key_file_is_refused_with_its_path(tmp_path: Path) -> None:
    with pytest.raises(SwarmKeyError, match=r"^cannot read key file: no such file"):
        load_signing_key(tmp_path / "absent")


def _tree(parents: list[int]) -> dict[str, Any]:
    """A graph whose task i + 1 is a child of task parents[i] (an index at most i)."""
    ids = ["root"] + [f"t{i}" for i in range(1, len(parents) + 1)]
    depth = {"root": 0}
    nodes = [node("root", 0)]
    for index, parent in enumerate(parents, start=1):
        depth[ids[index]] = depth[ids[parent]] + 1
        nodes.append(node(ids[index], depth[ids[index]], ids[parent]))
    doc = base()
    fanout = max((parents.count(p) for p in set(parents)), default=1)
    doc.update(
        nodes=nodes,
        edges=[edge(ids[p], ids[i]) for i, p in enumerate(parents, start=1)],
        joins=[],
        maxDepth=max(depth.values()),
        maxFanout=fanout,
        signature="",
    )
    return doc


_PARENTS = st.integers(0, 12).flatmap(
    lambda n: st.tuples(*[st.integers(0, i) for i in range(n)]).map(list)
)


@settings(max_examples=60, deadline=None)
@given(parents=_PARENTS)
def test_any_signed_delegation_tree_verifies_and_any_tightened_ceiling_fails(
    parents: list[int],
) -> None:
    signed = sign_swarm_task_graph(_tree(parents), ISSUER_KEY)
    assert verify_swarm_task_graph(signed, [TRUSTED], NOW) == swarm_graph_sha256(
        parse_swarm_task_graph(signed)
    )
    if signed["maxDepth"] > 0:
        lowered = {**signed, "maxDepth": signed["maxDepth"] - 1}
        with pytest.raises(SwarmGraphRejected, match=r"^swarm task exceeds max depth: "):
            verify_swarm_task_graph(lowered, [TRUSTED], NOW)
    widened = {**signed, "maxFanout": signed["maxFanout"] + 1}
    with pytest.raises(SwarmGraphRejected, match=r"^swarm task graph signature invalid: "):
        verify_swarm_task_graph(widened, [TRUSTED], NOW)


def test_a_new_key_signs_what_only_its_own_public_half_verifies() -> None:
    key = Ed25519PrivateKey.generate()
    doc = {**base(), "issuer": "", "signature": ""}
    signed = sign_swarm_task_graph(doc, key)
    assert verify_swarm_task_graph(signed, [public_key_hex(key)], NOW)
    with pytest.raises(SwarmGraphRejected, match=r"^swarm task graph issuer is not trusted: "):
        verify_swarm_task_graph(signed, [TRUSTED], NOW)
