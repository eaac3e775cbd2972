"""What ``rho mission show`` and ``rho mission list`` print for people, built from missions as
mission.json holds them (JSON objects; ``dir`` where the folder is now).

Both lanes print through here: the full CLI dumps its validated ``Mission`` (``model_dump`` in
JSON mode: the keys and values of mission.json), the quick lane has the file's objects. Plain
text, standard library only: see ``_plain``.

Decision: docs/decisions/0804-quick-lane.md
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..records._live import with_live_features
from ..records._logs import stage_wave
from ..records._missionwords import (
    conflict_words,
    dollars,
    merged_words,
    usage_cell,
    usage_words,
    what_words,
)
from ..records._places import feature_log, stage_log_found
from ..records._stats import integration_words, mission_stats
from ._plain import Cell, columns, natural_key, naturally, painted, shown

__all__ = ["merge_words", "mission_list_text", "mission_rows", "mission_text", "mission_what"]

JsonMission = Mapping[str, Any]


def _seconds(start: str | None, end: str | None) -> str:
    if not start or not end:
        return ""
    span = _span(start, end)
    return "?" if span is None else f"{span:.1f}s"


def _span(start: str, end: str) -> float | None:
    """Seconds from *start* to *end*; None for a time edited by hand (never a crash)."""
    from datetime import datetime  # here: the lane's other views need no datetime

    try:
        return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()
    except (TypeError, ValueError):
        return None


def _took(mission: JsonMission, started: str | None, completed: str | None) -> str:
    """The seconds rho ran the mission (summed over its runs), and from start to end beside
    it when that is longer (after a resume: the time between runs is not work)."""
    span = _seconds(started, completed) or "-"
    ran = mission.get("run_seconds")
    if not isinstance(ran, (int, float)) or isinstance(ran, bool) or not 0 <= ran < 10**9:
        return span  # written before rho counted it, or edited by hand
    whole = _span(started, completed) if started and completed else None
    if whole is not None and whole - ran >= 1.0:
        return f"{ran:.1f}s ({span} from start to end, over more than one run)"
    return f"{ran:.1f}s"


def _took_ms(milliseconds: object) -> str:
    # A count of milliseconds as mission.json holds it; one no float holds (edited by hand) is "?".
    if isinstance(milliseconds, int) and 0 <= milliseconds < 10**15:
        return f"{milliseconds / 1000:.1f}s"
    return "?"


def _log_line(path: Path) -> str:
    return f"  log: {shown(str(path))}" + ("" if os.path.lexists(path) else " (none written)")


def _stage_log(mission: JsonMission, stage: str, name: str) -> Path:
    features = {feature["id"] for feature in mission["features"]}
    return stage_log_found(mission["dir"], stage, name, features)


def mission_text(mission: JsonMission, state: str) -> str:
    """Header, one table of features by wave, then the joins.

    *state* is the mission's status, or ``interrupted`` (see ``mission_state``). A running
    mission's features are shown as the journal says they are now (``records._live``).
    """
    mission = _now(mission, state)
    lines = [f"mission {shown(mission['id'])}  {painted(state, state)}"]
    if state == "interrupted":
        lines.append(
            "no process runs this mission any more (it was killed or crashed): "
            f"resume it with 'rho mission resume {shown(mission['dir'])}'"
        )
    started, completed = mission["started_at"], mission["completed_at"]
    lines += [
        f"prompt: {shown(mission['prompt'])}",
        f"base {shown(mission['base_commit'][:12])}  "
        f"integration {shown(mission['integration_branch'])}",
        f"started {started or '-'}  completed {completed or '-'}  "
        f"took {_took(mission, started, completed)}",
        *_usage_lines(mission),
        *_setup_summary(mission),
        *_planning_lines(mission),
        "features",
        *_feature_table(mission),
        *_feature_details(mission),
    ]
    for join in mission["wave_joins"]:
        took = _seconds(join["started_at"], join["completed_at"])
        lines.append(f"{shown(join['summary'])}  ({took})")
        spent = usage_words(join.get("usage"))
        if spent:
            lines.append(f"  usage: {shown(spent)}")
        lines += _verification_lines(mission, join)
    integrated = integration_words(mission_stats(mission))
    if integrated:
        lines.append(f"integration: {integrated}")
    if mission["held"]:
        count = len(mission["held"])
        lines.append(
            f"not run: {count} task(s) held by the task store (its statuses, agents' claims)"
        )
        for held in sorted(mission["held"], key=lambda h: natural_key(h["id"])):
            lines.append(f"  {shown(held['id'])}: {shown(held['reason'])}")
    return "\n".join(lines) + "\n"


def _counts_usage(mission: JsonMission) -> bool:
    """Whether the mission recorded any usage, or was asked to (an agent named, a budget)."""
    config = mission.get("config")
    asked = type(config) is dict and any(
        config.get(name) is not None
        for name in ("agent", "planner_agent", "resolve_agent", "budget_usd", "budget_tokens")
    )
    return asked or usage_words(mission.get("usage")) is not None


def _usage_lines(mission: JsonMission) -> list[str]:
    """The mission's spend, its budgets and what stopped it; nothing for a mission that
    recorded none and was asked for none. Optional fields: their shapes are checked."""
    if not _counts_usage(mission):
        return []
    spent = usage_words(mission.get("usage")) or "nothing recorded"
    lines = [f"usage: {shown(spent)}"]
    total = mission.get("usage")
    unknown = total.get("unknown") if type(total) is dict else 0
    if isinstance(unknown, int) and unknown:
        lines[0] += f" ({unknown} attempt(s) whose usage could not be read: see each task)"
    config = mission.get("config")
    budgets = []
    if type(config) is dict:
        if isinstance(config.get("budget_usd"), int | float):
            budgets.append(dollars(config["budget_usd"]))
        if isinstance(config.get("budget_tokens"), int):
            budgets.append(f"{config['budget_tokens']:,} tokens")
    if budgets:
        hard = " (hard)" if type(config) is dict and config.get("budget_hard") is True else ""
        lines.append(f"budget: {' and '.join(budgets)}{hard}")
    stop = mission.get("budget_stop")
    if isinstance(stop, str):
        lines.append(f"stopped: {shown(stop)}")
    return lines


def _planning_lines(mission: JsonMission) -> list[str]:
    """What a mission made from a prompt says of its planning stage (nothing for the others).

    The quick lane's reader does not check this optional field: its shape is checked here.
    """
    planning = mission.get("planning")
    if type(planning) is not dict or not isinstance(planning.get("status"), str):
        return []
    status, error = planning["status"], planning.get("error")
    plain = "one batch" if planning.get("plain") is True else "in waves"
    words = {
        "running": "planning: the planner runs (or ran until a crash)",
        "completed": f"planning: completed, {len(mission['features'])} task(s), {plain}; "
        "the PRD and the plan are prd.md and plan.json of the mission folder",
        "failed": f"planning: failed: {shown(error) if isinstance(error, str) else '-'}",
    }
    lines = [words.get(status, f"planning: {shown(status)}")]
    spent = _stage_usage(mission, "plan")
    if spent:
        lines.append(f"  usage: {shown(spent)}")
    return [*lines, _log_line(feature_log(mission["dir"], "plan"))]


def _stage_usage(mission: JsonMission, stage: str, wave: int | None = None) -> str | None:
    """What the attempts of a stage (the planner, a join's checks and fixes) spent, in words."""
    records = mission.get("stage_usage")
    if type(records) is not list:
        return None
    mine = [
        r for r in records if type(r) is dict and r.get("stage") == stage and r.get("wave") == wave
    ]
    if not mine:
        return None
    known = [r for r in mine if r.get("source") is not None]
    total: dict[str, object] = {"attempts": len(mine), "unknown": len(mine) - len(known)}
    for name in ("cost_usd", "input_tokens", "output_tokens"):
        values = [r[name] for r in known if isinstance(r.get(name), int | float)]
        if values:
            total[name] = sum(values)
    return usage_words(total)


def _stopped(joins: Sequence[JsonMission]) -> dict[str, str]:
    """``blocked`` or ``not run`` per pending feature a join listed so."""
    found: dict[str, str] = {}
    for join in joins:
        found.update(dict.fromkeys(join["not_run_ids"], "not run"))
        found.update(dict.fromkeys(join["blocked_ids"], "blocked"))
    return found


def _feature_table(mission: JsonMission) -> list[str]:
    headers = ["wave", "task", "status", "tries", "took", "files", "branch", "note"]
    # The cost column only where the mission counts usage: the others' tables stay as they were.
    costed = _counts_usage(mission)
    if costed:
        headers.insert(5, "cost")
    stopped = _stopped(mission["wave_joins"])
    by_id = {feature["id"]: feature for feature in mission["features"]}
    rows = []
    for number, wave in enumerate(mission["waves"], start=1):
        for feature_id in naturally(wave):
            feature = by_id[feature_id]
            row = [(str(number), None), *_feature_row(feature, stopped.get(feature_id))]
            if costed:
                row.insert(5, (usage_cell(feature.get("usage")), None))
            rows.append(row)
    return columns(headers, rows)


def _feature_row(feature: JsonMission, stopped: str | None) -> list[Cell]:
    handoff = feature["handoff"]
    files = str(len(handoff["files_changed"])) if handoff else ""
    note = feature["error"] or (handoff["summary"] if handoff else feature["description"])
    status = stopped if feature["status"] == "pending" and stopped else feature["status"]
    branch = (feature["branch"] or "") if _ran(feature) else ""  # only then has it a branch
    return [
        (shown(feature["id"]), None),
        (shown(status), status),
        (str(feature["attempts"]), None),
        (_seconds(feature["started_at"], feature["completed_at"]), None),
        (files, None),
        (shown(branch), None),
        (shown(note or ""), None),
    ]


def _ran(feature: JsonMission) -> bool:
    return bool(feature["attempts"] > 0 or feature["status"] != "pending")


def _feature_details(mission: JsonMission) -> list[str]:
    """Per feature that ran: status, attempts, duration and error, then where its log is."""
    by_id = {feature["id"]: feature for feature in mission["features"]}
    lines: list[str] = []
    for feature_id in (i for wave in mission["waves"] for i in naturally(wave)):
        feature = by_id[feature_id]
        if not _ran(feature):
            continue
        took = _seconds(feature["started_at"], feature["completed_at"])
        head = f"{feature['id']}: {feature['status']}, {feature['attempts']} attempt(s)"
        head += f", {took}" if took else ""
        head += f": {feature['error']}" if feature["error"] else ""
        lines += [
            shown(head),
            _log_line(feature_log(mission["dir"], feature["id"])),
            *_feature_usage_lines(feature),
            *_setup_lines(mission, feature),
            *_conflict_lines(mission, feature),
        ]
    return lines


_SETUP_WORDS = {
    "ran": "ran in worktree {}",
    "reused": "reused worktree {} (its key held, its outputs unchanged)",
    "failed": "failed in worktree {}",
}


def _setup_lines(mission: JsonMission, feature: JsonMission) -> list[str]:
    """Where its last attempt's worktree setup ran, or which set-up worktree it reused."""
    setup = feature.get("setup")
    if type(setup) is not dict or setup.get("outcome") not in _SETUP_WORDS:
        return []
    worktree = str(setup.get("worktree"))
    words = _SETUP_WORDS[setup["outcome"]].format(worktree)
    lines = [f"  setup: {shown(words)}, key {shown(str(setup.get('key')))}"]
    if setup["outcome"] != "reused":
        lines.append("  setup " + _log_line(_stage_log(mission, "setup", worktree)).lstrip())
    return lines


def _setup_summary(mission: JsonMission) -> list[str]:
    """How many setups ran, were reused and failed, over the features' last attempts."""
    config = mission.get("config")
    if type(config) is not dict or not (config.get("setup_command") or config.get("copy_paths")):
        return []
    outcomes = [
        f["setup"].get("outcome") for f in mission["features"] if type(f.get("setup")) is dict
    ]
    counts = {name: outcomes.count(name) for name in _SETUP_WORDS}
    command = config.get("setup_command")
    lines = []
    if isinstance(command, str):
        lines.append(
            f"setup: {shown(command)}: ran {counts['ran']}, reused {counts['reused']}, "
            f"failed {counts['failed']} (per task's last attempt)"
        )
    copies = config.get("copy_paths")
    if type(copies) is list and copies:
        lines.append(f"copied into every worktree: {shown(', '.join(map(str, copies)))}")
    return lines


def _feature_usage_lines(feature: JsonMission) -> list[str]:
    """What its attempts spent, and why an unknown one is unknown (the last reason)."""
    spent = usage_words(feature.get("usage"))
    if spent is None:
        return []
    lines = [f"  usage: {shown(spent)}"]
    records = feature.get("attempt_usage")
    if type(records) is list:
        unknown = [r for r in records if type(r) is dict and isinstance(r.get("problem"), str)]
        lines += [
            f"  unknown: {shown(_whose(r))}: {shown(r['problem'])}"
            for r in sorted(unknown, key=_ran_order)
        ]
        if any(type(r) is dict and r.get("stopped_by_budget") is True for r in records):
            lines.append("  an attempt was stopped by its agent's own budget cap")
        if any(type(r) is dict and r.get("source") == "usage_file_and_agent" for r in records):
            lines.append(
                "  read from both $RHO_USAGE_FILE and the agent's report: each figure the larger"
            )
    return lines


# Whose attempt a usage record is, by its stage.
_WHOSE = {
    "task": "the task's",
    "resolve": "the resolver's",
    "verify": "the checks'",
    "fix": "the fix's",
    "plan": "the planner's",
}


def _ran_order(record: JsonMission) -> tuple[int, int]:
    """Records in the order their attempts ran: the task's, then its resolver's."""
    stages = list(_WHOSE)
    stage = str(record.get("stage", "task"))
    number = record.get("attempt")
    return (
        stages.index(stage) if stage in stages else len(stages),
        number if type(number) is int else 0,
    )


def _whose(record: JsonMission) -> str:
    """``the resolver's attempt 2``: whose attempt a usage record is (a record edited by hand
    into another shape: ``an attempt``)."""
    whose = _WHOSE.get(str(record.get("stage", "task")), "an")
    number = record.get("attempt")
    return f"{whose} attempt {number}" if type(number) is int else f"{whose} attempt"


def _conflict_lines(mission: JsonMission, feature: JsonMission) -> list[str]:
    """What came of a feature's conflicted merge (``Feature.conflict``), and the resolver's log.

    Optional in mission.json (written before conflicts were recorded): its shape is checked.
    """
    conflict = feature.get("conflict")
    if type(conflict) is not dict or not isinstance(conflict.get("outcome"), str):
        return []
    met = conflict_words(conflict.get("paths") or [], conflict.get("with") or [])
    rungs = (
        f"{conflict.get('resolve_attempts', 0)} resolve attempt(s), "
        f"{conflict.get('replays', 0)} replay(s)"
    )
    head = f"  {met}: {conflict['outcome']} ({rungs})"
    lines = [shown(head)]
    if conflict.get("reason") and conflict["outcome"] == "failed":
        lines.append(shown(f"  why: {conflict['reason']}"))
    if conflict.get("resolve_attempts"):
        lines.append(_log_line(_stage_log(mission, "resolve", feature["id"])))
    return lines


def _verification_lines(mission: JsonMission, join: JsonMission) -> list[str]:
    """What the checks of a verified join said (``--verify``), and where their logs are."""
    checked = join["verification"]
    if checked["status"] == "skipped":
        return []
    if checked["status"] == "passed" and checked["attempts"] == 0:
        # The wave merged nothing: its head is one an earlier join's checks passed.
        return ["  verification: no check run: its head is unchanged since its checks passed"]
    head = f"  verification: {checked['status']}, {checked['attempts']} check(s)"
    if checked["fix_attempts"]:
        head += f", {checked['fix_attempts']} fix attempt(s)"
    if checked.get("flaky"):
        head += f", {checked['flaky']} flaky (failed, then passed on the same tree)"
    if checked["status"] != "running":
        head += f", {_took_ms(checked['duration_ms'])}"
    head += f": {checked['error']}" if checked["error"] and checked["status"] == "failed" else ""
    lines = [shown(head)]
    if checked["fix_error"]:
        lines.append(shown(f"  last fix: {checked['fix_error']}"))
    lines += _bisection_lines(mission, checked)
    for stage in ("verify", "fix"):
        spent = _stage_usage(mission, stage, join["wave"])
        if spent:
            lines.append(f"  {stage} usage: {shown(spent)}")
    names = [f"verify-{join['wave']}"] + (
        [f"fix-{join['wave']}"] if checked["fix_attempts"] else []
    )
    return lines + [_log_line(feature_log(mission["dir"], name)) for name in names]


def _bisection_lines(mission: JsonMission, checked: JsonMission) -> list[str]:
    """What a bisection of the join's failed checks did (``--bisect``): its check runs, and
    the culprits with the log that blamed each, or that the base failed too.

    Optional fields of mission.json (written before bisection was): shapes checked.
    """
    runs = checked.get("bisect_runs")
    if type(runs) is not int or runs <= 0:
        return []
    said = f"  bisection: {runs} check run(s)"
    if checked.get("base_failed") is True:
        return [f"{said}: the checks fail on the wave's base too, nobody blamed"]
    culprits = checked.get("culprit_ids")
    ids = [c for c in culprits if type(c) is str] if type(culprits) is list else []
    if not ids:
        return [f"{said}, no culprit found"]
    lines = [shown(f"{said}, {len(ids)} culprit(s): {', '.join(ids)}")]
    logs = checked.get("culprit_logs")
    for culprit in ids:
        log = logs.get(culprit) if type(logs) is dict else None
        # Shown only as the stage's own log: a hand edit of mission.json names no other file.
        stage = log.removeprefix("logs/").removesuffix(".log") if type(log) is str else ""
        if stage_wave(stage) is not None and log == f"logs/{stage}.log":
            where = _log_line(feature_log(mission["dir"], stage)).removeprefix("  log: ")
            lines.append(f"  culprit {shown(culprit)}: log {where}")
    return lines


def mission_what(mission: JsonMission) -> str:
    """What a mission is about, in a few words (``records._missionwords.what_words``)."""
    config = mission.get("config")
    from_store = type(config) is dict and bool(config.get("task_store"))
    features = mission["features"]
    subjects = [str(f["description"] or f["id"]) for f in features[:2]]
    return what_words(str(mission["prompt"]), from_store, subjects, len(features))


def merge_words(mission: JsonMission) -> str:
    """Where and how the mission was last merged, and whether it was cleaned.

    Optional fields of mission.json (written before merges were recorded): shapes checked.
    """
    merges = mission.get("merges")
    last = merges[-1] if type(merges) is list and merges and type(merges[-1]) is dict else None
    return merged_words(last, bool(mission.get("cleaned_at")))


def _now(mission: JsonMission, state: str) -> JsonMission:
    # Between two joins only the journal says what runs and what ended: read it for a mission
    # a run is on (an interrupted one is as its file says: nothing of it runs).
    return with_live_features(mission) if state == "executing" else mission


def mission_list_text(missions: Sequence[tuple[JsonMission, str]]) -> str:
    """One row per (mission, state): id, state, counts, where it was merged, start, what it
    is about, folder."""
    headers = ["id", "status", "features", "completed", "merged", "started", "what", "dir"]
    # A cost column once one of them recorded usage (the lists of the others stay as they were).
    costed = any(usage_words(mission.get("usage")) for mission, _ in missions)
    if costed:
        headers.insert(4, "cost")
    rows = []
    for recorded, state in missions:
        mission = _now(recorded, state)
        done = sum(1 for f in mission["features"] if f["status"] == "completed")
        row: list[Cell] = [
            (shown(mission["id"]), None),
            (shown(state), state),
            (str(len(mission["features"])), None),
            (str(done), None),
            (shown(merge_words(mission)), None),
            (mission["started_at"] or "", None),
            (shown(mission_what(mission)), None),
            (shown(mission["dir"]), None),
        ]
        if costed:
            row.insert(4, (usage_cell(mission.get("usage")), None))
        rows.append(row)
    lines = [f"{len(missions)} mission(s)", *columns(headers, rows)]
    if any(state == "interrupted" for _, state in missions):
        lines.append("interrupted: killed or crashed; resume with 'rho mission resume DIR'")
    return "\n".join(lines) + "\n"


def mission_rows(missions: Sequence[tuple[JsonMission, str]]) -> dict[str, Any]:
    """``rho mission list --json``: ``{"missions": [{id, status, state, dir, ...}]}``."""
    return {
        "missions": [
            {
                "id": m["id"],
                "status": m["status"],
                "state": state,
                "dir": m["dir"],
                "started_at": m["started_at"],
                "completed_at": m["completed_at"],
                "features": len(m["features"]),
                "what": mission_what(m),
                "merged": merge_words(m) or None,
                "usage": m.get("usage"),
                "budget_stop": m.get("budget_stop"),
            }
            for m, state in missions
        ]
    }
