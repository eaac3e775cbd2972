"""``rho mission plan``: the task store as a (signed) Chio swarm task graph.

Decision: docs/decisions/0402-signed-plans.md
"""

from __future__ import annotations

import time
from pathlib import Path

import click

from ._mission import _duration
from ._paths import command_store_path

__all__ = ["plan"]

_U32_MAX = 2**32 - 1


@click.command("plan")
@click.option("--store", "store_path", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--sign",
    "key_file",
    type=click.Path(path_type=Path),
    help="Sign with this Ed25519 private key (a 32-byte seed as hex, or a PEM); without it, "
    "print the unsigned draft ('rho graph sign-swarm' signs it).",
)
@click.option(
    "--max-depth", type=click.IntRange(0, _U32_MAX), help="Depth ceiling [default: the store's]."
)
@click.option(
    "--max-fanout", type=click.IntRange(1, _U32_MAX), help="Fan-out ceiling [default: the store's]."
)
@click.option(
    "--ttl", callback=_duration, default="7d", show_default=True, help="How long the plan is valid."
)
@click.option("--run", "run_command", default=None, help="The --run the mission will be given.")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the plan there (atomically, mode 0600) instead of stdout.",
)
@click.option(
    "--public-key",
    "public_of",
    type=click.Path(path_type=Path),
    metavar="KEYFILE",
    help="Print the public key of this private key, as the hex --trusted-key takes, and stop.",
)
def plan(
    store_path: Path | None,
    key_file: Path | None,
    max_depth: int | None,
    max_fanout: int | None,
    ttl: float,
    run_command: str | None,
    out: Path | None,
    public_of: Path | None,
) -> None:
    """Emit the task store as a chio.swarm.task-graph.v1 plan, signed with --sign.

    One root node for the plan, one node per task (under its parent task, else the root; its
    depth its nesting), a join for each task with two or more blockers, and as each task's
    scopeHash the SHA-256 of what it will do (subject, description, command, blockers).
    'rho mission --from-tasks --require-signed-plan FILE' then refuses a store that differs.

    Example: rho mission plan --sign issuer.key --max-fanout 8 --out plan.json
    """
    from graph.swarm import canonical_swarm_bytes, load_signing_key, sign_swarm_task_graph
    from taskstore import TaskStore, compute_schedule

    from ..mission._signedplan import plan_document

    if public_of is not None:
        from graph.swarm import public_key_hex

        click.echo(public_key_hex(load_signing_key(public_of)))
        return

    key = None if key_file is None else load_signing_key(key_file)
    tasks = TaskStore(command_store_path(store_path, reading=True)).tasks()
    compute_schedule(tasks)  # a plan of a store that cannot run would be a promise of nothing
    document = plan_document(
        tasks,
        run_command=run_command,
        max_depth=max_depth,
        max_fanout=max_fanout,
        created_unix_ms=time.time_ns() // 1_000_000,
        ttl_ms=round(ttl * 1000),
    )
    if key is not None:
        document = sign_swarm_task_graph(document, key)
    from ._swarm import write_signed

    write_signed(canonical_swarm_bytes(document) + b"\n", out)
