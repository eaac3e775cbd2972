"""Tests of ``rho serve``, its SDK clients, the mission page and ``rho mission report``."""
