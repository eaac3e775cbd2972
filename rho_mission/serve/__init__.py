"""``rho serve`` and ``rho mission report``: look at missions through HTTP and in a browser.

- ``_source``: what is read (mission folders, the task store), with every input checked first;
- ``_graphs``: the graph routes, through the code of ``rho graph export``;
- ``_events``: a mission as Server-Sent Events;
- ``_auth``: the token check; ``_token``: the token file;
- ``_app``: the Starlette routes; ``_run``: the socket and uvicorn;
- ``_page``, ``page.{html,css,js}`` and ``render.js``: the self-contained page; ``_report``:
  its static form.

Nothing here writes anything but ``.rho/serve.token`` and a report file the user names, and
nothing takes a lock of a mission or of the task store.

Direction: imports the library (``mission``, ``git``, ``records``, ``containment``,
``rho_mission._errors``), ``taskstore`` and ``graph``; never the CLI, which only starts it
(``cli/_serve``, ``cli/_report``).

Decision: docs/decisions/0801-serve.md
"""

from __future__ import annotations

__all__: list[str] = []
