"""Attention: a mission tells the user's notifier when it needs them.

``--notify CMD`` / ``--notify-url URL`` (``MissionConfig.notify_command``, ``notify_url``,
``notify_token_file``: stored, so a resume keeps them) get one JSON event when a run ends
(``mission_ended``), stops on a failure or a cancellation (``mission_stopped``), reaches its
budget (``budget_reached``), and when a join's bisection names culprits (``culprit_found``).

- ``_event``: the event, a pure function of the mission document (counts and ids only);
- ``_send``: the notifier: the command (a built environment, a time limit) and the POST;
- ``_attention``: the run's observer that sees culprits, and the end event.

Direction: imports ``executors`` (the ``Observer`` protocol only), ``records``, ``containment``
(the process machinery); never the engine, the planning stage or the mission. The mission
(``mission._mission``) wraps its run in ``attention``; a notifier's failure is a warning, never
an error.

Decision: docs/decisions/0806-notifications.md
"""

from __future__ import annotations

from ._attention import CulpritWatch, attention
from ._event import EVENT_SCHEMA, culprit_event, end_event, event_bytes, next_command
from ._send import NOTIFY_TIMEOUT, Notifier, notifier_environ

__all__ = [
    "EVENT_SCHEMA",
    "NOTIFY_TIMEOUT",
    "CulpritWatch",
    "Notifier",
    "attention",
    "culprit_event",
    "end_event",
    "event_bytes",
    "next_command",
    "notifier_environ",
]
