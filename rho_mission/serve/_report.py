"""``rho mission report``: the page of a mission as one static HTML file.

By default the report carries no text a person or an agent wrote or a task printed: the
prompt, descriptions, commands, log lines, file names, branches, paths and commits are left
out, and so is an error unless it has one of the engine's own fixed shapes (``command failed:
exit code 2``, ``timed out after 5s``, ...), since a library worker's or git's message may
quote any of them. What remains is ids, statuses, times, counts and join summaries.
``include_text`` puts the whole of mission.json and the failed features' log tails in.

Decision: docs/decisions/0801-serve.md, docs/decisions/0302-cloud-allow-lists.md
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._page import report_page

if TYPE_CHECKING:
    from ..records._document import Feature, MissionDocument, Verification, WaveJoin

__all__ = ["REPORT_TAIL_LINES", "report_html", "report_payload"]

#: Log lines a report shows for each failed feature (with ``include_text``).
REPORT_TAIL_LINES = 20
# ``held``: ids, statuses and rho's own words for why (``mission._selection``), like the
# features' ids.
# What attempts spent ("usage", numbers only) and a budget's stop (rho's own words and numbers).
_MISSION_KEYS = (
    "schema_version",
    "id",
    "status",
    "started_at",
    "completed_at",
    "waves",
    "held",
    "usage",
    "budget_stop",
)
_FEATURE_KEYS = ("id", "status", "attempts", "started_at", "completed_at", "blocked_by", "usage")
# Errors the engine writes itself, which quote nothing of a task (see _process.describe and
# _shell): shown in every report.
_OWN_ERROR = re.compile(
    r"(command failed: )?(exit code -?\d+|killed by SIG[A-Z0-9]+|timed out( after [0-9.e+-]+s)?"
    r"|cancelled)|not run|task [A-Za-z0-9._-]+ has no command"
)
_OWN_SUMMARY = re.compile(r"\d+ file\(s\) changed|no changes")
_JOIN_KEYS = (
    "usage",
    "wave",
    "feature_ids",
    "completed_ids",
    "failed_ids",
    "cancelled_ids",
    "blocked_ids",
    "not_run_ids",
    "started_at",
    "completed_at",
)
# The engine's words for a join (``engine._joins.join_record``); anything else in mission.json's
# summary was written by someone else and is left out.
_OWN_JOIN_SUMMARY = re.compile(
    r"wave \d+ joined \d+ feature\(s\), \d+ completed, \d+ failed(, \d+ cancelled)?"
    r"(, \d+ blocked)?(, \d+ downstream blocked)?(, \d+ conflicted)?"
    r"(, verifying|, verified|, verification (failed|cancelled)"
    r"|, its head unchanged since its checks passed)?"
)
# What a report without text keeps of a join's verification: no head commit, log path or digest.
_VERIFICATION_KEYS = ("status", "attempts", "fix_attempts", "flaky", "duration_ms")


def report_html(mission: MissionDocument, folder: Path, *, include_text: bool = False) -> str:
    """The report page of *mission*, whose folder is *folder*.

    Raises:
        UnsafePathError: with *include_text*, a link where a log should be.
        OSError: with *include_text*, a log cannot be read.
    """
    return report_page(report_payload(mission, folder, include_text=include_text))


def report_payload(
    mission: MissionDocument, folder: Path, *, include_text: bool = False
) -> dict[str, Any]:
    """What the page's renderer reads: ``{"mission", "tails", "text", "integration"}``, the
    last the integration counts in words (``records._stats``: counts only, in every report).

    Raises:
        UnsafePathError, OSError: see ``report_html``.
    """
    from ..records._stats import integration_words, mission_stats

    whole = mission.model_dump(mode="json")
    integration = integration_words(mission_stats(whole))
    if not include_text:
        payload = {"mission": _metadata_only(mission), "tails": {}, "text": False}
    else:
        payload = {"mission": whole, "tails": _tails(mission, folder), "text": True}
    return {**payload, "integration": integration}


def _tails(mission: MissionDocument, folder: Path) -> dict[str, list[str]]:
    from ..records._logs import read_tail
    from ..records._places import feature_log

    tails: dict[str, list[str]] = {}
    # The path comes from the feature id (a safe file name), never from its `log` field; a
    # failed verification's from its wave (``verify-<wave>``).
    failed = [feature.id for feature in mission.features if feature.status == "failed"]
    stages = [f"verify-{j.wave}" for j in mission.wave_joins if j.verification.status == "failed"]
    for name in failed + stages:
        # A feature's tail is its task's output (rho's lines around each attempt left out).
        path = feature_log(folder, name)
        lines = read_tail(path, REPORT_TAIL_LINES, output_only=name not in stages)
        if lines is not None:
            tails[name] = lines
    return tails


def _metadata_only(mission: MissionDocument) -> dict[str, Any]:
    data = mission.model_dump(mode="json", include=set(_MISSION_KEYS))
    data["wave_joins"] = [_join(join) for join in mission.wave_joins]
    data["features"] = [_feature(feature) for feature in mission.features]
    return data


def _join(join: WaveJoin) -> dict[str, Any]:
    # An allow-list, like the features': a field added to joins later stays out until named.
    data = join.model_dump(mode="json", include=set(_JOIN_KEYS))
    data["summary"] = join.summary if _OWN_JOIN_SUMMARY.fullmatch(join.summary) else ""
    data["verification"] = _verification(join.verification)
    return data


def _verification(checked: Verification) -> dict[str, Any]:
    data = checked.model_dump(mode="json", include=set(_VERIFICATION_KEYS))
    for key in ("error", "fix_error"):
        text = getattr(checked, key)
        if text is not None:
            data[key] = _error(text)
    return data


def _feature(feature: Feature) -> dict[str, Any]:
    data = feature.model_dump(mode="json", include=set(_FEATURE_KEYS))
    if feature.error is not None:
        data["error"] = _error(feature.error)
    if feature.handoff is not None:
        summary = feature.handoff.summary
        data["handoff"] = {
            "files_changed_count": len(feature.handoff.files_changed),
            "summary": summary if _OWN_SUMMARY.fullmatch(summary) else "",
            "tests_passed": feature.handoff.tests_passed,
        }
    return data


def _error(error: str) -> str:
    if _OWN_ERROR.fullmatch(error):
        return error
    return "(its text is left out of this report: rho mission report --include-text shows it)"
