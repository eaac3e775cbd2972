"""``python -m rho_mission``: the ``rho`` command.

Decision: docs/decisions/0901-layers.md
"""

from __future__ import annotations

from rho_mission.cli import main

main()
