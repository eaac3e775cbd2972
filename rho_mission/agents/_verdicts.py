"""The agents' own verdicts: whether an agent's output says its run failed, in its words.

An agent may exit 0 having failed (aider on a model error, after its retries), or exit 1 with
the reason only in its output (claude's result, codex's failed turn, gemini's error object).
Each reader takes the attempt's output (as the usage readers do) and gives a `Verdict`: the
agent's words when it reported a failure, and lines worth a warning in the log.

- claude: the result object's ``is_error`` (with ``subtype`` and ``result``, its words).
  ``permission_denials`` alone is a warning, not a failure: under ``acceptEdits`` claude is
  denied every command it was not allowed, its check of its own work (``python3 -m pytest``)
  among them, and it goes on to finish the task; a denial the task needed shows as no change
  (``--require-changes``) or as the checks failing.
- codex: the last ``turn.failed`` (its ``error.message``), or an ``error`` event after the
  last completed turn.
- gemini: the object with an ``error`` (``message``, ``code``) it prints on a failed run.
- aider: a ``litellm.<Name>Error:`` line that neither an answer (a ``Tokens:`` line) nor a
  retry (``Retrying in``) followed: a model error it gave up on (aider exits 0 then), with
  the explanation it prints after it.

The output is a task's writing: a reader never raises on it, and the words are cut to
``WORDS_LIMIT`` printable characters of one line.

Decision: docs/decisions/0512-agent-verdicts.md
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

from ._readers import objects_from_end

__all__ = ["VERDICTS", "WORDS_LIMIT", "Verdict", "VerdictReader"]

WORDS_LIMIT = 400


@dataclass(frozen=True)
class Verdict:
    """What an agent's output says of its run: *failure*, its words when it reported one
    (None: it reported none); *warnings*, lines for the log."""

    failure: str | None = None
    warnings: tuple[str, ...] = ()


VerdictReader: TypeAlias = Callable[[str], Verdict]
_NONE = Verdict()


def _words(text: object) -> str:
    """*text* as one line of at most ``WORDS_LIMIT`` characters, printable only (a terminal's
    escape sequences in a task's output never reach an error rho prints)."""
    said = str(text)[: WORDS_LIMIT * 4]
    line = " ".join("".join(c if c.isprintable() else " " for c in said).split())
    return line if len(line) <= WORDS_LIMIT else line[: WORDS_LIMIT - 1] + "…"


def read_claude(text: str) -> Verdict:
    """claude's result: failed when ``is_error``; its ``permission_denials`` a warning."""
    for found in objects_from_end(text):
        if found.get("type") != "result":
            continue
        warnings = _denials(found.get("permission_denials"))
        if found.get("is_error") is not True:
            return Verdict(None, warnings)
        said = found.get("result")
        # Its subtype says "success" on an API error: the terminal reason names that one.
        subtype = found.get("subtype")
        if not isinstance(subtype, str) or subtype == "success":
            subtype = found.get("terminal_reason")
        kind = f" ({_words(subtype)})" if isinstance(subtype, str) else ""
        words = f": {_words(said)}" if isinstance(said, str) and said.strip() else ""
        return Verdict(f"claude reported an error{kind}{words}", warnings)
    return _NONE


def _denials(denials: object) -> tuple[str, ...]:
    if not isinstance(denials, list) or not denials:
        return ()
    shown = [_denied(denial) for denial in denials[:5]]
    more = f" and {len(denials) - 5} more" if len(denials) > 5 else ""
    return (f"claude was denied {len(denials)} tool call(s): {'; '.join(shown)}{more}",)


def _denied(denial: object) -> str:
    if not isinstance(denial, dict):
        return "?"
    tool = denial.get("tool_name")
    given: Any = denial.get("tool_input")
    command = given.get("command") or given.get("file_path") if isinstance(given, dict) else None
    name = tool if isinstance(tool, str) else "?"
    return _words(f"{name} {command}" if isinstance(command, str) else name)[:120]


def read_codex(text: str) -> Verdict:
    """codex's JSON lines: failed when its last turn failed, or an error came after it."""
    for found in objects_from_end(text):
        kind = found.get("type")
        if kind == "turn.completed":
            return _NONE
        if kind == "turn.failed":
            error = found.get("error")
            message = error.get("message") if isinstance(error, dict) else None
            return Verdict(f"codex reported a failed turn: {_words(message or 'no message')}")
        if kind == "error" and isinstance(found.get("message"), str):
            return Verdict(f"codex reported an error: {_words(found['message'])}")
    return _NONE


def read_gemini(text: str) -> Verdict:
    """gemini's error object (printed on a failed run), if its last object is one."""
    for found in objects_from_end(text):
        error = found.get("error")
        if found.get("stats") is not None or found.get("response") is not None:
            return _NONE if not isinstance(error, dict) else _gemini_error(error)
        if isinstance(error, dict):
            return _gemini_error(error)
    return _NONE


def _gemini_error(error: dict[str, Any]) -> Verdict:
    message = error.get("message")
    code = error.get("code")
    status = f" ({code})" if isinstance(code, int) and not isinstance(code, bool) else ""
    return Verdict(f"gemini reported an error{status}: {_words(message or 'no message')}")


_AIDER_ERROR = re.compile(r"^litellm\.\w+(?:Error|Timeout)\b:?[^\n]*$", re.M)
_AIDER_TOKENS = re.compile(r"^Tokens: ", re.M)
_AIDER_RETRY = re.compile(r"^Retrying in ", re.M)


def read_aider(text: str) -> Verdict:
    """aider's last model error, when neither an answer nor a retry came after it."""
    errors = list(_AIDER_ERROR.finditer(text))
    if not errors:
        return _NONE
    last = errors[-1]
    if _AIDER_TOKENS.search(text, last.end()) or _AIDER_RETRY.search(text, last.end()):
        # It tried again: an answer came (its Tokens line), or a side call's retry (a commit
        # message) got one and said nothing, or its time limit ended it (that failure is rho's).
        return _NONE
    after = text[last.end() :].strip().splitlines()
    explained = f" ({_words(after[0])})" if after else ""
    return Verdict(f"aider reported a model error: {_words(last.group())}{explained}")


VERDICTS: dict[str, VerdictReader] = {
    "claude": read_claude,
    "codex": read_codex,
    "gemini": read_gemini,
    "aider": read_aider,
}
