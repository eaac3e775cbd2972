"""The usage readers of the agent profiles: what each agent's machine-readable output says it
spent, read from the end of an attempt's output.

Each reader takes the text of the attempt's output (its log from where the attempt started, at
most its last ``TAIL_BYTES``) and gives a `Reading`, or None when the output holds no report it
knows. The shapes are the agents' documented ones (examples/agents/README.md):

- claude ``-p --output-format json``: one object, ``"type": "result"``, with
  ``total_cost_usd``, ``usage`` (``input_tokens``, ``cache_creation_input_tokens``,
  ``cache_read_input_tokens``, ``output_tokens``), ``modelUsage`` (by model: ``inputTokens``,
  ``cacheCreationInputTokens``, ``cacheReadInputTokens``, ``outputTokens``, ``costUSD``; the
  tokens read from here: every call, and whole at a budget stop) and ``subtype``
  (``error_max_budget_usd`` when its ``--max-budget-usd`` stopped it);
- codex ``exec --json``: JSON lines; each ``turn.completed`` has ``usage`` (``input_tokens``,
  ``cached_input_tokens``, ``output_tokens``); no cost, no model;
- gemini ``-p --output-format json``: one object (indented) whose ``stats.models`` has, per
  model, ``tokens`` (``prompt``, ``candidates``, ``cached``, ``thoughts``); no cost;
- aider: a line per message, ``Tokens: 2.1k sent, 1.2k cache hit, 150 received. Cost: $0.01
  message, $0.02 session.`` (the cost part only when the model has a price; the counts
  rounded from 1,000 on), and, where its profile line passes ``--analytics-log``, that log's
  exact counts (``read_aider_analytics``).

The output is a task's writing: a reader never raises on it. A figure of the wrong type is
one the agent did not say; a number out of bounds (``Infinity``, a count of 400 digits) is
passed on as it is, for the record to refuse it with the reason (``records._usage``).

Decision: docs/decisions/0512-agent-verdicts.md, docs/decisions/0509-usage-and-budgets.md
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeAlias

from ..records._usagelimits import MAX_TOKENS

__all__ = [
    "AIDER_ANALYTICS",
    "READERS",
    "TAIL_BYTES",
    "Reader",
    "Reading",
    "objects_from_end",
    "read_aider_analytics",
]

# What a reader looks at: the attempt's last MiB of output. claude's and gemini's reports are
# at the very end, codex's last turns too; a 16 MiB log is never read whole.
TAIL_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Reading:
    """What an agent's output said it spent (a field None: it did not say)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int | None = None
    cost_usd: float | None = None
    model: str | None = None
    stopped_by_budget: bool = False


Reader: TypeAlias = Callable[[str], "Reading | None"]


def objects_from_end(text: str) -> Iterator[dict[str, Any]]:
    """The JSON objects that start a line of *text*, last first (one line, or indented over
    several: decoded from the ``{`` on), skipping what does not decode."""
    decoder = json.JSONDecoder()
    end = len(text)
    while end > 0:
        at = text.rfind("\n{", 0, end)
        start = at + 1 if at >= 0 else (0 if text.startswith("{") else -1)
        if start < 0:
            return
        try:
            found, _ = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):  # RecursionError: '[' nested past the parser
            found = None
        if isinstance(found, dict):
            yield found
        end = at if at >= 0 else 0


def _count(value: object) -> int | None:
    # A count is an integer (its bounds are the record's to check); JSON's true is not one.
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


def _dollars(value: object) -> float | None:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except OverflowError:  # an int of hundreds of digits: as far out of bounds as inf
        return math.inf
    # nan too (no comparison holds, so no "larger of the two" would keep it): out of bounds.
    return math.inf if math.isnan(number) else number


def _sum(*values: int | None) -> int | None:
    known = [value for value in values if value is not None]
    return sum(known) if known else None


def read_claude(text: str) -> Reading | None:
    """claude's result object: cost, tokens (cache writes and reads count as input), the model
    that cost most, and whether its own budget cap stopped it.

    The tokens are ``modelUsage``'s, summed over its models: it counts every call (side calls,
    other models) and stays whole at a ``--max-budget-usd`` stop, where ``usage`` is all
    zeros; ``usage`` only when ``modelUsage`` is missing."""
    for found in objects_from_end(text):
        if found.get("type") != "result":
            continue
        tokens = _claude_model_tokens(found.get("modelUsage"))
        if tokens is None:
            said = found.get("usage")
            usage: dict[str, Any] = said if isinstance(said, dict) else {}
            tokens = _claude_tokens(
                usage,
                ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"),
                "output_tokens",
            )
        return Reading(
            input_tokens=tokens[0],
            output_tokens=tokens[1],
            cached_input_tokens=tokens[2],
            cost_usd=_dollars(found.get("total_cost_usd")),
            model=_costliest(found.get("modelUsage")),
            stopped_by_budget=found.get("subtype") == "error_max_budget_usd",
        )
    return None


_Tokens: TypeAlias = tuple[int | None, int | None, int | None]
_MODEL_INPUT = ("inputTokens", "cacheCreationInputTokens", "cacheReadInputTokens")


def _claude_tokens(counts: dict[str, Any], inputs: tuple[str, str, str], output: str) -> _Tokens:
    """Input (fresh, cache writes and reads), output and cache reads of one usage object."""
    fresh, written, read = (_count(counts.get(name)) for name in inputs)
    return _sum(fresh, written, read), _count(counts.get(output)), read


def _claude_model_tokens(models: object) -> _Tokens | None:
    """The tokens of ``modelUsage``, summed over its models (None: no such object; an empty
    one is a run that spent nothing)."""
    if not isinstance(models, dict):
        return None
    each = [
        _claude_tokens(entry, _MODEL_INPUT, "outputTokens")
        for entry in models.values()
        if isinstance(entry, dict)
    ]
    if not each:
        return None
    return (
        _sum(*(t[0] for t in each)),
        _sum(*(t[1] for t in each)),
        _sum(*(t[2] for t in each)),
    )


