"""Diagrams for people: ``task_diagram`` and ``mission_diagram`` in Mermaid and dot (golden
text, the same whatever the input order), and ``rho task graph`` through the real ``rho``."""

from __future__ import annotations

import html
import itertools
import random
import re
import subprocess
from pathlib import Path

import pytest

from rho_mission.cli._diagram import mission_diagram, task_diagram
from rho_mission.records._document import Feature, MissionDocument
from support.rho import RunRho
from taskstore import Dependency, Task, TaskStore


def _task(
    task_id: str,
    subject: str,
    status: str = "pending",
    *,
    parent: str | None = None,
    blocks: tuple[str, ...] = (),
    related: tuple[str, ...] = (),
) -> Task:
    links = [("blocks", b) for b in blocks] + [("related", r) for r in related]
    links += [("parent-child", parent)] if parent else []
    return Task(
        id=task_id,
        subject=subject,
        status=status,
        parent_id=parent,
        dependencies=[Dependency(target_id=target, type=kind) for kind, target in links],
    )


# A parent with a subtask, a blocker declared twice, a related link both ways and one to a task
# that does not exist, a subject full of syntax, and one on two lines.
TASKS = [
    _task("task_1", "Design the API", "completed"),
    _task("task_1.1", 'Say "hi" <b>#1; `x` a\\b', "failed", parent="task_1"),
    _task(
        "task_2",
        "Build\nit",
        "in_progress",
        blocks=("task_1", "task_1"),
        related=("task_3", "ghost"),
    ),
    _task("task_3", "Ship", blocks=("task_2", "task_1.1"), related=("task_2",)),
]

TASKS_MERMAID = """\
flowchart LR
  %% tasks
  subgraph g1["task_1"]
    n1["task_1<br>Design the API"]
    n2["task_1.1<br>Say #34;hi#34; #60;b#62;#35;1#59; #96;x#96; a#92;b"]
  end
  n3["task_2<br>Build it"]
  n4["task_3<br>Ship"]
  n1 --> n3
  n2 --> n4
  n3 --> n4
  n3 -.- n4
  classDef completed fill:#d1fadf,stroke:#039855
  class n1 completed
  classDef failed fill:#fee4e2,stroke:#d92d20
  class n2 failed
  classDef in_progress fill:#fef0c7,stroke:#dc6803
  class n3 in_progress
  classDef pending fill:#f2f4f7,stroke:#98a2b3
  class n4 pending
"""

TASKS_DOT = """\
digraph "tasks" {
  rankdir=LR;
  node [shape=box, style="rounded,filled", fillcolor="#ffffff"];
  subgraph cluster_1 { label="task_1";
    n1 [label="task_1\\nDesign the API", fillcolor="#d1fadf", color="#039855"];
    n2 [label="task_1.1\\nSay \\"hi\\" <b>#1; `x` a\\\\b", fillcolor="#fee4e2", color="#d92d20"];
  }
  n3 [label="task_2\\nBuild it", fillcolor="#fef0c7", color="#dc6803"];
  n4 [label="task_3\\nShip", fillcolor="#f2f4f7", color="#98a2b3"];
  n1 -> n3;
  n2 -> n4;
  n3 -> n4;
  n3 -> n4 [style=dotted, dir=none, constraint=false];
}
"""


def _mission(waves: list[list[str]]) -> MissionDocument:
    return MissionDocument(
        id="0123abcd",
        prompt="build it",
        dir="d",
        repo="r",
        base_commit="c" * 40,
        integration_branch="rho-mission/0123abcd/integration",
        features=[
            Feature("lex", "Lexer", status="completed"),
            Feature("parse", "Parser", blocked_by=["lex"], status="failed"),
            Feature("docs", 'Docs "all"', status="in_progress"),
            Feature("ship", "", blocked_by=["parse", "docs", "gone"]),
        ],
        waves=waves,
    )


WAVES = [["docs", "lex"], ["parse"], ["ship"]]

MISSION_MERMAID = """\
flowchart LR
  %% mission 0123abcd
  subgraph g1["wave 1"]
    n1["docs<br>Docs #34;all#34;"]
    n2["lex<br>Lexer"]
  end
  subgraph g2["wave 2"]
    n3["parse<br>Parser"]
  end
  subgraph g3["wave 3"]
    n4["ship"]
  end
  n1 --> n4
  n2 --> n3
  n3 --> n4
  classDef completed fill:#d1fadf,stroke:#039855
  class n2 completed
  classDef failed fill:#fee4e2,stroke:#d92d20
  class n3 failed
  classDef in_progress fill:#fef0c7,stroke:#dc6803
  class n1 in_progress
  classDef pending fill:#f2f4f7,stroke:#98a2b3
  class n4 pending
"""

MISSION_DOT = """\
digraph "mission 0123abcd" {
  rankdir=LR;
  node [shape=box, style="rounded,filled", fillcolor="#ffffff"];
  subgraph cluster_1 { label="wave 1";
    n1 [label="docs\\nDocs \\"all\\"", fillcolor="#fef0c7", color="#dc6803"];
    n2 [label="lex\\nLexer", fillcolor="#d1fadf", color="#039855"];
  }
  subgraph cluster_2 { label="wave 2";
    n3 [label="parse\\nParser", fillcolor="#fee4e2", color="#d92d20"];
  }
  subgraph cluster_3 { label="wave 3";
    n4 [label="ship", fillcolor="#f2f4f7", color="#98a2b3"];
  }
  n1 -> n4;
  n2 -> n3;
  n3 -> n4;
}
"""


@pytest.mark.parametrize(("fmt", "expected"), [("mermaid", TASKS_MERMAID), ("dot", TASKS_DOT)])
def test_task_diagram_is_the_golden_text(fmt: str, expected: str) -> None:
    assert task_diagram(TASKS, fmt) == expected


