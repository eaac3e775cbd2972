"""A click-free lane for the commands agents call in loops: ``rho task ready``, ``waves``,
``list``, ``show``, ``add`` and ``update``, on a store rho wrote; ``rho mission show|list``.

Importing click costs about a third of a whole ``rho task ready --json``, and pydantic with rich
several times the whole of it. This lane answers the plain spellings of those commands without
either: it parses the options of the one table both lanes read (``_hottable``, in ``_argv``) and
runs the same body as the full CLI (``_hotbodies``) over the file's own JSON (``_answers``).
``list``, ``show``, ``add`` and ``update`` answer only when every task in the file is exactly
what the model's dump of it would be (``taskstore.read_task_dicts``, ``fast_add``,
``fast_update``): a store rho wrote. Any other command line, any other store and every failure
returns None before anything is printed or written, and the full click CLI then runs the same
command line: both lanes print the same text, the same documents and the same errors (the full
CLI's).

Decision: docs/decisions/0804-quick-lane.md
"""

from __future__ import annotations

import sys

from ._answers import answer
from ._argv import parse

__all__ = ["quick_run"]


def quick_run(args: list[str]) -> int | None:
    """Answer *args* if the lane can; None to use the full CLI.

    Never raises for bad input: any failure returns None before anything is printed or written,
    so that the full CLI reports it in its own words. Only a failure to write the output is
    reported here.
    """
    call = parse(args)
    if call is None:
        return None
    try:
        text = answer(call)
    except Exception:  # the full CLI runs the same command again and reports the failure
        return None
    if text is None:
        return None
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except OSError as exc:  # e.g. a closed pipe; the full CLI would say the same
        sys.stderr.write(f"error: {exc.strerror or exc}\n")
        return 2
    return 0
