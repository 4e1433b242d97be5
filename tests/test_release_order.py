"""Releases in the order they end (``jobs/scheduler/backfill.py``): what reservations read."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from jobs.scheduler.backfill import Release, merged, release_order
from jobs.scheduler.cluster import ReplicaUse

NOW = datetime(2026, 12, 5, tzinfo=UTC)


def releases(rng: random.Random, count: int, first_order: int) -> list[Release]:
    use = ReplicaUse(1, 1000, 1024, 1, (), 0)
    return [
        Release(
            None if rng.random() < 0.2 else NOW + timedelta(minutes=rng.randrange(30)),
            first_order + number,
            use,
            first_order + number,
        )
        for number in range(count)
    ]


def test_merging_two_ordered_lists_gives_the_order_a_sort_of_both_gives():
    rng = random.Random(5)
    for held, more in [(0, 0), (0, 3), (5, 0), (200, 2), (200, 150), (3, 40)]:
        ordered = sorted(releases(rng, held, 0), key=release_order)
        added = sorted(releases(rng, more, 10_000), key=release_order)
        expected = sorted(ordered + added, key=release_order)
        assert merged(ordered, added) == expected, (held, more)


def test_unknown_ends_come_last_and_equal_ends_in_the_order_loaded():
    use = ReplicaUse(1, 1000, 1024, 1, (), 0)
    later, sooner = NOW + timedelta(minutes=5), NOW + timedelta(minutes=1)
    held = [Release(None, 0, use), Release(later, 1, use), Release(sooner, 2, use)]
    assert [r.order for r in sorted(held, key=release_order)] == [2, 1, 0]
    assert [r.order for r in merged([held[2], held[1]], [Release(later, 0, use)])] == [2, 0, 1]
