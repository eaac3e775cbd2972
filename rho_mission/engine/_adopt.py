"""What a crash left finished: a resume adopts it, and counts what it spent, from the journal.

mission.json is written at joins; between two joins only the journal records what happened,
line by line as it happens: each attempt's end (a ``ref`` event, ``why`` ``end``: the head the
attempt left its feature branch at, as a digest, written before the branch is trusted there),
its usage (``usage``: numbers only) and the feature's end (``finish``). A run killed in the
middle of a wave (kill -9, the OOM killer, a power cut) leaves features whose work is done but
which mission.json still has to do. Before a resume runs anything, `adopt_finished` reads the
journal once:

- every usage record it holds is the mission's, keyed by attempt as always (a record read
  twice counts once): one mission.json lacks is taken with its numbers (the model's name and
  the reason of an unknown one are not in the journal); one it has stays, unless the
  journal's for the same attempt spent more (a task can add to what it spent, never hide it);
- every feature keeps the highest attempt number the journal holds for it, so its next
  attempt is a new one (its usage never replaces an earlier attempt's);
- a feature not completed whose last event (of ``dispatch``, ``replay``, ``finish``,
  ``adopt``) is a ``completed`` finish is adopted, completed with its work, when its branch
  is where that attempt left it (the journal's last move of the branch is that attempt's end,
  at the commit the branch holds) and that commit holds the wave's start (the integration
  head mission.json recorded). Its handoff is made again from git (the commit, None when the
  branch is at the start; the files it changed, whose count must be its finish's; the count
  as summary: a library worker's own summary is not in the journal). Anything else runs
  again, as before. Each adoption is journaled (``adopt``).

This is the record a resolve or a replay cut short by a crash already resumes from (refs
journaled before they move, ``git._refs``; usage keyed by attempt): no second record is kept.

Decision: docs/decisions/0501-missions.md, docs/decisions/0706-what-rho-reads-back.md
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from ..git._commit import changed_files
from ..git._refs import RefHistory
from ..git._repo import GitRepo
from ..records._clock import now_rfc3339_millis
from ..records._document import Feature, Handoff, MissionDocument
from ..records._journal import Journal, journal_entries
from ..records._logs import log_path
from ..records._places import mission_ref_prefix
from ..records._usage import AttemptUsage

__all__ = ["adopt_finished"]

# The events that start or end a feature's run: the last one says where it was left.
_MARKS = ("dispatch", "replay", "finish", "adopt")
_USAGE_FIELDS = (
    "stage",
    "wave",
    "attempt",
    "source",
    "agent",
    "cost_usd",
    "input_tokens",
    "output_tokens",
    "cached_input_tokens",
    "stopped_by_budget",
)
_LOST_REASON = "read before a crash: the journal keeps no reason"


@dataclass
class _Run:
    """What the journal says of one feature: its last mark, its last dispatch's time, and the
    highest attempt number seen."""

    last: dict[str, Any]
    started: str | None = None
    attempts: int = 0


def adopt_finished(
    repo: GitRepo, mission: MissionDocument, journal: Journal, history: RefHistory
) -> list[Feature]:
    """Take what the journal of *mission* holds beyond mission.json (see the module): its
    usage records and attempt numbers; the features adopted, now ``completed``."""
    entries = journal_entries(journal.path)
    _take_usage(mission, entries)
    mission.usage = mission.total_usage()
    runs = _runs(entries)
    for feature in mission.features:
        if (run := runs.get(feature.id)) is not None:
            feature.attempts = max(feature.attempts, run.attempts)
    finished = [
        (feature, run)
        for feature in mission.features
        if feature.status != "completed"
        and (run := runs.get(feature.id)) is not None
        and _finished(run.last)
    ]
    return _adopt_checked(repo, mission, journal, history, finished) if finished else []


def _adopt_checked(
    repo: GitRepo,
    mission: MissionDocument,
    journal: Journal,
    history: RefHistory,
    finished: list[tuple[Feature, _Run]],
) -> list[Feature]:
    """Adopt those of the *finished* features whose branch holds their work (`_work`)."""
    heads = repo.refs_under(mission_ref_prefix(mission.id))
    start = mission.integration_head or mission.base_commit
    adopted = []
    for feature, run in finished:
        handoff = _work(repo, history, feature, heads, start, run.last)
        if handoff is not None:
            _adopt(mission, feature, run, handoff)
            _journal_adoption(journal, feature)
            adopted.append(feature)
    return adopted


def _runs(entries: Iterable[dict[str, Any]]) -> dict[str, _Run]:
    """Each feature's `_Run`, by id, from the journal's entries in order."""
    runs: dict[str, _Run] = {}
    for entry in entries:
        feature_id, event = entry.get("feature_id"), entry.get("event")
        if not isinstance(feature_id, str):
            continue
        if event in _MARKS:
            run = runs.setdefault(feature_id, _Run(entry))
            run.last = entry
            if event == "dispatch":
                run.started = _text(entry.get("at"))
        attempt = _attempt_number(entry)
        if attempt and feature_id in runs:
            runs[feature_id].attempts = max(runs[feature_id].attempts, attempt)
    return runs


def _attempt_number(entry: dict[str, Any]) -> int:
    """The attempt of its task that *entry* names (0: none): a finish's count, a replay's or a
    task usage's number."""
    event = entry.get("event")
    if event == "finish":
        number = entry.get("attempts")
    elif event == "replay" or (event == "usage" and entry.get("stage") == "task"):
        number = entry.get("attempt")
    else:
        return 0
    return number if type(number) is int and number > 0 else 0


