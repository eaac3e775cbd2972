"""Tests of rho_mission.mission: missions from the library and through ``rho mission`` (from a
store, by name, planned, signed, cleaned, merged)."""
