"""Diagrams for people: the task store or a mission as Mermaid or Graphviz dot text.

Both sources become one small neutral drawing (nodes with a status, groups, edges), which each
format then writes out; so both formats say the same thing. The text depends only on the data:
nodes, groups and edges are sorted by id, whatever the order of the input.

- Nodes read ``id`` over the subject (a task) or the description (a feature), cut at
  ``_LABEL_CHARS``, and are coloured by status (``_colours``, the CLI's one colour table).
- Edges are dependencies only: ``blocks`` a solid arrow from the blocker to the task it blocks,
  ``related`` a dotted line without arrow head. An edge to an id that is not drawn is left out.
- Groups: a task with subtasks (``parentId``) is a box holding itself and its subtasks; a mission
  draws one box per wave.

The user's text is escaped for each format (Mermaid entity codes, dot string escapes), and
control characters become spaces, so that no subject can end a label or add a statement.
(``rho graph export`` stays the privacy-safe portable graph: no subjects there.)

Decision: docs/decisions/0103-task-commands.md
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ._colours import diagram_colours

if TYPE_CHECKING:
    from taskstore import Task

    from ..records._document import MissionDocument

__all__ = ["FORMATS", "mission_diagram", "task_diagram"]

FORMATS = ("mermaid", "dot")
_LABEL_CHARS = 60
# Characters that Mermaid reads as syntax, markup or entities even inside a quoted label.
_MERMAID_CODES = {char: f"#{ord(char)};" for char in '"#&<>;`*\\'}


@dataclass(frozen=True, slots=True)
class _Node:
    id: str
    text: str
    status: str


@dataclass(slots=True)
class _Group:
    """A box: *label* over its items, each a node id or a nested group."""

    label: str
    items: list[str | _Group] = field(default_factory=list)


@dataclass(slots=True)
class _Drawing:
    name: str
    nodes: dict[str, _Node]
    top: list[str | _Group]
    edges: list[tuple[str, str, str]]  # (from, to, kind), sorted


def task_diagram(tasks: Iterable[Task], fmt: str) -> str:
    """The tasks as a *fmt* diagram (``mermaid`` or ``dot``), subtasks grouped with their parent.

    Raises:
        ValueError: *fmt* is not one of ``FORMATS``.
    """
    ordered = sorted(tasks, key=lambda task: task.id)
    nodes = {task.id: _Node(task.id, task.subject, task.status) for task in ordered}
    parents = _containers(ordered, nodes)
    edges: set[tuple[str, str, str]] = set()
    for task in ordered:
        for dependency in task.dependencies:
            target = dependency.target_id.strip()
            if target not in nodes or dependency.type == "parent-child":
                continue
            if dependency.type == "blocks":
                edges.add((target, task.id, "blocks"))
            else:  # related reads the same from either side: draw it once
                low, high = sorted((task.id, target))
                edges.add((low, high, "related"))
    drawing = _Drawing("tasks", nodes, _nest(sorted(nodes), parents), sorted(edges))
    return _write(drawing, fmt)


def mission_diagram(mission: MissionDocument, fmt: str) -> str:
    """The mission's features as a *fmt* diagram (``mermaid`` or ``dot``), one group per wave.

    The waves are the mission's own, else those its ``blocked_by`` graph cuts; a feature in no
    wave (or every feature, when that graph does not schedule) is drawn outside the groups.

    Raises:
        ValueError: *fmt* is not one of ``FORMATS``.
    """
    features = sorted(mission.features, key=lambda feature: feature.id)
    nodes = {f.id: _Node(f.id, f.subject, f.status) for f in features}
    edges = {
        (blocker, feature.id, "blocks")
        for feature in features
        for blocker in feature.blocked_by
        if blocker in nodes
    }
    top: list[str | _Group] = []
    placed: set[str] = set()
    for number, wave in enumerate(_waves(mission), start=1):
        members = sorted(set(wave) & nodes.keys() - placed)
        placed.update(members)
        if members:
            top.append(_Group(f"wave {number}", list(members)))
    top.extend(feature_id for feature_id in nodes if feature_id not in placed)
    return _write(_Drawing(f"mission {mission.id}", nodes, top, sorted(edges)), fmt)


def _waves(mission: MissionDocument) -> list[list[str]]:
    if mission.waves:
        return mission.waves
    from rho_mission._errors import InvalidMissionError

    from ..mission._waves import computed_waves

    try:
        return computed_waves(mission.features)
    except InvalidMissionError:  # a cycle or a missing blocker: draw it ungrouped, as it is
        return []


def _containers(tasks: Sequence[Task], nodes: dict[str, _Node]) -> dict[str, str | None]:
    """Each task's parent among the drawn tasks, or None; a loop of parents is drawn at the top.

    The parent is ``parentId``, or (a hand-written task without one) its first ``parent-child``
    target that is drawn.
    """
    parents: dict[str, str | None] = {}
    for task in tasks:
        named = [task.parent_id] if task.parent_id else []
        named += [d.target_id.strip() for d in task.dependencies if d.type == "parent-child"]
        parents[task.id] = next((p for p in named if p in nodes and p != task.id), None)
    for start in parents:
        chain: list[str] = []
        above: str | None = start
        while above is not None and above not in chain:
            chain.append(above)
            above = parents[above]
        if above is not None:
            for member in chain[chain.index(above) :]:
                parents[member] = None
    return parents


def _nest(ids: list[str], parents: dict[str, str | None]) -> list[str | _Group]:
    children: dict[str | None, list[str]] = {}
    for task_id in ids:
        children.setdefault(parents[task_id], []).append(task_id)

    def items(parent: str | None) -> list[str | _Group]:
        found: list[str | _Group] = []
        for task_id in children.get(parent, []):
            if task_id in children:
                found.append(_Group(task_id, [task_id, *items(task_id)]))
            else:
                found.append(task_id)
        return found

    return items(None)


def _write(drawing: _Drawing, fmt: str) -> str:
    if fmt == "mermaid":
        return _Mermaid(drawing).text()
    if fmt == "dot":
        return _Dot(drawing).text()
    raise ValueError(f"unknown diagram format {fmt!r}; expected one of {', '.join(FORMATS)}")


def _flat(text: str) -> str:
    """*text* on one line: control characters and line breaks become spaces."""
    return "".join(" " if char.isspace() or not char.isprintable() else char for char in text)


def _lines(node: _Node) -> list[str]:
    """The label of *node*: its id, then its text cut at ``_LABEL_CHARS`` (if any)."""
    text = _flat(node.text).strip()
    if len(text) > _LABEL_CHARS:
        text = text[: _LABEL_CHARS - 1] + "…"
    return [_flat(node.id), text] if text else [_flat(node.id)]


class _Writer:
    """What both formats share: node keys ``n1``, ``n2``... in id order (ids can hold anything a
    format reads as syntax, so they appear only in labels), and the walk through the groups."""

    def __init__(self, drawing: _Drawing) -> None:
        self.drawing = drawing
        self.keys = {node_id: f"n{n}" for n, node_id in enumerate(drawing.nodes, start=1)}
        self.groups = 0
        self.out: list[str] = []

    def _items(self, items: list[str | _Group], indent: str) -> None:
        for item in items:
            if isinstance(item, str):
                self.out.append(indent + self._node(self.drawing.nodes[item]))
                continue
            self.groups += 1
            self.out.append(indent + self._open(self.groups, _flat(item.label)))
            self._items(item.items, indent + "  ")
            self.out.append(indent + self._close())

    def _node(self, node: _Node) -> str:
        raise NotImplementedError

    def _open(self, number: int, label: str) -> str:
        raise NotImplementedError

    def _close(self) -> str:
        raise NotImplementedError


class _Mermaid(_Writer):
    """A Mermaid flowchart; user text as entity codes (``#34;``) inside quoted labels."""

    def text(self) -> str:
        self.out.append("flowchart LR")
        self.out.append(f"  %% {_mermaid_text(self.drawing.name)}")
        self._items(self.drawing.top, "  ")
        for source, target, kind in self.drawing.edges:
            arrow = "-->" if kind == "blocks" else "-.-"
            self.out.append(f"  {self.keys[source]} {arrow} {self.keys[target]}")
        self._classes()
        return "\n".join(self.out) + "\n"

    def _node(self, node: _Node) -> str:
        label = "<br>".join(_mermaid_text(line) for line in _lines(node))
        return f'{self.keys[node.id]}["{label}"]'

    def _open(self, number: int, label: str) -> str:
        return f'subgraph g{number}["{_mermaid_text(label)}"]'

    def _close(self) -> str:
        return "end"

    def _classes(self) -> None:
        by_status: dict[str, list[str]] = {}
        colours: dict[str, tuple[str, str]] = {}
        for node_id, node in self.drawing.nodes.items():
            found = diagram_colours(node.status)
            if found is not None:
                colours[node.status] = found
                by_status.setdefault(node.status, []).append(self.keys[node_id])
        for status in sorted(by_status):
            fill, stroke = colours[status]
            self.out.append(f"  classDef {status} fill:{fill},stroke:{stroke}")
            self.out.append(f"  class {','.join(by_status[status])} {status}")


def _mermaid_text(text: str) -> str:
    return "".join(_MERMAID_CODES.get(char, char) for char in text)


class _Dot(_Writer):
    """A Graphviz digraph; groups as clusters, user text in quoted strings."""

    def text(self) -> str:
        self.out.append(f"digraph {_dot_string(self.drawing.name)} {{")
        self.out.append("  rankdir=LR;")
        self.out.append('  node [shape=box, style="rounded,filled", fillcolor="#ffffff"];')
        self._items(self.drawing.top, "  ")
        for source, target, kind in self.drawing.edges:
            # A related link says nothing of order: it must not pull the layout's ranks.
            style = "" if kind == "blocks" else " [style=dotted, dir=none, constraint=false]"
            self.out.append(f"  {self.keys[source]} -> {self.keys[target]}{style};")
        self.out.append("}")
        return "\n".join(self.out) + "\n"

    def _node(self, node: _Node) -> str:
        # Lines escaped one by one: the "\n" between them is dot's line break, not user text.
        label = "\\n".join(_dot_string(line)[1:-1] for line in _lines(node))
        colour = ""
        found = diagram_colours(node.status)
        if found is not None:
            fill, stroke = found
            colour = f', fillcolor="{fill}", color="{stroke}"'
        return f'{self.keys[node.id]} [label="{label}"{colour}];'

    def _open(self, number: int, label: str) -> str:
        return f"subgraph cluster_{number} {{ label={_dot_string(label)};"

    def _close(self) -> str:
        return "}"


def _dot_string(text: str) -> str:
    """*text* (one line) as a dot quoted string: ``"`` and ``\\`` take a backslash."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
