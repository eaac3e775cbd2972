"""Dask's own words during a mission: kept in ``logs/executor/dask.log``, not on the terminal.

distributed logs warnings and tracebacks (a worker that died, a closed comm, a task retried) to
the terminal, where they tear through the mission's progress. While a Dask executor is open, the
records of the ``distributed`` and ``tornado`` loggers and Python warnings go to the mission's
``logs/executor/dask.log`` instead (opened like every log under ``.rho``, never through a
link; in a folder of its own, where no task's log can be: ``records._places``); closing puts
the loggers back as they were. A lost worker is told once, on the line of the task it was
running (``task_1 failed: dask: WorkerLostError: the dask worker running this attempt died``).

The worker processes of a ``--local-cluster`` log in their own processes: they are started with
only CRITICAL records shown (``silence_logs``), since each of their failures reaches the
coordinator as the result of its task.

Decision: docs/decisions/0503-executors.md
"""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path
from typing import TextIO

from ..containment._folders import open_private

__all__ = ["DaskLog"]

_LOGGERS = ("distributed", "tornado")


class DaskLog:
    """The capture of Dask's logging and warnings into *path*, from ``open`` to ``close``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: logging.StreamHandler[TextIO] | None = None
        self._saved: list[tuple[logging.Logger, list[logging.Handler], bool, int]] = []

    def open(self) -> None:
        """Send the records to the log file (0600, folders 0700, no link followed).

        Raises:
            UnsafePathError: a link stands at the log or on the way to it.
        """
        stream = os.fdopen(open_private(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND), "a")
        self._file = logging.StreamHandler(stream)
        self._file.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        for name in (*_LOGGERS, "py.warnings"):
            logger = logging.getLogger(name)
            self._saved.append((logger, list(logger.handlers), logger.propagate, logger.level))
            logger.handlers = [self._file]
            logger.propagate = False
            logger.setLevel(logging.INFO)
        logging.captureWarnings(True)
        warnings.simplefilter("default")

    def close(self) -> None:
        """Put the loggers back; close the file."""
        logging.captureWarnings(False)
        for logger, handlers, propagate, level in self._saved:
            logger.handlers = handlers
            logger.propagate = propagate
            logger.setLevel(level)
        self._saved.clear()
        if self._file is not None:
            self._file.close()
            self._file.stream.close()
            self._file = None
