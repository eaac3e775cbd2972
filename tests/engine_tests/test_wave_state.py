"""The wave's decisions without git, processes or files (``rho_mission.engine._state``)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rho_mission.engine._state import (
    Bisection,
    Probe,
    climb_refused,
    goes_on,
    next_rung,
    replay_allowed,
    startable,
    verification_due,
)

# -- what starts -------------------------------------------------------------------------------


def test_startable_skips_completed_and_blocked_features_in_priority_then_natural_order() -> None:
    statuses = {"t_10": "pending", "t_2": "pending", "t_3": "completed", "t_1": "pending"}
    priorities = {"t_10": 0, "t_2": 2, "t_3": 0, "t_1": None}
    assert startable(statuses, statuses, priorities, blocked={"t_1"}) == ["t_10", "t_2"]


# -- whether the next wave starts --------------------------------------------------------------

_CLEAN = {
    "cancelled": False,
    "any_cancelled": False,
    "any_failed": False,
    "keep_going": False,
    "budget_stopped": False,
    "verification": "skipped",
}


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({}, True),
        ({"verification": "passed"}, True),
        ({"verification": "failed"}, False),
        ({"verification": "cancelled"}, False),
        ({"any_failed": True}, False),
        ({"any_failed": True, "keep_going": True}, True),
        ({"any_cancelled": True, "keep_going": True}, False),
        ({"cancelled": True}, False),
        ({"budget_stopped": True}, False),
    ],
)
def test_goes_on(change: dict[str, object], expected: bool) -> None:
    assert goes_on(**{**_CLEAN, **change}) is expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("statuses", "verifying", "cancelled", "keep_going", "expected"),
    [
        ({"completed"}, True, False, False, True),
        ({"completed"}, False, False, False, False),
        ({"completed"}, True, True, False, False),
        ({"completed", "cancelled"}, True, False, True, False),
        ({"completed", "failed"}, True, False, False, False),
        ({"completed", "failed"}, True, False, True, True),
    ],
)
def test_verification_due(
    statuses: set[str], verifying: bool, cancelled: bool, keep_going: bool, expected: bool
) -> None:
    due = verification_due(
        statuses, verifying=verifying, cancelled=cancelled, keep_going=keep_going
    )
    assert due is expected


# -- the merge ladder --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("resolver", "replays", "stop", "broken", "tried", "expected"),
    [
        (True, 0, None, False, False, "resolve"),
        (True, 2, None, False, True, "replay"),
        (True, 0, None, False, True, "fail"),
        (False, 1, None, False, False, "replay"),
        (False, 1, None, True, False, "fail"),
        (True, 1, "budget reached: $1.00 of $1.00", False, False, "fail"),
        (False, 0, None, False, False, "fail"),
    ],
)
def test_next_rung(
    resolver: bool, replays: int, stop: str | None, broken: bool, tried: bool, expected: str
) -> None:
    rung = next_rung(
        has_resolver=resolver,
        replay_conflicts=replays,
        budget_stop=stop,
        broken=broken,
        resolver_tried=tried,
    )
    assert rung == expected


def test_a_cancellation_that_took_rungs_away_cancels_the_feature_else_it_fails() -> None:
    assert climb_refused(cancelled=True, has_resolver=True, replay_conflicts=0) == "cancelled"
    assert climb_refused(cancelled=True, has_resolver=False, replay_conflicts=2) == "cancelled"
    assert climb_refused(cancelled=True, has_resolver=False, replay_conflicts=0) == "failed"
    assert climb_refused(cancelled=False, has_resolver=True, replay_conflicts=1) == "failed"


def test_replays_stop_at_the_most_and_at_the_budget() -> None:
    assert replay_allowed(0, 2, None)
    assert replay_allowed(1, 2, None)
    assert not replay_allowed(2, 2, None)
    assert not replay_allowed(0, 2, "budget reached: 1,000 tokens of 1,000")


# -- bisection ---------------------------------------------------------------------------------

# Each property holds for every case; thirty drawn cases keep each test well under 50 ms.


def _search(order: list[str], fails: object) -> Bisection:
    """Run a bisection to its end; *fails(prefix)* says whether the checks fail on a head."""
    search = Bisection.of_failed_head(order)
    while (probe := search.next_probe()) is not None:
        prefix = search.order[: probe.length]
        if fails(prefix):  # type: ignore[operator]
            search.failed(probe)
        else:
            search.passed(probe)
    return search


def test_one_breaking_feature_is_the_culprit_and_the_rest_pass() -> None:
    search = _search(["a", "b", "c", "d"], lambda prefix: "c" in prefix)
    assert search.culprits == ["c"]
    assert search.passing == ["a", "b", "d"]
    assert search.done
    assert search.blamed_by == {"c": ("a", "b", "c")}  # the failing head that named it


def test_two_that_fail_only_together_blame_the_later_in_merge_order() -> None:
    search = _search(["rename", "x", "caller"], lambda p: "rename" in p and "caller" in p)
    assert search.culprits == ["caller"]
    assert search.passing == ["rename", "x"]


def test_the_last_feature_as_culprit_ends_without_probing_the_passing_prefix_again() -> None:
    search = _search(["a", "b"], lambda prefix: "b" in prefix)
    assert search.culprits == ["b"]
    assert search.passing == ["a"]
    assert search.runs == 1  # the prefix ["a"]; ["a"] is then the order: not probed again


def test_every_feature_a_culprit_leaves_the_base() -> None:
    search = _search(["a", "b", "c"], lambda prefix: bool(prefix))
    assert search.culprits == ["a", "b", "c"]
    assert search.passing == []


def test_a_merge_refused_without_the_culprit_leaves_the_order() -> None:
    search = Bisection.of_failed_head(["a", "b", "c"])
    assert search.next_probe() == Probe(1)
    search.failed(Probe(1))  # "a" is the culprit
    assert search.next_probe() == Probe(2)  # ["b", "c"] on the base
    search.merge_refused("c")  # "c" built on "a": it does not merge without it
    assert search.next_probe() == Probe(1)
    search.passed(Probe(1))
    assert search.next_probe() is None
    assert (search.culprits, search.refused, search.passing) == (["a"], ["c"], ["b"])


@settings(max_examples=20)
@given(
    st.integers(min_value=1, max_value=24).flatmap(
        lambda n: st.tuples(st.just(n), st.sets(st.integers(0, n - 1), min_size=1))
    )
)
def test_independent_breakers_are_found_exactly_within_the_cost_bound(
    case: tuple[int, set[int]],
) -> None:
    n, breakers = case
    order = [f"f{i:02}" for i in range(n)]
    broken = {order[i] for i in breakers}
    search = _search(order, lambda prefix: bool(broken & set(prefix)))
    assert set(search.culprits) == broken
    assert search.culprits == sorted(broken)  # found in merge order
    assert search.passing == [f for f in order if f not in broken]
    assert search.runs <= len(broken) * (1 + 2 * math.ceil(math.log2(n) if n > 1 else 0))


@settings(max_examples=20)
@given(st.integers(min_value=2, max_value=24), st.data())
def test_a_pair_that_fails_together_blames_its_later_member(n: int, data: st.DataObject) -> None:
    first = data.draw(st.integers(0, n - 2))
    second = data.draw(st.integers(first + 1, n - 1))
    order = [f"f{i:02}" for i in range(n)]
    pair = {order[first], order[second]}
    search = _search(order, lambda prefix: pair <= set(prefix))
    assert search.culprits == [order[second]]
    assert order[first] in search.passing


@settings(max_examples=20)
@given(st.lists(st.booleans(), min_size=1, max_size=16))
def test_whatever_the_checks_say_the_search_ends_with_a_passing_prefix(
    answers: list[bool],
) -> None:
    # Checks that answer arbitrarily (flaky beyond repair): the search still ends, blames at
    # most every feature, and never probes a prefix longer than the order.
    order = [f"f{i:02}" for i in range(len(answers))]
    replies = iter(answers * 64)
    search = Bisection.of_failed_head(order)
    steps = 0
    while (probe := search.next_probe()) is not None:
        steps += 1
        assert 0 < probe.length <= len(search.order)
        if next(replies):
            search.failed(probe)
        else:
            search.passed(probe)
    assert steps <= len(order) * (1 + 2 * max(1, math.ceil(math.log2(len(order) + 1))))
    assert sorted(search.culprits + search.passing) == order
