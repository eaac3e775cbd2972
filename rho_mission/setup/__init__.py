"""A worktree ready to work in: a setup run once per pooled worktree, kept while its key holds.

- ``_inputs``: the ``--copy`` files (untracked files of the checkout, read once, checked: not
  tracked, not a link, inside the repository) and the ``--setup-key`` paths;
- ``_key``: the setup key, a digest of the setup and of the key files at a start commit;
- ``_manifest``: what the setup left (its outputs, the paths git ignores), walked without
  following a link into one digest of every entry's type, mode, size, times and inode;
- ``_state``: each pooled worktree's last setup, in ``.rho/worktrees/setup/<name>.json``;
- ``_trust``: whether the commit a setup ran on is the user's own (the setup may serve later
  missions) or holds tasks' work (it serves its own mission alone);
- ``_keeper``: ``WorktreeSetup``, what the executor asks before and after each attempt;
- ``_carried``: whether commits about to land carry a ``--copy`` file (none rho lands may).

Direction: uses ``git``, ``records`` and ``containment``; the executors run the setup itself.

Decision: docs/decisions/0604-setup-and-copy.md
"""

from __future__ import annotations

from ._carried import carried_copy, carried_text, refuse_carried
from ._inputs import CopiedFile, check_setup_inputs, read_copies, repository_path
from ._keeper import SetupLeftFilesError, WorktreeSetup
from ._state import drop_orphan_states, read_state

__all__ = [
    "CopiedFile",
    "SetupLeftFilesError",
    "WorktreeSetup",
    "carried_copy",
    "carried_text",
    "check_setup_inputs",
    "drop_orphan_states",
    "read_copies",
    "read_state",
    "refuse_carried",
    "repository_path",
]
