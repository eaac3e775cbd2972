"""``rho graph verify-swarm`` and ``rho graph sign-swarm``: Chio swarm task graphs.

Decision: docs/decisions/0401-swarm-graphs.md
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ._errors import CliError

if TYPE_CHECKING:
    from graph.swarm import SwarmGraphRejected

__all__ = ["checked_keys", "sign_swarm", "trusted_keys_from", "verify_swarm", "write_signed"]

TRUSTED_KEYS_VARIABLE = "RHO_SWARM_TRUSTED_KEYS"


def trusted_keys_from(flags: tuple[str, ...]) -> list[str]:
    """The ``--trusted-key`` values, else the comma-separated ``RHO_SWARM_TRUSTED_KEYS``."""
    if flags:
        return list(flags)
    pinned = os.environ.get(TRUSTED_KEYS_VARIABLE, "")
    return [key.strip() for key in pinned.split(",") if key.strip()]


def checked_keys(keys: list[str]) -> list[str]:
    """*keys*, once each is known to be an Ed25519 public key.

    Raises:
        CliError: one is not (exit 2: a mistake of the caller, not a verdict on a graph).
    """
    from graph.swarm import SwarmKeyError, parse_trusted_keys

    try:
        parse_trusted_keys(keys)
    except SwarmKeyError as exc:
        origin = f"--trusted-key or {TRUSTED_KEYS_VARIABLE}"
        raise CliError(f"bad trusted key ({origin}): {exc}") from exc
    return keys


@click.command("verify-swarm")
@click.argument("file", type=click.Path(path_type=Path))
@click.option(
    "--trusted-key",
    "trusted",
    multiple=True,
    metavar="HEX",
    help="An issuer's Ed25519 public key, 64 hex digits (repeatable; default: "
    "$RHO_SWARM_TRUSTED_KEYS, comma-separated).",
)
@click.option(
    "--now",
    "now_ms",
    type=click.IntRange(min=0),
    default=None,
    metavar="UNIX_MS",
    help="Verify as at this time, in milliseconds since 1970 [default: the clock].",
)
@click.option("--json", "as_json", is_flag=True, help="Print the verdict as JSON.")
def verify_swarm(file: Path, trusted: tuple[str, ...], now_ms: int | None, as_json: bool) -> int:
    """Verify a signed swarm task graph (chio.swarm.task-graph.v1).

    Accepted: prints 'graphSha256 <hex>', exit 0. Rejected: prints the reason and its failure
    code, exit 1; a file that cannot be read or parsed is a rejection too.

    Example: rho graph verify-swarm plan.json --trusted-key 43046bfe...a5de
    """
    from graph.swarm import SwarmGraphRejected, read_swarm_document, verify_swarm_task_graph

    now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    keys = checked_keys(trusted_keys_from(trusted))
    try:
        digest = verify_swarm_task_graph(read_swarm_document(file), keys, now)
    except SwarmGraphRejected as rejected:
        _print_rejection(rejected, as_json)
        return 1
    if as_json:
        click.echo(json.dumps({"accepted": True, "graphSha256": digest}))
    else:
        click.echo(f"graphSha256 {digest}")
    return 0


def _print_rejection(rejected: SwarmGraphRejected, as_json: bool) -> None:
    if as_json:
        verdict = {"accepted": False, "reason": rejected.reason, "code": rejected.code}
        click.echo(json.dumps(verdict, ensure_ascii=False))
    else:
        click.echo(f"rejected: {rejected.reason}")
        click.echo(f"code: {rejected.code}")


@click.command("sign-swarm")
@click.argument("file", type=click.Path(path_type=Path))
@click.option(
    "--key-file",
    required=True,
    type=click.Path(path_type=Path),
    help="The issuer's Ed25519 private key: a 32-byte seed as hex, or a PEM private key.",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the signed graph there (atomically, mode 0600) instead of stdout.",
)
def sign_swarm(file: Path, key_file: Path, out: Path | None) -> None:
    """Sign a swarm task graph as its issuer: canonical JSON (RFC 8785), Ed25519.

    An empty issuer becomes the key's did:chio:<public key>; a graph that a verifier would
    refuse for its shape (a cycle, a depth over the ceiling, ...) is not signed (exit 2).

    Example: rho graph sign-swarm draft.json --key-file issuer.key --out plan.json
    """
    from graph.swarm import (
        SwarmGraphRejected,
        canonical_swarm_bytes,
        load_signing_key,
        read_swarm_document,
        sign_swarm_task_graph,
    )

    key = load_signing_key(key_file)
    try:
        signed = sign_swarm_task_graph(read_swarm_document(file), key)
    except SwarmGraphRejected as exc:
        raise CliError(f"cannot sign: {exc.reason}") from exc
    write_signed(canonical_swarm_bytes(signed) + b"\n", out)


def write_signed(data: bytes, out: Path | None) -> None:
    """Write *data* to *out* atomically (0600), or to stdout without *out*."""
    if out is None:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    from taskstore import write_atomic

    write_atomic(out, data)
