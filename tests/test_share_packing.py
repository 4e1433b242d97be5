"""How shares of a card pack (``jobs/scheduler/share_packing.py``): the cutting-stock plan of
the shares that arrived, and which placements stay on it. In memory only: no database."""

from __future__ import annotations

import itertools
import random

import numpy as np
from scipy.optimize import linprog

from jobs.scheduler.share_packing import SharePlan, cutting_stock, plan_of


def test_the_plan_pairs_the_shares_that_fill_a_card_and_keeps_apart_those_that_waste_it():
    # Ten each of 70 %, 30 % and 45 %: 70 + 30 fill a card; 45 + 45 leave 10 %; a 45 with
    # a 30 would leave 25 % and send a 70 to a card alone. 15 cards, no fewer.
    plan = plan_of({70: 10, 30: 10, 45: 10})
    patterns = sorted(sorted(pattern.items()) for pattern in plan.patterns)
    assert patterns == [[(30, 1), (70, 1)], [(45, 2)]]
    assert plan.fits(0, 30) and plan.fits(70, 30) and plan.fits(30, 70) and plan.fits(45, 45)
    assert not plan.fits(45, 30) and not plan.fits(30, 45) and not plan.fits(60, 30)
    assert round(sum(cards for _p, cards in cutting_stock({70: 10, 30: 10, 45: 10})), 6) == 15


def test_only_the_proportions_of_the_sizes_matter_and_no_share_makes_no_plan():
    assert plan_of({70: 1, 30: 1, 45: 1}).patterns == plan_of({70: 40, 30: 40, 45: 40}).patterns
    assert plan_of({}) is None
    assert plan_of({100: 5}) is None  # a whole card is not a share


def test_column_generation_finds_the_optimum_of_every_pattern_enumerated():
    # Small random workloads, against the programme over every maximal pattern at once.
    rng = random.Random(3)
    for _trial in range(20):
        sizes = rng.sample([5, 11, 16, 22, 23, 32, 35, 37, 46, 47, 55, 59, 65, 81], 6)
        demand = {size: rng.randint(1, 60) for size in sizes}
        found = sum(cards for _p, cards in cutting_stock(demand))
        assert abs(found - _every_pattern_optimum(demand)) < 1e-6, demand


def test_a_card_is_on_plan_where_what_it_holds_and_the_share_make_part_of_a_pattern():
    plan = SharePlan([{20: 2, 50: 1}])
    # The share 20 on a card of 0, 20 or 50 (or 70) taken; the 50 on 0, 20 or 40 taken.
    assert [used for used in range(101) if plan.fits(used, 20)] == [0, 20, 50, 70]
    assert [used for used in range(101) if plan.fits(used, 50)] == [0, 20, 40]
    assert not plan.fits(0, 30)  # a size the plan does not hold is never on it


def _every_pattern_optimum(demand: dict[int, int]) -> float:
    sizes = sorted(demand, reverse=True)
    patterns = [
        counts
        for counts in itertools.product(*(range(100 // size + 1) for size in sizes))
        if 0 < sum(c * s for c, s in zip(counts, sizes, strict=True)) <= 100
    ]
    matrix = np.array(patterns, float).T
    needed = np.array([demand[size] for size in sizes], float)
    result = linprog(np.ones(len(patterns)), A_ub=-matrix, b_ub=-needed, method="highs")
    return result.fun
