"""``python -m rho_mission``: the ``rho`` command."""

from __future__ import annotations

from rho_mission.cli import main

main()
