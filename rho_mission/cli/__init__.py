"""The ``rho`` command line: a thin shell over the libraries (parse, call, render).

Direction: the top layer. Imports the library (``mission`` and what is below it), ``taskstore``
and ``graph``, and starts ``serve`` and ``mcp_server``; nothing of the library imports it but
``rho_mission.__main__``. ``_quick`` imports neither click nor pydantic (see its docstring).

Decision: docs/decisions/0901-layers.md
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Sequence
from types import FrameType

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> None:
    """Run ``rho`` and exit with its code: 0 ok, 1 failed work, 2 bad input, 130 cancelled.

    The commands agents call in loops (``rho task ready|waves|list|show|add|update``, ``rho
    mission show|list``) take a lane that imports neither click, pydantic nor rich (``_quick``);
    every other command line, and every failure, runs the full CLI.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    from ._output import guarded_output
    from ._quick import quick_run

    with guarded_output():
        code = quick_run(args)
        if code is None:
            from ._main import run

            # SIGTERM (``timeout``, a CI job's cancel) stops the full CLI as Ctrl-C does:
            # ``rho mission`` cancels its run (its own receiver takes both while it runs), any
            # other command or moment ends with "error: cancelled" and 130.
            signal.signal(signal.SIGTERM, _as_ctrl_c)
            code = run(args)
    sys.exit(code)


def _as_ctrl_c(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt
