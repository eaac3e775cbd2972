"""Renderings of a graph for people: a Mermaid ``flowchart`` (GitHub renders it) and Graphviz dot.

Both show the same information: every node labelled with its id, its kind and its ``status``
attribute when it has one, every edge ``from -> to`` labelled with its kind. Events are not
drawn. Nodes are grouped by wave with one rule: a node whose attribute ``wave`` is not blank
belongs to the group of that value (``subgraph`` in Mermaid, ``cluster`` in dot), groups in
numeric order ("2" before "10") and then text order; nodes without ``wave`` stand outside. So a
projection that wants waves drawn puts ``wave`` on its feature nodes (and on its wave-join
nodes). Output is deterministic: nodes and edges in id order.

Mermaid ids are ``n_`` + the node id with every character outside ``[A-Za-z0-9_]`` replaced by
``_`` + ``_`` + the first 8 hex digits of the id's SHA-256 (ids that sanitize alike stay apart,
and no id can be a Mermaid keyword such as ``end``). Mermaid labels are quoted, with ``#``,
``"``, ``&``, ``<``, ``>`` and backquote written as entity codes (``#35;``); dot ids and labels
are double-quoted with ``\\`` and ``"`` escaped. Control characters become spaces in both.

Decision: docs/decisions/0201-portable-graph.md
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ._model import GraphDocument, Node, sort_facts
from ._validate import validate_graph

__all__ = ["render_dot", "render_mermaid"]

_UNSAFE_ID = re.compile(r"[^A-Za-z0-9_]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_MERMAID_ENTITIES = {"#": "#35;", '"': "#34;", "&": "#38;", "<": "#60;", ">": "#62;", "`": "#96;"}
_MERMAID_SPECIAL = re.compile("[" + re.escape("".join(_MERMAID_ENTITIES)) + "]")

Groups = list[tuple[str | None, list[Node]]]


def render_mermaid(doc: GraphDocument | Mapping[str, Any]) -> str:
    """Return *doc* as a Mermaid ``flowchart LR``, one statement a line, ending with a newline.

    Raises:
        GraphValidationError: *doc* breaks the contract (see `validate_graph`).
    """
    graph = sort_facts(validate_graph(doc))
    lines = ["flowchart LR"]
    for wave, nodes in _group_by_wave(graph.nodes):
        if wave is None:
            lines.extend(f"    {_mermaid_node(node)}" for node in nodes)
            continue
        lines.append(f'    subgraph {_mermaid_wave_id(wave)}["{_mermaid_text("wave " + wave)}"]')
        lines.extend(f"        {_mermaid_node(node)}" for node in nodes)
        lines.append("    end")
    for edge in graph.edges:
        source, target = _mermaid_id(edge.source.id), _mermaid_id(edge.target.id)
        lines.append(f"    {source} -->|{edge.kind}| {target}")
    return "\n".join(lines) + "\n"


def render_dot(doc: GraphDocument | Mapping[str, Any]) -> str:
    """Return *doc* as a Graphviz ``digraph`` (left to right), ending with a newline.

    Raises:
        GraphValidationError: *doc* breaks the contract (see `validate_graph`).
    """
    graph = sort_facts(validate_graph(doc))
    lines = ['digraph "rho.graph" {', "    rankdir=LR;", "    node [shape=box];"]
    for wave, nodes in _group_by_wave(graph.nodes):
        if wave is None:
            lines.extend(f"    {_dot_node(node)}" for node in nodes)
            continue
        lines.append(f"    subgraph {_dot_quote('cluster_wave_' + wave)} {{")
        lines.append(f"        label={_dot_quote('wave ' + wave)};")
        lines.extend(f"        {_dot_node(node)}" for node in nodes)
        lines.append("    }")
    for edge in graph.edges:
        source, target = _dot_quote(edge.source.id), _dot_quote(edge.target.id)
        lines.append(f"    {source} -> {target} [label={_dot_quote(edge.kind)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _mermaid_id(node_id: str) -> str:
    digest = hashlib.sha256(node_id.encode("utf-8")).hexdigest()[:8]
    return f"n_{_UNSAFE_ID.sub('_', node_id)}_{digest}"


def _mermaid_node(node: Node) -> str:
    label = f"{_mermaid_text(node.id)}<br/>{_mermaid_text(_summary(node))}"
    return f'{_mermaid_id(node.id)}["{label}"]'


def _mermaid_wave_id(wave: str) -> str:
    digest = hashlib.sha256(wave.encode("utf-8")).hexdigest()[:8]
    return f"wave_{_UNSAFE_ID.sub('_', wave)}_{digest}"


def _mermaid_text(text: str) -> str:
    plain = _CONTROL.sub(" ", text)
    return _MERMAID_SPECIAL.sub(lambda match: _MERMAID_ENTITIES[match.group()], plain)


def _dot_quote(text: str) -> str:
    plain = _CONTROL.sub(" ", text)
    return '"' + plain.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _dot_node(node: Node) -> str:
    # "\n" inside a dot label is a line break; the parts are escaped first, then joined.
    label = _dot_quote(node.id)[:-1] + "\\n" + _dot_quote(_summary(node))[1:]
    return f"{_dot_quote(node.id)} [label={label}];"


def _summary(node: Node) -> str:
    status = node.attributes.get("status")
    return f"{node.kind} · {status}" if status else node.kind


def _group_by_wave(nodes: Iterable[Node]) -> Groups:
    """Return (wave, nodes) groups in wave order, then the nodes without a wave (wave None)."""
    waves: dict[str, list[Node]] = {}
    loose: list[Node] = []
    for node in nodes:
        wave = node.attributes.get("wave", "").strip()
        if wave:
            waves.setdefault(wave, []).append(node)
        else:
            loose.append(node)
    groups: Groups = [(wave, waves[wave]) for wave in sorted(waves, key=_wave_order)]
    if loose:
        groups.append((None, loose))
    return groups


def _wave_order(wave: str) -> tuple[int, int, str]:
    return (0, int(wave), wave) if wave.isdecimal() else (1, 0, wave)
