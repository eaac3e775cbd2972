"""Shared pieces of the engine's library-level tests: a scripted worker, observers, git peeks.

The worker is a real library worker (``async def worker(ctx)``): it writes into its real
worktree and records every call, so that tests can say which features ran, in which attempt,
from which commit, and in which worktree.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from rho_mission import (
    Feature,
    Handoff,
    Mission,
    MissionConfig,
    MissionDocument,
    WaveJoin,
    WorkerContext,
)

Behaviour = Callable[[WorkerContext], Awaitable[Handoff | None]]

# Bound on every wait of a worker for another; never reached when the engine works.
WAIT = 20.0


@dataclass(frozen=True)
class Call:
    """One call of a worker: which feature, which attempt, where and from which commit."""

    feature: str
    attempt: int
    base_commit: str
    worktree: Path


@dataclass
class ScriptedWorker:
    """Writes ``<feature>.txt`` in its worktree, records the call, then runs the feature's script.

    A feature without a script succeeds (returns None, so the engine commits the file).
    """

    scripts: Mapping[str, Behaviour] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)

    async def __call__(self, ctx: WorkerContext) -> Handoff | None:
        self.calls.append(Call(ctx.feature.id, ctx.attempt, ctx.base_commit, ctx.worktree))
        await anyio.Path(ctx.worktree / f"{ctx.feature.id}.txt").write_text(f"{ctx.feature.id}\n")
        script = self.scripts.get(ctx.feature.id)
        return None if script is None else await script(ctx)

    @property
    def ran(self) -> list[str]:
        """The feature ids of every call, in call order."""
        return [call.feature for call in self.calls]


def fails(message: str) -> Behaviour:
    """A script that fails its feature with *message*."""

    async def script(ctx: WorkerContext) -> Handoff | None:
        raise RuntimeError(message)

    return script


@dataclass
class JoinLog:
    """An observer that notes each join and the integration head right after it."""

    repo: Path
    joins: list[WaveJoin] = field(default_factory=list)
    heads: dict[int, str] = field(default_factory=dict)
    changes: list[tuple[str, str]] = field(default_factory=list)

    def feature_changed(self, mission: MissionDocument, feature: Feature) -> None:
        self.changes.append((feature.id, feature.status))

    def wave_joined(self, mission: MissionDocument, join: WaveJoin) -> None:
        self.joins.append(join)
        self.heads[join.wave] = git_out(self.repo, "rev-parse", mission.integration_branch)


def sha256(text: str) -> str:
    """SHA-256 hex of *text*, as the graph and the journal write digests."""
    return hashlib.sha256(text.encode()).hexdigest()


def file_contents(root: Path) -> dict[str, bytes]:
    """Every file below *root*, ``.git`` included, with its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def journal(mission: Mission) -> list[dict[str, Any]]:
    """The entries of the mission's journal.jsonl, in order."""
    lines = Path(mission.dir, "journal.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def git_out(cwd: Path, *args: str) -> str:
    """The stripped output of the real git CLI run in *cwd*."""
    done = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def plan(repo: Path, ids: Iterable[str], **config: Any) -> Mission:
    """A mission on *repo* with one feature per id (description ``do <id>``) and *config*."""
    features = [Feature(i, f"do {i}") for i in ids]
    return Mission.new(repo, "test mission", features, MissionConfig(**config))


def without_times(joins: Iterable[WaveJoin]) -> list[dict[str, Any]]:
    """The join records with their timestamps removed, for comparing two runs."""
    return [join.model_dump(exclude={"started_at", "completed_at"}) for join in joins]


def worktree_paths(repo: Path, *, pooled: bool = False) -> list[Path]:
    """The worktrees registered in *repo*, the main one first: those in use or left behind; the
    ones given back to the shared pool (locked ``rho-pool idle``) only if *pooled*."""
    blocks = git_out(repo, "worktree", "list", "--porcelain").split("\n\n")
    return [
        Path(block.splitlines()[0].removeprefix("worktree "))
        for block in blocks
        if block.startswith("worktree ") and (pooled or "locked rho-pool idle" not in block)
    ]


def branches(repo: Path, pattern: str) -> list[str]:
    """The local branches of *repo* matching *pattern*, sorted."""
    return sorted(git_out(repo, "branch", "--list", "--format=%(refname:short)", pattern).split())


def tracked_files(repo: Path, ref: str) -> list[str]:
    """The files in the tree of *ref*, sorted."""
    return sorted(git_out(repo, "ls-tree", "-r", "--name-only", ref).split())


def modes(folder: Path) -> dict[str, int]:
    """The permission bits of *folder* and of everything below it, by path relative to it."""
    found = {".": stat.S_IMODE(folder.stat().st_mode)}
    for root, dirs, files in os.walk(folder):
        for name in [*dirs, *files]:
            path = Path(root, name)
            found[str(path.relative_to(folder))] = stat.S_IMODE(path.lstat().st_mode)
    return found


async def wait_for(event: anyio.Event) -> None:
    """Wait for *event*, failing the worker (and so the test) after ``WAIT`` seconds."""
    with anyio.fail_after(WAIT):
        await event.wait()
