"""Tests of the mission engine (``rho_mission``)."""