def _costliest(models: object) -> str | None:
    if not isinstance(models, dict) or not models:
        return None

    def cost(name: str) -> float:
        entry = models[name]
        return (_dollars(entry.get("costUSD")) or 0.0) if isinstance(entry, dict) else 0.0

    # The costliest, then the first name: the same answer whatever the order of the keys.
    return str(min(models, key=lambda name: (-cost(name), name)))


def read_codex(text: str) -> Reading | None:
    """The sum of codex's ``turn.completed`` usages in the attempt's output."""
    turns = [
        found["usage"]
        for found in objects_from_end(text)
        if found.get("type") == "turn.completed" and isinstance(found.get("usage"), dict)
    ]
    if not turns:
        return None
    return Reading(
        input_tokens=_sum(*(_count(turn.get("input_tokens")) for turn in turns)),
        output_tokens=_sum(*(_count(turn.get("output_tokens")) for turn in turns)),
        cached_input_tokens=_sum(*(_count(turn.get("cached_input_tokens")) for turn in turns)),
    )


def read_gemini(text: str) -> Reading | None:
    """gemini's ``stats``: tokens summed over its models (thoughts count as output)."""
    for found in objects_from_end(text):
        stats = found.get("stats")
        models = stats.get("models") if isinstance(stats, dict) else None
        if not isinstance(models, dict):
            continue
        tokens = [m["tokens"] for m in models.values() if isinstance(m, dict) and "tokens" in m]
        tokens = [t for t in tokens if isinstance(t, dict)]
        if not tokens:
            continue
        return Reading(
            input_tokens=_sum(*(_count(t.get("prompt")) for t in tokens)),
            output_tokens=_sum(
                *(_count(t.get(name)) for t in tokens for name in ("candidates", "thoughts"))
            ),
            cached_input_tokens=_sum(*(_count(t.get("cached")) for t in tokens)),
            model=min(models) if len(models) == 1 else None,
        )
    return None


# A line is aider's only in its exact shape: a number like "1.2.3k" makes it none.
_AIDER_NUMBER = r"\d+(?:\.\d+)?"
_AIDER_PART = re.compile(
    rf"(?P<number>{_AIDER_NUMBER})(?P<unit>[kKmM]?) (?P<what>sent|cache write|cache hit|received)"
)
_AIDER_PARTS = rf"(?:{_AIDER_NUMBER}[kKmM]? (?:sent|cache write|cache hit), )*"
_AIDER_TOKENS = re.compile(
    rf"^Tokens: (?P<parts>{_AIDER_PARTS}{_AIDER_NUMBER}[kKmM]? received)\.(?P<cost>[^\n]*)$", re.M
)
_AIDER_SESSION = re.compile(rf"\$(?P<dollars>{_AIDER_NUMBER}) session")
_UNITS = {"": 1, "k": 1000, "m": 1_000_000}


def read_aider(text: str) -> Reading | None:
    """aider's per-message token lines, summed; the cost is the last line's session total
    (aider's own sum of this run)."""
    sent = hits = received = 0
    cost: float | None = None
    lines = 0
    for line in _AIDER_TOKENS.finditer(text):
        lines += 1
        for part in _AIDER_PART.finditer(line["parts"]):
            count = _aider_count(part["number"], part["unit"])
            if part["what"] == "sent":
                sent += count
            elif part["what"] == "cache hit":
                hits += count
            elif part["what"] == "received":
                received += count
        session = _AIDER_SESSION.search(line["cost"])
        if session is not None:
            cost = float(session["dollars"])
    if not lines:
        return None
    # "sent" counts what was not read from the cache (its writes included): the hits are input too.
    return Reading(
        input_tokens=sent + hits, output_tokens=received, cached_input_tokens=hits, cost_usd=cost
    )


def _aider_count(number: str, unit: str) -> int:
    """*number* of *unit* (``2.1``, ``k``) as a count; one of hundreds of digits (a float of
    ``inf``) as ``MAX_TOKENS``, the first count out of bounds, for the record to refuse."""
    count = float(number) * _UNITS[unit.lower()]
    return round(count) if count < MAX_TOKENS else MAX_TOKENS


# The file aider's profile line has it log to (``--analytics-log``), in the attempt's usage
# folder: one ``message_send`` line per model call, with the provider's exact counts.
AIDER_ANALYTICS = "aider-analytics.jsonl"


def read_aider_analytics(log: str, printed: Reading | None) -> Reading | None:
    """aider's tokens from its analytics log (*log*: exact, where its printed lines round to
    ``1.2k``), its cost from its printed lines (*printed*: the log says $0 for a model
    without a price, which is unknown, not nothing); None when the log has no call."""
    sent: list[int | None] = []
    received: list[int | None] = []
    for line in log.splitlines():
        event = _json_object(line)
        properties = event.get("properties") if event is not None else None
        if event is None or event.get("event") != "message_send":
            continue
        if not isinstance(properties, dict):
            continue
        sent.append(_count(properties.get("prompt_tokens")))
        received.append(_count(properties.get("completion_tokens")))
    if not sent:
        return None
    return Reading(
        input_tokens=_sum(*sent),
        output_tokens=_sum(*received),
        cost_usd=printed.cost_usd if printed is not None else None,
    )


def _json_object(line: str) -> dict[str, Any] | None:
    try:
        found = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return found if isinstance(found, dict) else None


READERS: dict[str, Reader] = {
    "claude": read_claude,
    "codex": read_codex,
    "gemini": read_gemini,
    "aider": read_aider,
}
