"""Blocking cycles among finished work in a tracker's file, imported as ``related`` links.

Trackers hold cycles the store refuses: Task Master's own ``tasks.json`` has two ``done``
subtasks that block each other. A blocking link between completed tasks no longer decides any
schedule (neither will run again), so a link that closes a cycle among completed tasks only
is imported as ``related`` and named in a warning, and the file is imported. A cycle that
touches any unfinished task still decides what runs: the store refuses it, naming it.

A link closes such a cycle when both its ends are completed and lie in one strongly connected
component of the blocking links between completed tasks (every such link lies on a cycle).

Decision: docs/decisions/0104-trackers.md
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ._items import Item

__all__ = ["settle_finished_cycles"]

_DONE = "completed"


def settle_finished_cycles(fmt: str, items: Sequence[Item]) -> list[str]:
    """Turn each blocking link of *items* (of a file of tracker *fmt*) that closes a cycle
    among completed tasks into a ``related`` link, in place; one warning for each, in the
    file's order."""
    done = {item.id: item for item in items if item.status == _DONE}
    links = {key: [b for b in item.blockers if b in done] for key, item in done.items()}
    component = _components(links)
    warnings = []
    for item in items:
        if item.id not in done:
            continue
        cyclic = [b for b in item.blockers if b in done and component[b] == component[item.id]]
        for blocker in cyclic:
            item.blockers.remove(blocker)
            if blocker not in item.related:
                item.related.append(blocker)
            warnings.append(
                f"{fmt}: {item.id} is blocked by {blocker} in a cycle of completed tasks: "
                "imported as a related link (it decides no schedule)"
            )
    return warnings


def _components(links: Mapping[str, list[str]]) -> dict[str, int]:
    """The strongly connected component of each node of *links* (Tarjan's algorithm, with an
    explicit stack: a tracker's chain may be longer than Python's recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    component: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = 0
    for root in links:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, next_link = work.pop()
            if next_link == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            targets = links[node]
            if next_link < len(targets):
                work.append((node, next_link + 1))
                target = targets[next_link]
                if target not in index:
                    work.append((target, 0))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            for target in targets:  # the children are done: take their lows
                if target in on_stack:
                    low[node] = min(low[node], low[target])
            if low[node] == index[node]:
                _pop_component(node, stack, on_stack, component, found)
                found += 1
    return component


def _pop_component(
    root: str, stack: list[str], on_stack: set[str], component: dict[str, int], number: int
) -> None:
    while True:
        node = stack.pop()
        on_stack.discard(node)
        component[node] = number
        if node == root:
            return
