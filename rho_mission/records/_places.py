"""The names of rho's places: its folders under ``<repo>/.rho``, a mission's files, its refs.

Every module that builds one of these paths or ref names asks here, so that the layout of
``.rho/`` (docs/architecture.md, "Files") is spelled once.

A mission's ``logs/`` and ``prompts/`` hold one rule: a file at their top is named by a
feature's id (``logs/<task>.log``, ``prompts/<task>.md``), or by a stage that runs as a feature
under a name no feature id may take (``plan``, ``verify-<wave>``, ``fix-<wave>``:
``records._document.feature_id_problem``). Every other file rho writes there lies one folder
down, in the folder of what wrote it: ``logs/resolve/<task>.log``,
``prompts/resolve/<task>.md`` and ``<task>.conflict.json``, ``logs/setup/<worktree>.log``,
``logs/executor/dask.log``. A feature id holds no ``/``, so no task, whatever its id, shares
a file with a stage.

Decision: docs/decisions/0702-safety-invariants.md
"""

from __future__ import annotations

import os
from collections.abc import Collection
from pathlib import Path

__all__ = [
    "LOGS",
    "RHO_DIR",
    "RHO_PATTERN",
    "dask_log",
    "default_store",
    "feature_branch",
    "feature_log",
    "feature_prompt",
    "integration_branch",
    "mission_folder",
    "mission_ref_prefix",
    "mission_worktrees",
    "missions_folder",
    "notify_log",
    "pool_folder",
    "resolve_brief",
    "resolve_log",
    "resolve_prompt",
    "rho_folder",
    "setup_log",
    "setup_states_folder",
    "stage_log_found",
    "worktrees_folder",
]

RHO_DIR = ".rho"
#: The line that keeps ``.rho/`` out of git (``info/exclude``), and any pathspec of it.
RHO_PATTERN = ".rho/"


def rho_folder(root: Path) -> Path:
    """``<root>/.rho``: everything rho keeps in a repository."""
    return root / RHO_DIR


def default_store(root: Path) -> Path:
    """``<root>/.rho/tasks.json``: the repository's task store."""
    return rho_folder(root) / "tasks.json"


def missions_folder(root: Path) -> Path:
    """``<root>/.rho/missions``: one folder per mission."""
    return rho_folder(root) / "missions"


def mission_folder(root: Path, mission_id: str) -> Path:
    """``<root>/.rho/missions/<id>``."""
    return missions_folder(root) / mission_id


def worktrees_folder(root: Path) -> Path:
    """``<root>/.rho/worktrees``: the worktrees of missions and the shared pool."""
    return rho_folder(root) / "worktrees"


def pool_folder(root: Path) -> Path:
    """``<root>/.rho/worktrees/pool``: the worktrees missions give back for later ones."""
    return worktrees_folder(root) / "pool"


def setup_states_folder(root: Path) -> Path:
    """``<root>/.rho/worktrees/setup``: the last setup of each pooled worktree (``--setup``)."""
    return worktrees_folder(root) / "setup"


def mission_worktrees(root: Path, mission_id: str, part: str | None = None) -> Path:
    """``<root>/.rho/worktrees/<id>`` (a mission's own worktrees), or its *part*
    (``checks``: the verify and fix stages; ``planner``: the planning stage)."""
    folder = worktrees_folder(root) / mission_id
    return folder if part is None else folder / part


def mission_ref_prefix(mission_id: str) -> str:
    """``rho-mission/<id>/``: every branch of the mission, and only those, starts with it."""
    return f"rho-mission/{mission_id}/"


def integration_branch(mission_id: str) -> str:
    """``rho-mission/<id>/integration``: where the mission's joins merge its work."""
    return mission_ref_prefix(mission_id) + "integration"


def feature_branch(mission_id: str, feature_id: str) -> str:
    """``rho-mission/<id>/<feature>``: a feature's branch."""
    return mission_ref_prefix(mission_id) + feature_id


# -- a mission's logs and prompts ------------------------------------------------------------

LOGS = "logs"
_PROMPTS = "prompts"


def feature_log(mission_dir: Path | str, name: str) -> Path:
    """``<mission>/logs/<name>.log``: the log of a feature, or of a stage named like one."""
    return Path(mission_dir, LOGS, f"{name}.log")


def feature_prompt(mission_dir: Path | str, name: str) -> Path:
    """``<mission>/prompts/<name>.md``: the prompt of a feature's agent (or a fix's, the
    planner's)."""
    return Path(mission_dir, _PROMPTS, f"{name}.md")


def resolve_log(mission_dir: Path | str, feature_id: str) -> Path:
    """``<mission>/logs/resolve/<task>.log``: the resolve stage of a feature's merge."""
    return Path(mission_dir, LOGS, "resolve", f"{feature_id}.log")


def resolve_prompt(mission_dir: Path | str, feature_id: str) -> Path:
    """``<mission>/prompts/resolve/<task>.md``: what the resolver of a feature's merge reads."""
    return Path(mission_dir, _PROMPTS, "resolve", f"{feature_id}.md")


def resolve_brief(mission_dir: Path | str, feature_id: str) -> Path:
    """``<mission>/prompts/resolve/<task>.conflict.json``: what met what, for its resolver."""
    return Path(mission_dir, _PROMPTS, "resolve", f"{feature_id}.conflict.json")


def setup_log(mission_dir: Path | str, worktree: str) -> Path:
    """``<mission>/logs/setup/<worktree>.log``: the setups run in one worktree (``--setup``)."""
    return Path(mission_dir, LOGS, "setup", f"{worktree}.log")


def dask_log(mission_dir: Path | str) -> Path:
    """``<mission>/logs/executor/dask.log``: what Dask said while the mission ran on it."""
    return Path(mission_dir, LOGS, "executor", "dask.log")


def notify_log(mission_dir: Path | str) -> Path:
    """``<mission>/logs/notify/notifier.log``: what the notifier (``--notify``) printed."""
    return Path(mission_dir, LOGS, "notify", "notifier.log")


# Where a mission written before stages had their folders kept a stage's log, at the top.
_LOGS_BEFORE = {"resolve": "{}.resolve.log", "setup": "setup-{}.log"}


def stage_log_found(
    mission_dir: Path | str, stage: str, name: str, feature_ids: Collection[str]
) -> Path:
    """The log of *stage* (``resolve``, ``setup``) for *name* where the mission wrote it: its
    folder's (``resolve_log``, ``setup_log``), or, for a mission an older rho wrote, the old
    name at the top of ``logs/`` when that file is there and no feature of *feature_ids* owns
    the name (then the file is that feature's log, never the stage's)."""
    found = resolve_log(mission_dir, name) if stage == "resolve" else setup_log(mission_dir, name)
    old = Path(mission_dir, LOGS, _LOGS_BEFORE[stage].format(name))
    if os.path.lexists(found) or old.name.removesuffix(".log") in feature_ids:
        return found
    return old if os.path.lexists(old) else found
