"""Tests of rho_mission.engine: waves, joins, verify and fix, resolve and replay, keep-going,
resume."""