@pytest.mark.parametrize("fmt", ["mermaid", "dot"])
def test_task_diagram_is_the_same_for_every_order_of_tasks_and_links(fmt: str) -> None:
    shuffler = random.Random(7)
    for order in itertools.permutations(TASKS):
        shuffled = []
        for found in order:
            dependencies = list(found.dependencies)
            shuffler.shuffle(dependencies)
            shuffled.append(found.model_copy(update={"dependencies": dependencies}))
        assert task_diagram(shuffled, fmt) == task_diagram(TASKS, fmt)


@pytest.mark.parametrize(("fmt", "expected"), [("mermaid", MISSION_MERMAID), ("dot", MISSION_DOT)])
def test_mission_diagram_groups_features_by_wave(fmt: str, expected: str) -> None:
    assert mission_diagram(_mission(WAVES), fmt) == expected


@pytest.mark.parametrize("fmt", ["mermaid", "dot"])
def test_mission_diagram_is_the_same_for_every_order_of_features_and_waves(fmt: str) -> None:
    for order in itertools.permutations(range(4)):
        mission = _mission([list(reversed(wave)) for wave in WAVES])
        mission.features = [mission.features[n] for n in order]
        assert mission_diagram(mission, fmt) == mission_diagram(_mission(WAVES), fmt)


def test_mission_without_waves_is_grouped_by_the_waves_its_blockers_cut() -> None:
    unplanned = _mission([])
    unplanned.features[3].blocked_by = ["parse", "docs"]  # "gone" would not schedule
    assert mission_diagram(unplanned, "mermaid") == MISSION_MERMAID


def test_mission_whose_blockers_do_not_schedule_is_drawn_ungrouped() -> None:
    cyclic = _mission([])
    cyclic.features[0].blocked_by = ["ship"]  # lex -> ship -> parse -> lex
    drawn = mission_diagram(cyclic, "mermaid")
    assert "subgraph" not in drawn
    assert "  n4 --> n2" in drawn.splitlines()


def test_a_loop_of_parents_is_drawn_at_the_top() -> None:
    loop = [_task("a", "A", parent="b"), _task("b", "B", parent="a"), _task("c", "C", parent="a")]
    assert task_diagram(loop, "mermaid").splitlines()[2:7] == [
        '  subgraph g1["a"]',
        '    n1["a<br>A"]',
        '    n3["c<br>C"]',
        "  end",
        '  n2["b<br>B"]',
    ]


def test_nested_subtasks_are_nested_groups() -> None:
    nested = [_task("p", "P"), _task("p.1", "P1", parent="p"), _task("p.1.1", "P11", parent="p.1")]
    assert task_diagram(nested, "dot").splitlines()[3:10] == [
        '  subgraph cluster_1 { label="p";',
        '    n1 [label="p\\nP", fillcolor="#f2f4f7", color="#98a2b3"];',
        '    subgraph cluster_2 { label="p.1";',
        '      n2 [label="p.1\\nP1", fillcolor="#f2f4f7", color="#98a2b3"];',
        '      n3 [label="p.1.1\\nP11", fillcolor="#f2f4f7", color="#98a2b3"];',
        "    }",
        "  }",
    ]


def test_long_subjects_are_cut_and_unknown_statuses_left_uncoloured() -> None:
    drawn = task_diagram([_task("a", "x" * 100, "done")], "mermaid").splitlines()
    assert drawn == ["flowchart LR", "  %% tasks", f'  n1["a<br>{"x" * 59}…"]']


def test_an_unknown_format_is_refused() -> None:
    with pytest.raises(
        ValueError, match=r"^unknown diagram format 'svg'; expected one of mermaid, dot$"
    ):
        task_diagram(TASKS, "svg")


def _store_of(path: Path) -> TaskStore:
    """The TASKS graph made through the CLI's own library calls, in a store at *path*."""
    store = TaskStore(path)
    store.import_tasks([t.model_copy() for t in TASKS])
    return store


@pytest.mark.parametrize("fmt", ["mermaid", "dot"])
def test_task_graph_prints_the_stores_diagram(rho: RunRho, tmp_path: Path, fmt: str) -> None:
    store = _store_of(tmp_path / "s.json")
    result = rho("task", "graph", "--format", fmt, "--store", "s.json")
    assert (result.code, result.stderr) == (0, "")
    assert result.stdout == task_diagram(store.tasks(), fmt)
    assert result.stdout == (TASKS_MERMAID if fmt == "mermaid" else TASKS_DOT)


def test_task_graph_defaults_to_mermaid_and_draws_an_invalid_graph(
    rho: RunRho, tmp_path: Path
) -> None:
    store = TaskStore(tmp_path / "s.json")
    store.import_tasks([_task("a", "A")])
    store.mutate(lambda d: d.tasks.append(_task("b", "B", blocks=("a", "c"))))
    store.mutate(lambda d: d.tasks.append(_task("c", "C", blocks=("b",))))
    result = rho("task", "graph", "--store", "s.json")
    assert result.code == 0
    assert result.stdout.splitlines()[5:7] == ["  n1 --> n2", "  n2 --> n3"]
    assert "  n3 --> n2" in result.stdout.splitlines(), "a cycle is drawn, not refused"


def test_graphviz_reads_every_label_as_written(graphviz_dot: str) -> None:
    svg = subprocess.run(
        [graphviz_dot, "-Tsvg"], input=TASKS_DOT, capture_output=True, text=True, check=True
    ).stdout
    texts = [html.unescape(text) for text in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]
    assert 'Say "hi" <b>#1; `x` a\\b' in texts
    assert {"task_1", "task_1.1", "Design the API", "Build it", "Ship"} <= set(texts)
