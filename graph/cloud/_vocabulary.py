"""The attributes rho itself writes, per node ``entity_type`` and per edge kind, and the shape
of each one's value.

Rho Cloud receives an attribute as it is (after the other privacy rules of ``_prepare``) only
when rho writes that key for that fact and its value has the shape rho gives it: a count, a
digest, one of the status words. Any other key, and a value of another shape, is hashed
(``k`` becomes ``k_sha256``). A ``mission-graph.json`` edited by hand (or by a task) to carry
``description`` or ``notes``, or a ``status`` holding a sentence, uploads digests only: the rule
of sensitive key names alone would trust the names.

Keep in step with ``rho_mission/records/_projection.py``, which writes them (a test compares
the two on real missions and stores).

Decision: docs/decisions/0302-cloud-allow-lists.md
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["RHO_NAMESPACE", "allowed_value", "entity_type_of", "is_rho_mission_fact"]

# The namespace of the Rho graph's ids. Not every fact in it is rho-mission's: the Rho graph
# also holds sessions, tools and other kinds (``rho/session/...``, ``rho/tool/...``) whose
# attributes the contract's sensitive-name rule prepares; the allow-list holds for the
# kinds rho-mission writes alone (`is_rho_mission_fact`).
RHO_NAMESPACE = "rho/"

_COUNT = re.compile(r"[0-9]{1,12}")
_DIGEST = re.compile(r"[0-9a-f]{64}")
_STATUSES = frozenset(
    {
        "planning",
        "executing",
        "pending",
        "in_progress",
        "reviewing",
        "completed",
        "failed",
        "partial",
        "skipped",
        "cancelled",
        "passed",
        "fixed",
    }
)
_WORDS: Mapping[str, frozenset[str]] = {
    "status": _STATUSES,
    "tests_passed": frozenset({"true", "false"}),
    "dependency_type": frozenset({"blocks", "related", "parent-child"}),
    "data_classification": frozenset({"metadata_only"}),
    "entity_type": frozenset(
        {"mission", "mission_feature", "wave_join", "verification", "task", "budget_decision"}
    ),
    "planning_status": frozenset({"running", "completed", "failed"}),
    "conflict_outcome": frozenset({"resolved", "replayed", "failed"}),
    "decision": frozenset({"stop"}),
    "hard": frozenset({"true", "false"}),
}
# What attempts spent: numbers only, on the mission, its features and its joins.
_USAGE = (
    "usage_cost_microusd",
    "usage_input_tokens",
    "usage_output_tokens",
    "usage_cached_input_tokens",
    "usage_attempt_count",
    "usage_unknown_count",
)

_COMMON = ("entity_type", "data_classification")
_NODE_KEYS: Mapping[str, frozenset[str]] = {
    "mission": frozenset(
        {
            *_COMMON,
            "status",
            "feature_count",
            "completed_count",
            "failed_count",
            "wave_count",
            "planned_wave_count",
            "max_workers",
            "prompt_sha256",
            "base_commit_sha256",
            "integration_branch_sha256",
            # A mission made from a prompt: its planning stage and the digests of what it kept.
            "planning_status",
            "prd_sha256",
            "plan_sha256",
            *_USAGE,
            # How integration went (rho_mission/records/_stats): counts, each only when not 0.
            "conflict_driver_count",
            "conflict_resolved_count",
            "conflict_replayed_count",
            "conflict_failed_count",
            "bisect_run_count",
            "culprit_count",
            "culprit_landed_count",
        }
    ),
    "mission_feature": frozenset(
        {
            *_COMMON,
            "status",
            "attempts",
            "blocker_count",
            "description_sha256",
            "expected_behavior_sha256",
            "wave",
            "files_changed_count",
            "tests_passed",
            "branch_sha256",
            "command_sha256",
            "error_sha256",
            # A merge that conflicted at its join: counts and digests only.
            "conflict_outcome",
            "conflict_path_count",
            "conflict_with_count",
            "conflict_paths_sha256",
            "conflict_reason_sha256",
            "resolve_attempts",
            "replays",
            *_USAGE,
            "usage_model_sha256",
        }
    ),
    "wave_join": frozenset(
        {
            *_COMMON,
            "status",
            "wave",
            "feature_count",
            "completed_count",
            "failed_count",
            "cancelled_count",
            "blocked_count",
            "conflicted_count",
            *_USAGE,
        }
    ),
    "verification": frozenset(
        {
            *_COMMON,
            "status",
            "wave",
            "attempts",
            "fix_attempts",
            "flaky_count",
            "bisect_run_count",
            "culprit_count",
            "duration_ms",
            "command_sha256",
            "fix_command_sha256",
            "error_sha256",
        }
    ),
    # A run a budget stopped (``--budget-usd``, ``--budget-tokens``): the decision, in numbers.
    "budget_decision": frozenset(
        {
            *_COMMON,
            "decision",
            "hard",
            "reason_sha256",
            "budget_microusd",
            "budget_tokens",
            "spent_microusd",
            "spent_tokens",
        }
    ),
    "task": frozenset(
        {
            *_COMMON,
            "status",
            "attempts",
            "dependency_count",
            "blocker_count",
            "subject_sha256",
            "description_sha256",
        }
    ),
}
_EDGE_KEYS: Mapping[str, frozenset[str]] = {
    kind: frozenset({"dependency_type"}) for kind in ("depends_on", "contains", "references")
}
# A node without an entity_type is known by the prefix of its id, as rho names them.
_ID_PREFIXES = (
    ("rho/mission-feature/", "mission_feature"),
    ("rho/mission-wave/", "wave_join"),
    ("rho/mission/", "mission"),
    ("rho/verification/", "verification"),
    ("rho/budget/", "budget_decision"),
    ("rho/task/", "task"),
)


def entity_type_of(fact_id: str, attributes: Mapping[str, str]) -> str:
    """The ``entity_type`` a node says it is, else the one its id says; ``""`` when neither."""
    claimed = attributes.get("entity_type", "")
    if claimed in _NODE_KEYS:
        return claimed
    return next((kind for prefix, kind in _ID_PREFIXES if fact_id.startswith(prefix)), "")


# The ids of the edges rho-mission writes (``records/_projection``).
_EDGE_PREFIXES = (
    "rho/edge/mission/",
    "rho/edge/mission-feature/",
    "rho/edge/mission-wave/",
    "rho/edge/task/",
)


def is_rho_mission_fact(fact: str, fact_id: str, attributes: Mapping[str, str]) -> bool:
    """Whether a node or an edge (*fact*) is of a kind rho-mission writes: a node whose id
    has the prefix of one of them (``rho/mission/``, ``rho/mission-feature/``, ...) or that
    claims one of their entity types within ``rho/``; an edge whose id has the prefix of
    rho-mission's edges. A session, a tool or any other kind of the Rho graph is not."""
    if fact == "edge":
        return fact_id.startswith(_EDGE_PREFIXES)
    if any(fact_id.startswith(prefix) for prefix, _ in _ID_PREFIXES):
        return True
    return fact_id.startswith(RHO_NAMESPACE) and attributes.get("entity_type") in _NODE_KEYS


def allowed_value(fact: str, kind: str, key: str, value: str) -> bool:
    """Whether rho writes *key* on such a fact (*kind*: a node's entity type, an edge's kind)
    with a value of the shape of *value*."""
    keys = _EDGE_KEYS if fact == "edge" else _NODE_KEYS
    if key not in keys.get(kind, frozenset()):
        return False
    if key in _WORDS:
        return value in _WORDS[key]
    if key.endswith("_sha256"):
        return _DIGEST.fullmatch(value) is not None
    return _COUNT.fullmatch(value) is not None  # counts, attempts, waves, durations
