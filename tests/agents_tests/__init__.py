"""Tests of rho_mission.agents: agents' verdicts, usage readers, what an agent by name may do."""
