"""Blocking cycles among completed tasks of a tracker's file: which links become related."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from taskstore.trackers._finished_cycles import settle_finished_cycles
from taskstore.trackers._items import Item

_IDS = [str(n) for n in range(8)]


def _reaches(links: dict[str, set[str]], start: str, goal: str) -> bool:
    seen, todo = set(), [start]
    while todo:
        node = todo.pop()
        for target in links[node]:
            if target == goal:
                return True
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return False


@settings(max_examples=200, deadline=None)
@given(
    done=st.sets(st.sampled_from(_IDS)),
    links=st.sets(st.tuples(st.sampled_from(_IDS), st.sampled_from(_IDS))),
)
def test_exactly_the_links_on_a_cycle_of_completed_tasks_become_related(
    done: set[str], links: set[tuple[str, str]]
) -> None:
    links = {(a, b) for a, b in links if a != b}
    items = [
        Item(
            id=key,
            subject=key,
            status="completed" if key in done else "pending",
            tool_status="x",
            blockers=sorted(b for a, b in links if a == key),
        )
        for key in _IDS
    ]
    warnings = settle_finished_cycles("beads", items)
    among_done = {key: {b for a, b in links if a == key and b in done} for key in _IDS}
    expected = {(a, b) for a, b in links if a in done and b in done and _reaches(among_done, b, a)}
    demoted = {(item.id, r) for item in items for r in item.related}
    assert demoted == expected
    assert len(warnings) == len(expected)
    kept = {(item.id, b) for item in items for b in item.blockers}
    assert kept == links - expected


def test_a_chain_longer_than_the_recursion_limit_is_settled() -> None:
    count = 5000
    items = [
        Item(id=str(n), subject="s", status="completed", tool_status="done",
             blockers=[str((n + 1) % count)])
        for n in range(count)
    ]  # fmt: skip
    warnings = settle_finished_cycles("beads", items)
    assert len(warnings) == count
    assert all(not item.blockers for item in items)
