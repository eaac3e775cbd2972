"""Tests of rho_mission.records: journal, mission files and graph, projections, usage, live
status."""
