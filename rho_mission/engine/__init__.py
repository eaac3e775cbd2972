"""The wave engine: run features wave by wave, join, persist, and only then go on.

- ``_loop``: ``run_waves``, the coordinator: the run's start and end, each wave, the join and
  its durable write before the next wave;
- ``_state``: every decision between two steps (what starts, whether the next wave starts,
  whether a head is checked, a conflict's next rung, the bisection of a failed join), pure;
- ``_features``: one feature's dispatch, attempts, retries, replays and recorded end;
- ``_ladder``: a join's merges and the rungs of a conflicted merge;
- ``_spend``: what attempts and stages spend, and the budget stop;
- ``_observing``: the observer, guarded (a failing one never stops a mission);
- ``_joins``: what a wave's end records (pure functions, no I/O);
- ``_overlap``: a join's merges as they go, and the ladder a conflicted merge climbs;
- ``_resolve``: the resolve stage, a conflicted merge handed to a resolver with the conflict
  in place;
- ``_verify``: verified joins, the project's checks after a wave, and the fix stage;
- ``_bisect``: a failed join bisected: its culprits found, failed (or replayed), the rest landed;
- ``_stage_runner``: one run of a stage's worker in the stages' worktree pool (verify, fix,
  resolve);
- ``_stage_workers``: which workers run the verify and fix stages, and what they are told;
- ``_adopt``: what a crashed run finished and spent, taken from its journal at a resume;
- ``_storesync``: the task store kept in step with a ``--from-tasks`` mission at each join;
- ``_leases``: the store's tasks a mission holds until it ends;
- ``_carryover``: where a completed task's work is, so that the next mission starts from it.

Direction: imports ``executors`` (their contract, and the local pool for the verify stage),
``git``, ``records``, ``containment``, ``rho_mission._errors`` and ``taskstore``; never the
mission, the planning stage, the CLI or the server. The executors never import it: it hands
them attempts through ``executors._contract``.

Decision: docs/decisions/0501-missions.md, docs/decisions/0514-wave-state.md
"""
