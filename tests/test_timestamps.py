"""The two clocks say their precision in their names: the store's seconds, the records' millis."""

from __future__ import annotations

import re

from rho_mission.records._clock import now_rfc3339_millis
from taskstore._rules import now_rfc3339_seconds


def test_the_store_stamps_whole_seconds() -> None:
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", now_rfc3339_seconds())


def test_the_records_stamp_milliseconds() -> None:
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", now_rfc3339_millis())
