"""A mission in a few words, for the lists (``rho mission list``, the page's list): what it is
about and where it was merged; and a feature's conflicted merge, for the progress lines and
``show``. The standard library only: the CLI's quick lane reads
mission.json as plain JSON and imports this."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["conflict_words", "merged_words", "what_words"]

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
