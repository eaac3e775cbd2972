"""Tests of rho_mission.setup: worktree setup, its key and trust, copied files."""
