"""Mermaid and dot renderings: structure, waves, escaping, determinism."""

from __future__ import annotations

import copy
import hashlib
import random
import re
import subprocess
from typing import Any

import pytest

from graph import GraphReferenceError, render_dot, render_mermaid

from ._docs import document, edge, node, sample


def _mid(node_id: str) -> str:
    digest = hashlib.sha256(node_id.encode()).hexdigest()[:8]
    return "n_" + re.sub(r"[^A-Za-z0-9_]", "_", node_id) + "_" + digest


def _shuffled(doc: dict[str, Any]) -> dict[str, Any]:
    result = copy.deepcopy(doc)
    rng = random.Random(3)
    for key in ("nodes", "edges", "events"):
        rng.shuffle(result[key])
    return result


def test_mermaid_groups_nodes_by_wave_and_labels_kind_status_and_edges() -> None:
    a, b, c, p = (_mid(f"rho/task/{x}") for x in "abcp")
    assert render_mermaid(sample()).splitlines() == [
        "flowchart LR",
        f'    subgraph wave_1_{hashlib.sha256(b"1").hexdigest()[:8]}["wave 1"]',
        f'        {a}["rho/task/a<br/>execution · done"]',
        "    end",
        f'    subgraph wave_2_{hashlib.sha256(b"2").hexdigest()[:8]}["wave 2"]',
        f'        {b}["rho/task/b<br/>execution · open"]',
        "    end",
        f'    subgraph wave_3_{hashlib.sha256(b"3").hexdigest()[:8]}["wave 3"]',
        f'        {c}["rho/task/c<br/>execution · open"]',
        "    end",
        f'    {p}["rho/task/p<br/>knowledge"]',
        f"    {b} -->|depends_on| {a}",
        f"    {c} -->|depends_on| {b}",
        f"    {p} -->|contains| {a}",
    ]


def test_dot_carries_the_same_information() -> None:
    assert render_dot(sample()).splitlines() == [
        'digraph "rho.graph" {',
        "    rankdir=LR;",
        "    node [shape=box];",
        '    subgraph "cluster_wave_1" {',
        '        label="wave 1";',
        '        "rho/task/a" [label="rho/task/a\\nexecution · done"];',
        "    }",
        '    subgraph "cluster_wave_2" {',
        '        label="wave 2";',
        '        "rho/task/b" [label="rho/task/b\\nexecution · open"];',
        "    }",
        '    subgraph "cluster_wave_3" {',
        '        label="wave 3";',
        '        "rho/task/c" [label="rho/task/c\\nexecution · open"];',
        "    }",
        '    "rho/task/p" [label="rho/task/p\\nknowledge"];',
        '    "rho/task/b" -> "rho/task/a" [label="depends_on"];',
        '    "rho/task/c" -> "rho/task/b" [label="depends_on"];',
        '    "rho/task/p" -> "rho/task/a" [label="contains"];',
        "}",
    ]


def test_a_graph_without_waves_has_no_subgraph() -> None:
    doc = document(nodes=[node("a"), node("b")], edges=[edge("e", "a", "b")])
    assert "subgraph" not in render_mermaid(doc)
    assert "subgraph" not in render_dot(doc)


def test_waves_are_ordered_numerically_then_by_text() -> None:
    doc = document(nodes=[node(f"n{w}", wave=w) for w in ["10", "2", "beta", "1", " "]])
    titles = re.findall(r'\["(wave [^"]*)"\]', render_mermaid(doc))
    assert titles == ["wave 1", "wave 2", "wave 10", "wave beta"]
    assert re.findall(r"label=\"(wave [^\"]*)\"", render_dot(doc)) == titles


def test_renderings_do_not_depend_on_input_order() -> None:
    assert render_mermaid(_shuffled(sample())) == render_mermaid(sample())
    assert render_dot(_shuffled(sample())) == render_dot(sample())


def test_mermaid_ids_are_safe_and_distinct_for_ids_that_sanitize_alike() -> None:
    doc = document(nodes=[node("a/b"), node("a_b"), node("end")])
    ids = re.findall(r"^    (\S+)\[", render_mermaid(doc), flags=re.MULTILINE)
    assert len(set(ids)) == 3
    assert all(re.fullmatch(r"n_[A-Za-z0-9_]+_[0-9a-f]{8}", i) for i in ids)


def test_mermaid_labels_escape_quotes_markup_and_line_breaks() -> None:
    doc = document(nodes=[node('say "hi" <b>#1</b> & `x`\nnext', status='a"b')])
    label = re.findall(r'\["(.*)"\]$', render_mermaid(doc), flags=re.MULTILINE)[0]
    assert label == (
        "say #34;hi#34; #60;b#62;#35;1#60;/b#62; #38; #96;x#96; next<br/>execution · a#34;b"
    )


def test_dot_quotes_escape_backslashes_and_quotes() -> None:
    doc = document(nodes=[node('c:\\tmp "x"\tend', status="\\")])
    line = render_dot(doc).splitlines()[3]
    assert line == (
        '    "c:\\\\tmp \\"x\\" end" [label="c:\\\\tmp \\"x\\" end\\nexecution · \\\\"];'
    )


def test_renderings_refuse_an_invalid_graph() -> None:
    doc = document(nodes=[node("a")], edges=[edge("e", "a", "ghost")])
    with pytest.raises(GraphReferenceError):
        render_mermaid(doc)
    with pytest.raises(GraphReferenceError):
        render_dot(doc)


def test_graphviz_parses_the_dot_rendering(graphviz_dot: str) -> None:
    doc = sample()
    doc["nodes"].append(node('we "ird" \\ <b>', wave="x y"))
    result = subprocess.run(
        [graphviz_dot, "-Tcanon"],
        input=render_dot(doc),
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "cluster_wave_x y" in result.stdout
