"""Privacy normalization and limits applied before a graph is uploaded to Rho Cloud.

`prepare_for_cloud` turns a valid document into the one that may leave the machine:

- no ``tenant_id``: dropped from the envelope's scope, from every fact's scope, and any
  attribute named ``tenant_id`` (in any case) is dropped too;
- on the facts of the kinds rho-mission writes, only the attributes it writes for that
  node's ``entity_type`` or that edge's kind, with values of the shape it gives them
  (``_vocabulary``, an allow-list), keep their values; any other ``k`` becomes
  ``k_sha256`` = SHA-256 hex of its value: a ``description`` or ``notes`` added by hand, or
  a ``status`` holding a sentence, never leaves in clear;
- every sensitive attribute ``k`` (`is_sensitive_key`, the privacy rule) becomes
  ``k_sha256`` = SHA-256 hex of its value; ``k_sha256`` already present is an error;
- a value under a key that claims to be a digest (ending in ``_sha256``, in any case) but is
  not one (64 lowercase hex digits) is hashed in place: such a key is exempt from the rule
  above, so without this a clear-text ``reason_sha256: "private value"`` would leave as written;
- every provenance evidence ``uri`` becomes ``sha256:<hex>``, the SHA-256 of the uri (a uri is a
  path or a URL: sensitive); ``digest`` and ``media_type`` are kept. A uri already of that form
  is kept, so preparing a prepared document changes nothing;
- the bounds of Rho Cloud hold: 250 nodes, 500 edges, 500 events, 900 facts, attribute keys of
  1 to 64 characters, values of at most 512, at most 64 attributes per fact (checked on the
  prepared attributes, which are what is sent), and at most 1 MiB of canonical body.

The canonical body is the RFC 8785 (JCS) serialization of the prepared document, facts sorted by
id; the sync id is ``graph_`` + its SHA-256, so the same snapshot always gets the same id.

Decision: docs/decisions/0302-cloud-allow-lists.md
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar

import rfc8785

from .._build import sha256_hex
from .._errors import fact_label, quote
from .._model import Edge, Event, Evidence, GraphDocument, Node, Provenance, Scope, sort_facts
from .._model import document_data as _document_data
from .._validate import validate_graph
from ._errors import GraphLimitError, SensitiveKeyCollisionError
from ._vocabulary import allowed_value, entity_type_of, is_rho_mission_fact

__all__ = [
    "MAX_ATTRIBUTES",
    "MAX_BODY_BYTES",
    "MAX_EDGES",
    "MAX_EVENTS",
    "MAX_FACTS",
    "MAX_KEY_CHARS",
    "MAX_NODES",
    "MAX_VALUE_CHARS",
    "PreparedGraph",
    "canonical_json",
    "is_sensitive_key",
    "prepare_for_cloud",
]

MAX_NODES = 250
MAX_EDGES = 500
MAX_EVENTS = 500
MAX_FACTS = 900
MAX_BODY_BYTES = 1024 * 1024
MAX_KEY_CHARS = 64
MAX_VALUE_CHARS = 512
MAX_ATTRIBUTES = 64

_SENSITIVE_PARTS = (
    "content",
    "prompt",
    "secret",
    "credential",
    "password",
    "api_key",
    "api-key",
    "apikey",
    "query",
    "reason",
    "url",
    "path",
    "command",
    "provider",
    "model",
    "repository",
    "branch",
    "commit",
    "source",
    "target",
    "message",
    "evidence",
    "element",
    "file",
    "fix",
)
_SAFE_SUFFIXES = ("_sha256", "_digest", "_count", "_token", "_tokens", "token_count")
_URI_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_HEX_DIGEST = re.compile(r"[0-9a-f]{64}")


def is_sensitive_key(key: str) -> bool:
    """Tell whether attribute *key* must be hashed before upload (the privacy rule, exactly).

    A key is sensitive when, case-insensitively, it contains one of ``content prompt secret
    credential password api_key api-key apikey query reason url path command provider model
    repository branch commit source target message evidence element file fix``, is not
    ``sast_source``, and does not end in ``_sha256 _digest _count _token _tokens token_count``.
    So ``message_index`` is sensitive while ``MESSAGE_COUNT`` and ``Prompt_Tokens`` are not.
    """
    lowered = key.lower()
    if lowered == "sast_source" or lowered.endswith(_SAFE_SUFFIXES):
        return False
    return any(part in lowered for part in _SENSITIVE_PARTS)


def canonical_json(data: Any) -> bytes:
    """Return the RFC 8785 (JSON Canonicalization Scheme) bytes of JSON *data*."""
    return rfc8785.dumps(data)


@dataclass(frozen=True)
class PreparedGraph:
    """A document ready for upload, its canonical body bytes, and its sync id.

    ``body`` is the RFC 8785 serialization of ``document``; ``sync_id`` is ``graph_`` + the
    SHA-256 hex of ``body``.
    """

    document: GraphDocument
    body: bytes
    sync_id: str

    @property
    def facts(self) -> int:
        """How many facts (nodes, edges and events) the prepared document holds."""
        return self.document.fact_count


def prepare_for_cloud(
    doc: GraphDocument | Mapping[str, Any], *, rho_only: bool = True
) -> PreparedGraph:
    """Validate *doc*, apply the privacy rules and the bounds of Rho Cloud, and compute its id.

    The input is never changed; the result does not depend on the order of facts or keys.
    With *rho_only* (the default), the facts of the kinds rho-mission writes (its missions,
    features, joins, checks, budget decisions and tasks) keep only the attributes it writes;
    every other fact (a session with its ``MESSAGE_COUNT``, a tool, any kind another producer
    of the contract defines, under ``rho/`` or not) gets the contract's sensitive-name rule, as
    ``rho_only=False`` gives every fact.

    Raises:
        GraphValidationError: *doc* breaks the ``rho.graph/v1`` contract.
        GraphLimitError: a count, an attribute bound or the body size exceeds what Rho Cloud
            accepts, e.g. ``graph has 260 nodes; Rho Cloud accepts at most 250``.
        SensitiveKeyCollisionError: a sensitive ``k`` sits next to an existing ``k_sha256``.
    """
    graph = validate_graph(doc)
    _check_counts(graph)
    nodes = [_prepare_fact(node, "node", rho_only) for node in graph.nodes]
    edges = [_prepare_fact(edge, "edge", rho_only) for edge in graph.edges]
    prepared = sort_facts(
        GraphDocument(
            schema_version=graph.schema_version,
            generated_at=graph.generated_at,
            scope=_cloud_scope(graph.scope),
            nodes=nodes,
            edges=edges,
            events=[_prepare_event(event) for event in graph.events],
        )
    )
    body = canonical_json(_document_data(prepared))
    if len(body) > MAX_BODY_BYTES:
        raise GraphLimitError(
            f"graph body is {len(body)} bytes; Rho Cloud accepts at most 1 MiB",
            what="body bytes",
            count=len(body),
            limit=MAX_BODY_BYTES,
        )
    return PreparedGraph(prepared, body, "graph_" + hashlib.sha256(body).hexdigest())


def _check_counts(graph: GraphDocument) -> None:
    counts = (
        ("nodes", len(graph.nodes), MAX_NODES),
        ("edges", len(graph.edges), MAX_EDGES),
        ("events", len(graph.events), MAX_EVENTS),
        ("facts", graph.fact_count, MAX_FACTS),
    )
    for what, count, limit in counts:
        if count > limit:
            raise GraphLimitError(
                f"graph has {count} {what}; Rho Cloud accepts at most {limit}",
                what=what,
                count=count,
                limit=limit,
            )


def _cloud_scope(scope: Scope) -> Scope:
    return scope.model_copy(update={"tenant_id": None})


def _cloud_provenance(provenance: Provenance) -> Provenance:
    evidence = [_cloud_evidence(item) for item in provenance.evidence]
    return provenance.model_copy(update={"evidence": evidence})


def _cloud_evidence(evidence: Evidence) -> Evidence:
    if _URI_DIGEST.fullmatch(evidence.uri):
        return evidence
    digest = sha256_hex(evidence.uri)
    return evidence.model_copy(update={"uri": f"sha256:{digest}"})


_Fact = TypeVar("_Fact", Node, Edge)


def _prepare_fact(fact: _Fact, label: str, rho_only: bool) -> _Fact:
    """A node or an edge as Rho Cloud receives it (*label* names it in errors)."""
    kind = entity_type_of(fact.id, fact.attributes) if label == "node" else fact.kind
    # rho-mission's allow-list for the kinds it writes; the contract's rule (the sensitive
    # names alone) for every other kind, in rho's namespace or not (a session's MESSAGE_COUNT).
    ours = rho_only and is_rho_mission_fact(label, fact.id, fact.attributes)
    own = functools.partial(allowed_value, label, kind) if ours else None
    return fact.model_copy(
        update={
            "scope": _cloud_scope(fact.scope),
            "provenance": _cloud_provenance(fact.provenance),
            "attributes": _cloud_attributes(label, fact.id, fact.attributes, own),
        }
    )


def _prepare_event(event: Event) -> Event:
    return event.model_copy(
        update={
            "scope": _cloud_scope(event.scope),
            "provenance": _cloud_provenance(event.provenance),
        }
    )


def _cloud_attributes(
    fact: str,
    fact_id: str,
    attributes: Mapping[str, str],
    own: Callable[[str, str], bool] | None,
) -> dict[str, str]:
    """Return *attributes* as Rho Cloud receives them: hashed, without ``tenant_id``, bounded.

    With *own* (whether rho writes that key, with that value, on the fact), a key and value
    that are not rho's
    are hashed whatever the key's name; the others, by the sensitive-name rule.

    Raises:
        SensitiveKeyCollisionError: a hashed ``k`` sits next to an existing ``k_sha256``.
        GraphLimitError: more than 64 attributes, a key outside 1..64 characters, or a value
            over 512 characters (judged on the result, since that is what is sent).
    """
    result: dict[str, str] = {}
    for key, value in attributes.items():
        if key.lower() == "tenant_id":
            continue
        clear = own is None or own(key, value)
        if key.lower().endswith("_sha256") or (clear and not is_sensitive_key(key)):
            result[key] = _digest_value(key, value)  # a digest key keeps digests only
        elif f"{key}_sha256" in attributes:
            raise SensitiveKeyCollisionError(fact, fact_id, key)
        else:
            result[f"{key}_sha256"] = sha256_hex(value)
    _check_attribute_bounds(fact, fact_id, result)
    return dict(sorted(result.items()))


def _digest_value(key: str, value: str) -> str:
    """*value*, or its SHA-256 when *key* names a digest that *value* is not."""
    if key.lower().endswith("_sha256") and _HEX_DIGEST.fullmatch(value) is None:
        return sha256_hex(value)
    return value


def _check_attribute_bounds(fact: str, fact_id: str, attributes: Mapping[str, str]) -> None:
    label = fact_label(fact, fact_id)
    if len(attributes) > MAX_ATTRIBUTES:
        _fact_limit(
            f"{label} has {len(attributes)} attributes; Rho Cloud accepts at most {MAX_ATTRIBUTES}",
            ("attributes", len(attributes), MAX_ATTRIBUTES, fact, fact_id),
        )
    for key, value in attributes.items():
        if not 1 <= len(key) <= MAX_KEY_CHARS:
            _fact_limit(
                f"{label} has attribute key {quote(key)} of {len(key)} characters;"
                f" Rho Cloud accepts 1 to {MAX_KEY_CHARS}",
                ("attribute key characters", len(key), MAX_KEY_CHARS, fact, fact_id),
            )
        if len(value) > MAX_VALUE_CHARS:
            _fact_limit(
                f"{label} attribute {quote(key)} has a value of {len(value)} characters;"
                f" Rho Cloud accepts at most {MAX_VALUE_CHARS}",
                ("attribute value characters", len(value), MAX_VALUE_CHARS, fact, fact_id),
            )


def _fact_limit(message: str, details: tuple[str, int, int, str, str]) -> NoReturn:
    what, count, limit, fact, fact_id = details
    raise GraphLimitError(message, what=what, count=count, limit=limit, fact=fact, fact_id=fact_id)
