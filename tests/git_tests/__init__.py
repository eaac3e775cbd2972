"""Tests of rho_mission.git: the git layer, refs and their stream, the worktree pool, git processes
per feature."""
