"""Missions as their callers have them: ``Mission``, made from the store, named, merged, cleaned.

- ``_mission``: ``Mission``, the library API (``new``, ``load``, ``plan``, ``run_staged``,
  ``resume``, each with its ``_sync`` twin);
- ``_fromtasks``: a mission from the task store; ``_selection``: which tasks it runs and holds;
- ``_waves``: the waves a mission runs, given and checked, or computed from ``blocked_by``;
- ``_resume_refresh``: resume with the fix, the features still to run read again from the store;
- ``_signedplan``: the store as a signed Chio swarm task graph, then enforced;
- ``_names``: a mission by folder, id, unique prefix or ``latest``;
- ``_merge``: ``rho mission merge``; ``_pick``: a mission's work task by task;
- ``_conflicts``: ``rho mission conflicts``, which work of a mission overlaps;
- ``_cleanup``: ``rho mission clean``; ``_graphsource``: the graph of a folder or a store.

Direction: the top of the library. Imports ``planning``, ``engine``, ``executors``, ``git``,
``records``, ``containment``, ``rho_mission._errors``, ``taskstore`` and ``graph``; nothing of the
library imports it but ``rho_mission``'s public names. The CLI, the server and the MCP tools call
it; it never imports them.

Decision: docs/decisions/0501-missions.md
"""
