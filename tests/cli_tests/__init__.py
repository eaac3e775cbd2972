"""Tests of the ``rho`` command line, through real subprocesses of the installed script."""
