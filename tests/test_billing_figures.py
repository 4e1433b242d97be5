"""Numbers the billing pages show: round chart ticks, and free hours that add up."""

from decimal import Decimal

import pytest

from accounting.ticks import nice_ticks, tick_text
from billing.formatting import grant_figures


@pytest.mark.parametrize(
    ("high", "expected"),
    [
        ("18.3", ["0", "5", "10", "15", "20"]),
        ("100", ["0", "20", "40", "60", "80", "100"]),
        ("0.295", ["0", "0.1", "0.2", "0.3"]),
        ("0.004", ["0", "0.001", "0.002", "0.003", "0.004"]),
        ("12345", ["0", "5000", "10000", "15000"]),
        ("0", ["0", "0.2", "0.4", "0.6", "0.8", "1"]),
    ],
)
def test_value_ticks_are_round_and_reach_the_top(high, expected):
    ticks = nice_ticks(high=Decimal(high))
    assert [tick_text(t) for t in ticks] == expected


@pytest.mark.parametrize(
    "high", [f"{m}e{e}" for m in (1, 1.4, 2.5, 3.7, 5.9, 7.2, 9.99) for e in range(-4, 6)]
)
def test_value_ticks_are_evenly_stepped_by_one_two_or_five_and_their_labels_distinct(high):
    high = Decimal(high)
    ticks = nice_ticks(high=high)
    steps = {b - a for a, b in zip(ticks, ticks[1:], strict=False)}
    assert len(steps) == 1
    step = steps.pop()
    assert step.normalize().as_tuple().digits in ((1,), (2,), (5,))
    assert ticks[0] == 0 and ticks[-1] >= high > ticks[-2]
    assert 3 <= len(ticks) <= 8
    labels = [tick_text(t) for t in ticks]
    assert len(set(labels)) == len(labels)
    assert [Decimal(label) for label in labels] == ticks


@pytest.mark.parametrize(
    ("days", "expected"),
    [(31, [5, 10, 15, 20, 25, 30]), (30, [5, 10, 15, 20, 25, 30]), (28, [5, 10, 15, 20, 25])],
)
def test_day_ticks_are_round_days_inside_the_month(days, expected):
    ticks = nice_ticks(low=Decimal(1), high=Decimal(days), count=7, inside=True)
    assert ticks == expected


@pytest.mark.parametrize(
    ("grant", "used", "shown"),
    [
        ("100", "0.295", ("100.00", "0.30", "99.70")),
        ("100", "0.304", ("100.00", "0.30", "99.70")),
        ("100", "99.996", ("100.00", "100.00", "0.00")),
        ("100.125", "3.3333", ("100.13", "3.33", "96.80")),
        ("0", "0", ("0.00", "0.00", "0.00")),
    ],
)
def test_free_hours_are_rounded_once_so_used_and_remaining_add_up_to_the_grant(grant, used, shown):
    figures = grant_figures(grant_hours=Decimal(grant), used_hours=Decimal(used))
    assert (str(figures.grant), str(figures.used), str(figures.remaining)) == shown
    assert figures.used + figures.remaining == figures.grant
