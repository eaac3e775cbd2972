"""What a mission promised when it started, kept where its mission folder cannot weaken it.

``mission.json`` records a mission's signed-plan requirement and its sandbox, and a resume reads
``mission.json``. A task that rewrites it (``config.signed_plan: null``, another trusted key,
``sandbox: false``) would have the resume run unsigned or unsandboxed work. So when a mission
first runs, before any task does, rho also writes its guarantees to
``<git common dir>/rho-mission-<id>.guarantees.json`` (0600), and every later run refuses a
``mission.json`` that promises less: another plan or other keys, no sandbox, the network
back, more shown or more writable.

What holds: with ``--sandbox`` neither file is within a task's reach (the mission folder is
hidden, ``.git`` read-only). Without it a task runs as the user and could rewrite both: the
record stops a careless task, or one that knows only the mission folder, not a hostile task
that looks for it (docs/decisions/0701-threat-model.md). A mission that ran
before rho kept this record gets one at its next run, from what its ``mission.json`` says
then.

Decision: docs/decisions/0701-threat-model.md
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from taskstore import write_atomic

from .._errors import InvalidMissionError
from ._folders import open_unfollowed

__all__ = ["guarantees_path", "hold_guarantees"]


def guarantees_path(common_dir: Path, mission_id: str) -> Path:
    """``<common dir>/rho-mission-<id>.guarantees.json``: beside the mission's run lock."""
    return common_dir / f"rho-mission-{mission_id}.guarantees.json"


def hold_guarantees(common_dir: Path, mission_id: str, config: Any, *, first_run: bool) -> None:
    """Record *config*'s guarantees on a mission's first run; refuse a weaker one later.

    *config* is the mission's ``MissionConfig``. Call it holding the mission's run lock.

    Raises:
        InvalidMissionError: the mission started with a stronger requirement than its
            mission.json now states; nothing runs.
    """
    path = guarantees_path(common_dir, mission_id)
    found = _guarantees(config)
    recorded = None if first_run else _read(path)
    if recorded is None:
        write_atomic(path, (json.dumps(found, sort_keys=True) + "\n").encode())
        return
    problem = _weaker(recorded, found)
    if problem:
        raise InvalidMissionError(
            f"mission {mission_id} started {problem}, and its mission.json no longer says so; "
            f"refusing to run it (the mission folder was edited; the record is {path})"
        )


def _guarantees(config: Any) -> dict[str, Any]:
    return {
        "signed_plan": config.signed_plan,
        "signed_plan_sha256": config.signed_plan_sha256,
        "trusted_keys": sorted(config.trusted_keys),
        "sandbox": config.sandbox,
        "sandbox_network": config.sandbox_network,
        "sandbox_allow": sorted(config.sandbox_allow),
        "sandbox_allow_write": sorted(config.sandbox_allow_write),
        "sandbox_env": None if config.sandbox_env is None else sorted(config.sandbox_env),
    }


def _weaker(recorded: dict[str, Any], found: dict[str, Any]) -> str:
    # What the mission promised and mission.json no longer does, in a few words; "" if nothing.
    if recorded.get("signed_plan") and any(
        recorded.get(key) != found[key] for key in ("signed_plan", "trusted_keys")
    ):
        return "bound to a signed plan and its trusted keys"
    if recorded.get("sandbox") and not found["sandbox"]:
        return "with --sandbox"
    network_cut = recorded.get("sandbox") and recorded.get("sandbox_network") is False
    if network_cut and found["sandbox_network"]:
        return "with --sandbox-no-network"
    if recorded.get("sandbox") and not set(found["sandbox_allow"]) <= set(
        recorded.get("sandbox_allow") or []
    ):
        return "with a sandbox that showed less (--sandbox-allow)"
    if recorded.get("sandbox") and not set(found["sandbox_allow_write"]) <= set(
        recorded.get("sandbox_allow_write") or []
    ):
        return "with a sandbox that let the tasks write less (--sandbox-allow-write)"
    if recorded.get("sandbox") and _passes_more(recorded.get("sandbox_env"), found["sandbox_env"]):
        return "with a sandbox that passed fewer variables (--sandbox-env)"
    return ""


def _passes_more(recorded: list[str] | None, found: list[str] | None) -> bool:
    # None passes every variable; a list, the named ones.
    if recorded is None:
        return False
    return found is None or not set(found) <= set(recorded)


def _read(path: Path) -> dict[str, Any] | None:
    try:
        fd = open_unfollowed(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as handle:
        raw = handle.read()
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: '[' nested past the parser's depth
        data = None
    if not isinstance(data, dict):
        raise InvalidMissionError(
            f"{path} holds no mission guarantees (it is not the JSON object rho wrote); "
            "refusing to run the mission"
        )
    return data
