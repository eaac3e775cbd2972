"""Tests of rho_mission.notify: the events, the notifier command and URL, their failures."""
