"""Verify and sign ``chio.swarm.task-graph.v1`` documents (Ed25519 over RFC 8785 JSON).

`verify_swarm_task_graph` is a pure function: the clock (``now_unix_ms``) and the trusted
issuer keys are arguments; it reads no file, no environment and no clock. It runs every check
in the contract's order and the first failure is the answer, a `SwarmGraphRejected` carrying the
reference verifier's message and its failure code. The signature is checked last, so that a
graph edited after signing (a lowered ceiling, a re-parented task) is refused for what is wrong
with it, not merely because its signature no longer matches.

Decision: docs/decisions/0401-swarm-graphs.md
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from ._checks import check_swarm_structure
from ._errors import SwarmGraphRejected, SwarmKeyError
from ._model import (
    SwarmTaskGraph,
    canonical_swarm_bytes,
    parse_swarm_task_graph,
    swarm_graph_data,
    swarm_graph_sha256,
)

__all__ = [
    "DID_CHIO_PREFIX",
    "TrustedKey",
    "issuer_for",
    "load_signing_key",
    "parse_trusted_keys",
    "public_key_hex",
    "sign_swarm_task_graph",
    "verify_swarm_task_graph",
]

DID_CHIO_PREFIX = "did:chio:"
_HEX = frozenset("0123456789abcdef")
# What a trusted key may be given as: 64 hex digits, 32 raw bytes, or a key object.
TrustedKey = str | bytes | Ed25519PublicKey
_MISSING_KEYS = (
    "trusted swarm witness keys missing: RHO_SWARM_TRUSTED_KEYS or --trusted-key must pin"
    " trusted swarm witness keys"
)


def verify_swarm_task_graph(
    doc: Mapping[str, Any] | SwarmTaskGraph, trusted_keys: Iterable[TrustedKey], now_unix_ms: int
) -> str:
    """Verify *doc* at the time *now_unix_ms* against *trusted_keys*; return its graphSha256.

    Checks, in this order: trusted keys present; schema; required strings; time; tasks; edges;
    joins; route plan refs; acyclic; depths; ceilings; issuer trusted; signature.

    Raises:
        SwarmGraphRejected: the first check that fails (``.reason``, ``.code``).
        SwarmKeyError: a trusted key is not an Ed25519 public key (a caller's mistake).
    """
    trusted = parse_trusted_keys(trusted_keys)
    if not trusted:
        raise SwarmGraphRejected(_MISSING_KEYS)
    graph = parse_swarm_task_graph(doc)
    check_swarm_structure(graph, now_unix_ms)
    _check_signature(graph, trusted)
    return swarm_graph_sha256(graph)


def sign_swarm_task_graph(doc: Mapping[str, Any], private_key: Ed25519PrivateKey) -> dict[str, Any]:
    """Return *doc* signed by *private_key*, as JSON data ready to write.

    An empty or absent ``issuer`` becomes the key's ``did:chio:<public key hex>``; the document
    must otherwise pass every check but the signature's at its own ``createdAtUnixMs``, so that
    an issuer never signs a graph a verifier would refuse for its shape.

    Raises:
        SwarmGraphRejected: the document is malformed or fails a structural check.
        SwarmKeyError: ``issuer`` names another key than *private_key*.
    """
    issuer = issuer_for(private_key.public_key())
    draft = {**doc, "issuer": doc.get("issuer") or issuer, "signature": "unsigned"}
    graph = parse_swarm_task_graph(draft)
    if graph.issuer != issuer:
        raise SwarmKeyError(f"swarm task graph signer does not match issuer: {graph.graph_id}")
    check_swarm_structure(graph, graph.created_at_unix_ms)
    body = canonical_swarm_bytes(swarm_graph_data(graph, signature=False))
    signed = graph.model_copy(update={"signature": private_key.sign(body).hex()})
    return swarm_graph_data(signed)


def _check_signature(graph: SwarmTaskGraph, trusted: list[Ed25519PublicKey]) -> None:
    issuer_key = _issuer_key(graph.issuer)
    raw = _raw(issuer_key)
    if not any(_raw(key) == raw for key in trusted):
        raise SwarmGraphRejected(f"swarm task graph issuer is not trusted: {graph.graph_id}")
    signature = _signature_bytes(graph)
    body = canonical_swarm_bytes(swarm_graph_data(graph, signature=False))
    try:
        issuer_key.verify(signature, body)
    except InvalidSignature:
        raise SwarmGraphRejected(f"swarm task graph signature invalid: {graph.graph_id}") from None


def _signature_bytes(graph: SwarmTaskGraph) -> bytes:
    text = graph.signature
    if len(text) != 128 or not set(text.lower()) <= _HEX:
        raise SwarmGraphRejected(
            f"swarm task graph signature invalid: {graph.graph_id}: not 128 hex digits"
        )
    return bytes.fromhex(text)


def _issuer_key(issuer: str) -> Ed25519PublicKey:
    """The public key an issuer names: ``did:chio:<64 lowercase hex>`` or the hex itself."""
    key_hex = issuer
    if issuer.startswith(DID_CHIO_PREFIX):
        key_hex = issuer.removeprefix(DID_CHIO_PREFIX)
        if len(key_hex) != 64 or not set(key_hex) <= _HEX:
            raise SwarmGraphRejected("swarm witness issuer did:chio is not self-certifying")
    try:
        return _key_from_hex(key_hex)
    except SwarmKeyError as exc:
        raise SwarmGraphRejected(f"swarm witness issuer public key invalid: {exc}") from None


def parse_trusted_keys(keys: Iterable[TrustedKey]) -> list[Ed25519PublicKey]:
    """Each of *keys* as an Ed25519 public key (64 hex digits, 32 bytes, or a key object).

    Raises:
        SwarmKeyError: one of them is not an Ed25519 public key.
    """
    return [_public_key(key) for key in keys]


def _public_key(key: TrustedKey) -> Ed25519PublicKey:
    if isinstance(key, Ed25519PublicKey):
        return key
    if isinstance(key, bytes):
        return _key_from_bytes(key)
    return _key_from_hex(key.strip())


def _key_from_hex(text: str) -> Ed25519PublicKey:
    if len(text) != 64 or not set(text.lower()) <= _HEX:
        raise SwarmKeyError(f"not an Ed25519 public key: expected 64 hex digits, got {len(text)}")
    return _key_from_bytes(bytes.fromhex(text))


def _key_from_bytes(raw: bytes) -> Ed25519PublicKey:
    try:
        return Ed25519PublicKey.from_public_bytes(raw)
    except ValueError as exc:
        raise SwarmKeyError(f"not an Ed25519 public key: {exc}") from None


def _raw(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def public_key_hex(key: Ed25519PublicKey | Ed25519PrivateKey) -> str:
    """The 64 lowercase hex digits of an Ed25519 public key (of *key*'s public half)."""
    public = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    return _raw(public).hex()


def issuer_for(key: Ed25519PublicKey | Ed25519PrivateKey) -> str:
    """The self-certifying issuer of *key*: ``did:chio:<public key hex>``."""
    return DID_CHIO_PREFIX + public_key_hex(key)


def load_signing_key(path: str | Path) -> Ed25519PrivateKey:
    """Read an Ed25519 private key: a 32-byte seed as 64 hex digits, or an unencrypted PEM.

    Raises:
        SwarmKeyError: the file cannot be read or holds neither form.
    """
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        reason = (exc.strerror or str(exc)).lower()
        raise SwarmKeyError(f"cannot read key file: {reason}: {path}") from None
    text = data.strip()
    if text.startswith(b"-----BEGIN"):
        return _pem_key(text, path)
    if len(text) == 64 and set(text.decode("ascii", "replace").lower()) <= _HEX:
        return Ed25519PrivateKey.from_private_bytes(bytes.fromhex(text.decode()))
    raise SwarmKeyError(
        f"key file holds neither a 32-byte seed as 64 hex digits nor a PEM private key: {path}"
    )


def _pem_key(text: bytes, path: str | Path) -> Ed25519PrivateKey:
    try:
        key = serialization.load_pem_private_key(text, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
        raise SwarmKeyError(f"key file is not an unencrypted PEM private key: {exc}") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise SwarmKeyError(f"key file holds a {type(key).__name__}, not an Ed25519 key: {path}")
    return key
