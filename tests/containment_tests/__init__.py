"""Tests of rho_mission.containment: task processes, the zygote and the supervisor, signals,
cgroups, the sandbox, private files, trust."""