def _finished(last: dict[str, Any]) -> bool:
    """Whether *last* ended a run with work: a completed finish, or an adoption (a resume
    that a crash cut short before mission.json said so)."""
    event = last.get("event")
    return event == "adopt" or (event == "finish" and last.get("status") == "completed")


def _work(
    repo: GitRepo,
    history: RefHistory,
    feature: Feature,
    heads: dict[str, str],
    start: str,
    finish: dict[str, Any],
) -> Handoff | None:
    """The handoff of *feature*'s finished attempt, checked as the module says, or None."""
    branch = feature.branch
    head = heads.get(branch) if branch is not None else None
    if branch is None or head is None or not history.attempt_ended_at(branch, head):
        return None  # moved since that attempt's end (or never ended there)
    if not repo.is_ancestor(start, head):
        return None
    files = changed_files(repo, start, head) if head != start else []
    if len(files) != finish.get("files_changed_count"):
        return None
    return Handoff.of_work(None if head == start else head, files)


def _adopt(mission: MissionDocument, feature: Feature, run: _Run, handoff: Handoff) -> None:
    feature.status = "completed"
    feature.error = None
    feature.conflict = None
    feature.handoff = handoff
    feature.started_at = run.started or feature.started_at
    feature.completed_at = _text(run.last.get("at")) or now_rfc3339_millis()
    log = log_path(mission, feature.id)
    feature.log = f"logs/{log.name}" if log.exists() else None


def _journal_adoption(journal: Journal, feature: Feature) -> None:
    handoff = feature.handoff
    assert handoff is not None  # just adopted with it
    journal.record(
        "adopt",
        now_rfc3339_millis(),
        feature_id=feature.id,
        attempt=feature.attempts,
        files_changed_count=len(handoff.files_changed),
    )


# -- usage -------------------------------------------------------------------------------------


def _take_usage(mission: MissionDocument, entries: Iterable[dict[str, Any]]) -> None:
    """Keep every journaled usage record mission.json lacks (or holds with a smaller spend)."""
    features = {feature.id: feature for feature in mission.features}
    for (owner, _), record in _journaled_usage(entries).items():
        feature = features.get(owner) if owner is not None else None
        if owner is not None and feature is None:
            continue  # not a feature of this mission
        kept = feature.attempt_usage if feature is not None else mission.stage_usage
        old = next((r for r in kept if r.key == record.key), None)
        if old is not None and _spend(record) <= _spend(old):
            continue
        if feature is not None:
            feature.record_usage(record)
        else:
            mission.record_stage_usage(record)


def _journaled_usage(
    entries: Iterable[dict[str, Any]],
) -> dict[tuple[str | None, tuple[str, int, int]], AttemptUsage]:
    """Each attempt's usage in the journal, by owner (a feature, None: a join's stages) and
    key; of two records of one attempt, the larger spend."""
    found: dict[tuple[str | None, tuple[str, int, int]], AttemptUsage] = {}
    for entry in entries:
        owner = entry.get("feature_id")
        if entry.get("event") != "usage" or not (owner is None or isinstance(owner, str)):
            continue
        record = _usage_record(entry)
        if record is None:
            continue
        key = (owner, record.key)
        if key not in found or _spend(record) > _spend(found[key]):
            found[key] = record
    return found


def _usage_record(entry: dict[str, Any]) -> AttemptUsage | None:
    """The `AttemptUsage` of a journal ``usage`` event, or None when it does not make one."""
    fields = {name: entry[name] for name in _USAGE_FIELDS if entry.get(name) is not None}
    if "source" not in fields:
        fields["problem"] = _LOST_REASON
    try:
        record = AttemptUsage.model_validate(fields)
    except (ValidationError, RecursionError):
        return None
    if record.cost_usd is not None and not math.isfinite(record.cost_usd):
        return None
    return record


def _spend(record: AttemptUsage) -> tuple[float, int]:
    return (record.cost_usd or 0.0, (record.input_tokens or 0) + (record.output_tokens or 0))


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None
