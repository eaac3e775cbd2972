"""Drive the mission engine from Python: features, waves and an async worker of your own.

Run: `.venv/bin/python examples/library_pipeline.py [REPO]` (default: a scratch repository).
The worker writes one file per feature; the engine commits it, merges each wave into the
integration branch, and the next wave's worktree starts from there. The parser fails its
first attempt (as an agent might), so the mission ends ``partial``; ``Mission.load(dir)`` and
``resume_sync`` then carry on from that wave, the completed features left as they are.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from rho_mission import (
    Feature,
    FeatureFailedError,
    Handoff,
    Mission,
    MissionConfig,
    WorkerContext,
)


async def worker(ctx: WorkerContext) -> Handoff | None:
    """Write ``<feature>.txt`` listing what this worktree already holds from earlier waves;
    the parser's first attempt fails."""
    if ctx.feature.id == "parser" and ctx.attempt == 1:
        raise FeatureFailedError("the parser's first try gives up (on purpose)")
    earlier = sorted(p.name for p in ctx.worktree.glob("*.txt"))
    text = f"{ctx.feature.subject}\nsaw: {', '.join(earlier) or 'nothing'}\n"
    (ctx.worktree / f"{ctx.feature.id}.txt").write_text(text, encoding="utf-8")
    return None  # the engine commits the worktree's changes and builds the handoff


def scratch_repository() -> Path:
    """A new repository with one commit, in a temporary folder."""
    folder = Path(tempfile.mkdtemp(prefix="rho-example-")) / "repo"
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    identity = ["-c", "user.name=rho example", "-c", "user.email=example@rho.invalid"]
    subprocess.run(
        ["git", *identity, "commit", "-q", "--allow-empty", "-m", "start"], cwd=folder, check=True
    )
    return folder


def main() -> int:
    """Run a three-feature mission in two waves and print what happened."""
    repo = Path(sys.argv[1]) if len(sys.argv) > 1 else scratch_repository()
    features = [Feature("lexer", "split input into tokens"), Feature("parser", "build the tree")]
    features.append(Feature("docs", "describe the grammar"))
    mission = Mission.new(repo, "build the parser", features, MissionConfig(max_workers=2))
    mission.run_staged_sync(worker, waves=[["docs", "lexer"], ["parser"]])
    print(f"first run: {mission.status}: {mission.feature('parser').error}")
    mission = Mission.load(mission.dir).resume_sync(worker)
    for join in mission.wave_joins:
        print(join.summary)
    parser = mission.feature("parser")
    assert parser.handoff is not None
    print(f"parser: {parser.status}, files {parser.handoff.files_changed}")
    print(f"mission {mission.id} {mission.status}: {mission.dir}")
    return 0 if mission.status == "completed" else 1


if __name__ == "__main__":
    sys.exit(main())
