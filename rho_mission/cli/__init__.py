"""The ``rho`` command line: a thin shell over the libraries (parse, call, render)."""

from __future__ import annotations

from ._main import main as main

__all__ = ["main"]
