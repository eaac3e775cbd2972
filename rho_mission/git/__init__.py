"""The git layer: the repository, its lock, a mission's refs, commits, merges and worktrees.

- ``_repo``: ``GitRepo``, the one place rho runs git (``GitRepo.run``), branches and merges;
- ``_commit``: a feature's result, committed; one ``git status`` decides the rest;
- ``_refs``: a mission's refs, and the compare-and-swap check before any of them moves;
- ``_pool``: ``WorktreePool``, a mission's linked worktrees, borrowed and given back;
- ``_shared_pool``: the repository's pool that outlives a mission, and the claims on its worktrees;
- ``_leftovers``: stale worktrees, what a crash left, told from those in use;
- ``_lock``: the repository-wide lock, across threads and processes;
- ``_runlock``: a mission's run lock, in the git common directory;
- ``_exclude``: ``.rho/`` kept out of git (``info/exclude``);
- ``_repofind``: which repository a folder is in, found without starting git.

Direction: imports ``records`` (places, the document, the journal), ``containment`` (pinned
worktrees, git's environment) and ``rho_mission._errors``; never the executors, the engine or
the mission.

Decision: docs/decisions/0602-git-per-feature.md, docs/decisions/0703-git-hardening.md
"""
