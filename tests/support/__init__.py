"""Helpers of the whole suite: running ``rho``, making repositories and stores, /proc.

Imported as ``support.*``: ``tests/`` is on ``sys.path`` (``pythonpath`` in pyproject's pytest
settings; mypy finds it among its ``files``). Fixtures live in ``support.fixtures``: a folder's
``conftest.py`` imports the ones its tests use.
"""
