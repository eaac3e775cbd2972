"""A mission in a few words, for the lists (``rho mission list``, the page's list): what it is
about and where it was merged; a feature's conflicted merge, for the progress lines and
``show``; what attempts spent (a ``UsageTotal`` as mission.json holds it), for every view.
The standard library only: the CLI's quick lane reads mission.json as plain JSON and imports
this.

Decision: docs/decisions/0508-mission-commands.md
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["conflict_words", "dollars", "merged_words", "usage_cell", "usage_words", "what_words"]

# Characters of a mission's "what" a list row shows.
WHAT_WIDTH = 48


def what_words(prompt: str, from_store: bool, subjects: Sequence[str], count: int) -> str:
    """What a mission is about: its prompt (a planned mission), else the *subjects* of its
    first tasks and how many more there are (*count* in all: a mission of the store, whose
    prompt only counts them). Cut to ``WHAT_WIDTH`` characters."""
    if from_store and subjects:
        more = count - len(subjects)
        text = ", ".join(subjects) + (f" +{more} more" if more > 0 else "")
    else:
        text = prompt
    text = " ".join(text.split())
    return text if len(text) <= WHAT_WIDTH else text[: WHAT_WIDTH - 1] + "…"


def merged_words(last_merge: Mapping[str, object] | None, cleaned: bool) -> str:
    """Where and how the mission was last merged, and whether it was cleaned: ``main``,
    ``main (squash)``, ``main (2 task(s)), cleaned``; "" for neither."""
    words = []
    if last_merge is not None:
        how = "squash" if last_merge.get("squash") else ""
        only = last_merge.get("only")
        if isinstance(only, list) and only:
            how = f"{len(only)} task(s)" + (", squash" if how else "")
        words.append(str(last_merge.get("into", "?")) + (f" ({how})" if how else ""))
    if cleaned:
        words.append("cleaned")
    return ", ".join(words)


def conflict_words(paths: Sequence[object], met: Sequence[object]) -> str:
    """``merge conflict in a.py with task_1``: a conflicted merge's paths and the features it
    met (none: the work already on the integration branch)."""
    whom = ", ".join(map(str, met)) or "the integration branch"
    return f"merge conflict in {', '.join(map(str, paths)) or '-'} with {whom}"


def dollars(amount: float) -> str:
    """*amount* as people read a price: ``$4.12``; below a dime, four decimals (``$0.0042``)."""
    return f"${amount:.2f}" if amount >= 0.1 or amount == 0 else f"${amount:.4f}"


def _count(number: int) -> str:
    # 1234 -> "1.2k", 2_500_000 -> "2.5M": a view's width; the exact count is in --json.
    if number >= 1_000_000:
        return f"{number / 1_000_000:.1f}M"
    if number >= 10_000:
        return f"{number / 1000:.0f}k"
    if number >= 1000:
        return f"{number / 1000:.1f}k"
    return str(number)


def _number(total: Mapping[str, object], name: str) -> float | None:
    value = total.get(name)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    return None


def usage_words(total: object) -> str | None:
    """What a ``UsageTotal`` (as JSON) says, in one phrase: ``$0.42, 12k in / 1.5k out``, then
    ``, 1 unknown`` for the attempts whose usage could not be read; None when nothing was
    recorded (or *total* is not one: the quick lane checks no optional field)."""
    if not isinstance(total, Mapping) or not _number(total, "attempts"):
        return None
    parts = []
    cost = _number(total, "cost_usd")
    if cost is not None:
        parts.append(dollars(cost))
    read, wrote = _number(total, "input_tokens"), _number(total, "output_tokens")
    if read is not None or wrote is not None:
        parts.append(f"{_count(int(read or 0))} in / {_count(int(wrote or 0))} out")
    unknown = int(_number(total, "unknown") or 0)
    if unknown:
        parts.append(f"{unknown} unknown" if parts else "unknown")
    return ", ".join(parts) if parts else "nothing reported"


def usage_cell(total: object) -> str:
    """A table cell of what a ``UsageTotal`` (as JSON) says: its cost, else its tokens, else
    ``?`` (only unknown attempts), else nothing."""
    if not isinstance(total, Mapping) or not _number(total, "attempts"):
        return ""
    cost = _number(total, "cost_usd")
    read, wrote = _number(total, "input_tokens"), _number(total, "output_tokens")
    cell = dollars(cost) if cost is not None else ""
    if not cell and (read is not None or wrote is not None):
        cell = f"{_count(int((read or 0) + (wrote or 0)))} tok"
    unknown = int(_number(total, "unknown") or 0)
    return cell + ("+?" if cell and unknown else "") if cell else ("?" if unknown else "")
