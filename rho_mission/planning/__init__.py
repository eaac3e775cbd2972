"""The planning stage: a mission made from a prompt gets its features from a planner.

``rho mission "PROMPT" --planner CMD`` (or ``Mission.plan`` / ``run_staged(plan=...)``) runs
the planner once, in a detached worktree of the base, before any feature: it reads the prompt
(``RHO_PROMPT_FILE``) and writes a plan (``RHO_PLAN_FILE``, ``taskstore.PlanDocument``). The plan
is validated by the task store's rules; the PRD and the plan are kept in the mission folder,
their digests in mission.json. A plan without blockers makes a plain mission (one batch, no
wave-join nodes in its graph); one with blockers runs in waves, like ``--from-tasks``.

Direction: imports ``executors`` (the shell worker and the worker call), ``git`` (a detached
worktree), ``records``, ``containment``, ``rho_mission._errors`` and ``taskstore``'s plan format;
never the engine or the mission. The mission (``mission._mission``) calls it, nothing here
calls back.

Decision: docs/decisions/0507-planning.md
"""

from __future__ import annotations

from ._stage import PLAN_FILE_NAME, Planner, run_planning, shell_planner

__all__ = ["PLAN_FILE_NAME", "Planner", "run_planning", "shell_planner"]
