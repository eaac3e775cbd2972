"""Tests of rho_mission.executors: the executor seam, the Dask executor, what a command is given."""
