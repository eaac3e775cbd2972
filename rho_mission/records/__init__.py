"""Records: what a mission holds on disk, and the graphs drawn from it.

- ``_places``: the names of rho's places (``.rho/...`` folders, a mission's refs);
- ``_document``: the mission.json document (``MissionDocument``, ``Feature``, ``WaveJoin``...);
- ``_missionbytes``: mission.json's bytes at a join, each feature dumped again only if changed;
- ``_persist``: the durable write of mission.json and mission-graph.json (atomic, 0600);
- ``_projection``: missions and task stores onto the portable graph (``rho.graph/v1``);
- ``_graphcache``: the mission graph rewritten in time proportional to what changed;
- ``_journal``: journal.jsonl, append-only, metadata and digests only;
- ``_logs``: reading task logs and the journal without following a link;
- ``_clock``: timestamps (RFC 3339, milliseconds, UTC);
- ``_usage``: what an attempt spent, and the sums; ``_usagelimits``: the bounds of a figure
  of usage (the standard library only, for the CLI's quick lane too).

Direction: imports ``rho_mission._errors``, ``containment`` (its folders and files that never
follow a link), ``taskstore`` and ``graph``; never git, the executors, the engine or the mission.
Everything above reads and writes a mission through here.

Decision: docs/decisions/0510-mission-records.md
"""
