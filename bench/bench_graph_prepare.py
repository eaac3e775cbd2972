"""Benchmark: validate and prepare a 900-fact graph for Rho Cloud, as ``rho cloud graph sync`` does.

Run: ``.venv/bin/python bench/bench_graph_prepare.py``. The graph sits at the fact cap: 250
nodes, 400 edges and 250 events, with the attributes a mission graph carries (status, counts,
digests, a wave) plus clear-text sensitive values (prompt, command, file path, branch, model,
reason) that preparation must hash, and an evidence uri per node. Seeded: the same graph on every
run. One run is ``prepare_for_cloud(validate_graph(data))`` on the JSON data as read from a file.
Nothing here asserts on speed: the script prints the medians and the prepared body size.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from graph import sha256_hex, validate_graph
from graph.cloud import prepare_for_cloud

__all__ = ["build_graph", "main"]

_STAMP = "2026-11-01T09:00:00Z"
_STATUSES = ("pending", "running", "succeeded", "failed", "blocked")


def _node(index: int, rng: random.Random) -> dict[str, Any]:
    node_id = f"rho/mission-feature/m-bench/feature-{index:03d}"
    attributes = {
        "status": rng.choice(_STATUSES),
        "wave": str(index % 12 + 1),
        "attempts": str(rng.randint(0, 3)),
        "data_classification": "metadata_only",
        "subject_sha256": sha256_hex(f"subject {index}"),
        "output_bytes_count": str(rng.randint(0, 10**6)),
        "Prompt_Tokens": str(rng.randint(100, 9000)),
        "prompt": f"Implement feature {index}: " + "do the careful thing. " * rng.randint(2, 12),
        "command": f"pytest -q tests/test_feature_{index}.py --maxfail=1",
        "file_path": f"/home/dev/work/rho/src/feature_{index}.py",
        "branch": f"rho/m-bench/feature-{index:03d}",
        "model": "some-model-2026-01",
        "reason": "blocked by an upstream failure" if index % 7 == 0 else "none",
    }
    return {
        "id": node_id,
        "kind": "execution",
        "scope": {"tenant_id": "acme", "project_id": "bench"},
        "created_at": _STAMP,
        "effective_at": _STAMP,
        "provenance": {
            "producer": "rho-mission",
            "version": "0.1.0",
            "evidence": [{"uri": f"file:///home/dev/work/rho/.rho/logs/{index}.log"}],
        },
        "attributes": attributes,
    }


def _ref(index: int) -> dict[str, str]:
    return {"kind": "execution", "id": f"rho/mission-feature/m-bench/feature-{index:03d}"}


def _edge(index: int, rng: random.Random, nodes: int) -> dict[str, Any]:
    source = rng.randrange(1, nodes)
    target = rng.randrange(0, source)
    return {
        "id": f"rho/edge/mission/m-bench/{index:04d}",
        "kind": rng.choice(("depends_on", "contains", "references")),
        "from": _ref(source),
        "to": _ref(target),
        "scope": {"tenant_id": "acme", "project_id": "bench"},
        "created_at": _STAMP,
        "effective_at": _STAMP,
        "provenance": {"producer": "rho-mission"},
        "attributes": {"dependency_type": "blocks", "source_branch": f"rho/b-{source}"},
    }


def _event(index: int, rng: random.Random, nodes: int) -> dict[str, Any]:
    return {
        "id": f"rho/event/m-bench/{index:04d}",
        "type": rng.choice(("created", "transitioned", "observed")),
        "subject": _ref(rng.randrange(nodes)),
        "scope": {"project_id": "bench"},
        "occurred_at": _STAMP,
        "correlation_id": "rho/mission/m-bench",
        "idempotency_key": f"rho/event/m-bench/{index:04d}",
        "provenance": {"producer": "rho-mission"},
    }


def build_graph(nodes: int = 250, edges: int = 400, events: int = 250) -> dict[str, Any]:
    """Return the benchmark graph as JSON data, facts shuffled (as if written by hand)."""
    rng = random.Random(20261101)
    data: dict[str, Any] = {
        "schema_version": "rho.graph/v1",
        "generated_at": _STAMP,
        "scope": {"tenant_id": "acme", "project_id": "bench", "repository_id": "rho"},
        "nodes": [_node(i, rng) for i in range(nodes)],
        "edges": [_edge(i, rng, nodes) for i in range(edges)],
        "events": [_event(i, rng, nodes) for i in range(events)],
    }
    for key in ("nodes", "edges", "events"):
        rng.shuffle(data[key])
    return data


def _time_once(function: Callable[[], Any]) -> float:
    gc.disable()  # like timeit: no collection inside the measured call
    try:
        start = time.perf_counter()
        function()
        return time.perf_counter() - start
    finally:
        gc.enable()


def main(argv: Sequence[str] | None = None) -> int:
    """Build the graph, time validate + prepare, and print the medians and the body size."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeats", type=int, default=50, help="timed runs per measurement")
    args = parser.parse_args(argv)
    data = build_graph()
    file_bytes = len(json.dumps(data, indent=2).encode())
    document = validate_graph(data)
    measures: dict[str, Callable[[], Any]] = {
        "validate": lambda: validate_graph(data),
        "prepare (validated doc)": lambda: prepare_for_cloud(document),
        "validate + prepare": lambda: prepare_for_cloud(validate_graph(data)),
    }
    for function in measures.values():  # warm-up
        function()
    print(
        f"graph: {len(data['nodes'])} nodes, {len(data['edges'])} edges, "
        f"{len(data['events'])} events ({file_bytes} bytes as indented JSON); "
        f"Python {sys.version.split()[0]}"
    )
    print(f"{'measure':<24} {'median ms':>10} {'min ms':>8} {'max ms':>8} {'runs':>5}")
    for name, function in measures.items():
        runs = [_time_once(function) for _ in range(args.repeats)]
        print(
            f"{name:<24} {statistics.median(runs) * 1e3:>10.2f} {min(runs) * 1e3:>8.2f} "
            f"{max(runs) * 1e3:>8.2f} {len(runs):>5}"
        )
    prepared = prepare_for_cloud(data)
    print(f"prepared body: {len(prepared.body)} bytes (RFC 8785); sync id {prepared.sync_id}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
