"""Containment: what keeps a task (untrusted code) from making rho act outside its worktree.

- ``_pins``: a worktree as rho made it (its folder's identity and its git directory), so that
  rho's git calls never take their repository from the ``.git`` file a task can rewrite, and
  never run in a folder a task swapped for a link;
- ``_folders``: rho's own folders, made 0700, and never a link that would lead elsewhere;
  and the one way rho opens its private files (``open_private``);
- ``_environ``: the environment of every process rho starts, without git's repository paths;
- ``_process``: a command in its own process group, and that group stopped for good;
  ``_pids``: whether a process exists (for the light readers: no anyio);
- ``_reaper``: a per-task supervisor, the child subreaper of everything the task starts, so
  that no process of a task outlives it (``setsid``, ``env -i`` and a changed process title
  included); ``_zygote``: one warm process per rho process that forks each supervisor (no
  interpreter start-up per task); ``_wrapper``: a task's supervisor arguments and sandbox;
  ``_helpers``: the deadline on every exchange with rho's long-lived helpers (the zygote,
  the ref stream), which a task can stop, and their end even when stopped;
- ``_mission_processes``: every process of a mission found and ended, journaled or not;
- ``_guarantees``: what a mission promised when it started (a signed plan, a sandbox), kept
  outside its mission folder, so that a resume never runs it with less;
- ``_sandbox``: ``--sandbox``, each task under bubblewrap: its worktree writable, the store,
  the mission records, the user's checkout and ``.git`` out of its reach, its own PID
  namespace; ``_quarantine``: where a sandboxed task's new objects go, checked and moved in
  after it; ``_hostmask``: the host's sockets and the home's secrets it never sees;
- ``_gitconfig``: git's configuration held as it was when a mission began, checked around
  every git call of rho's;
- ``_orphans``: rho as the child subreaper above every supervisor, and the ending of what a
  killed supervisor left; ``_cgroup``: a cgroup per task where the machine allows.

Direction: the bottom of the library. Imports only the standard library,
``taskstore``'s atomic writes and ``rho_mission._errors``; every other package may import it,
it imports none of them. ``_reaper`` imports nothing but the standard library: it runs as a
script of its own (the zygote).

Decision: docs/decisions/0701-threat-model.md
"""

from __future__ import annotations

from ._guarantees import guarantees_path, hold_guarantees
from ._pins import PinnedWorktree, pin_worktree, pinned, require_pinned, unpin
from ._sandbox import SandboxSpec, bwrap_argv, require_bwrap

__all__ = [
    "PinnedWorktree",
    "SandboxSpec",
    "bwrap_argv",
    "guarantees_path",
    "hold_guarantees",
    "pin_worktree",
    "pinned",
    "require_bwrap",
    "require_pinned",
    "unpin",
]
