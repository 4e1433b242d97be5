"""Which shares a card should hold together: the cutting-stock plan of the shares that arrived.

Shares of a card (virtual GPUs) fill it only in some combinations: a 47 % share and
another 47 % leave 6 % that no share of the workload uses, while a 65 % share leaves a
35 % home for the 32 % ones. Fragmentation (``fragmentation.py``) weighs each share's
leftover against the shapes one at a time, and best fit packs onto the tightest card, so
both pair shares greedily. Online bin packing with sizes drawn from a known discrete
distribution has a better answer (Csirik, Johnson, Kenyon, Orlin, Shor, Weber, "On the
Sum-of-Squares algorithm for bin packing", J. ACM 2006; Rhee and Talagrand's
pattern-following algorithms): pack to the optimal offline plan of that distribution.

The plan is the cutting-stock linear programme of the shares that arrived (Gilmore and
Gomory 1961): as few cards as possible, such that the combinations used (patterns) hold
every arrived share; solved by column generation, a knapsack over the card's 100 % giving
each next pattern. A share is *on plan* on a card when the card's contents stay part of a
pattern the plan uses. Only a card's used percentage is known, not which shares make it,
so "part of a pattern" is read on sums: some used pattern holds the share and other shares
summing to what the card has taken. Memory is left out: shares ask memory with compute.

Placement puts a share where it stays on plan first (``placement.fragment_keys``), and only
then where fragmentation grows least. On the openb replay (``bench/placement_fgd.py``,
seeds 42-51, learned online) the GPU allocated at 100 % arrival goes from 95.66 % to
96.05 % (96.00 % with the plan alone, 96.05 % once the workload's ``COVERAGE`` is halved);
FGD, as published, 95.23 %. A wrong plan costs: learned from jobs unlike those placed, it
sends shares to fresh cards for partners that never come (``workload.py`` counts the
waiting jobs for that reason).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache

import numpy as np

from .cluster import FULL_CARD_PERCENT

# Column generation stops when no pattern improves the programme by more than this (cards),
# or after this many patterns, one a round (~3 ms each): the plan is then a good packing,
# if not the best. openb's 20 sizes take 19 rounds; every size from 1 % to 99 %, 270.
IMPROVEMENT = 1e-9
MAX_ROUNDS = 100
# The proportions of the shares' sizes are solved in these parts (a size rarer than half a
# part is left out of the plan: its shares are placed as without one).
PARTS = 200


class SharePlan:
    """``on_plan[used, percent]``: a card with ``used`` % taken may take a ``percent`` share
    and stay part of one of the plan's patterns."""

    def __init__(self, patterns: Iterable[Mapping[int, int]]) -> None:
        self.patterns = tuple(dict(pattern) for pattern in patterns)
        self.on_plan = np.zeros((FULL_CARD_PERCENT + 1, FULL_CARD_PERCENT + 1), bool)
        for pattern in self.patterns:
            for percent in pattern:
                rest = dict(pattern)
                rest[percent] -= 1
                for used in _sums(rest):
                    self.on_plan[used, percent] = True

    def fits(self, used, percent: int):
        """Whether a card with ``used`` % taken (a number, or an array of them) stays on
        the plan with a ``percent`` share added."""
        return self.on_plan[used, percent]

    def leaves(self, compute_free, percent: int):
        """Whether a ``percent`` share on a card with ``compute_free`` % (a number, or an
        array) leaves the plan: what placement weighs, on one node or on all at once."""
        return ~self.fits(FULL_CARD_PERCENT - compute_free, percent)


def plan_of(shares: Mapping[int, int]) -> SharePlan | None:
    """The plan for shares of these sizes (percent of a card → how many arrived); None
    without any. Only their proportions matter, in ``PARTS``: each pass learns a few
    more jobs, and the plan is solved again only when the proportions move."""
    sized = {p: n for p, n in shares.items() if 0 < p < FULL_CARD_PERCENT}
    total = sum(sized.values())
    parts = {p: round(PARTS * n / total) for p, n in sized.items()} if total else {}
    counts = tuple(sorted((p, n) for p, n in parts.items() if n))
    return _plan(counts) if counts else None


@lru_cache(maxsize=16)
def _plan(counts: tuple[tuple[int, int], ...]) -> SharePlan:
    """Passes learn the same shares again and again: the plan is solved once for them."""
    return SharePlan(pattern for pattern, _cards in cutting_stock(dict(counts)))


def cutting_stock(demand: Mapping[int, int]) -> list[tuple[dict[int, int], float]]:
    """An optimal solution of the cutting-stock LP for ``demand`` (size in percent →
    count) on cards of 100 %, by column generation: each pattern used (size → count) and
    on how many cards (a fraction: the programme's, not yet whole cards)."""
    # SciPy's HiGHS solves the programme; imported by the scheduler only when it has shares.
    from scipy.optimize import linprog

    sizes = sorted(demand, reverse=True)
    needed = np.array([demand[size] for size in sizes], float)
    # To start: each size alone on a card, as many as fit.
    columns = [
        [FULL_CARD_PERCENT // size if i == j else 0 for j in range(len(sizes))]
        for i, size in enumerate(sizes)
    ]
    for _round in range(MAX_ROUNDS):
        matrix = np.array(columns, float).T
        solution = linprog(
            np.ones(len(columns)), A_ub=-matrix, b_ub=-needed, bounds=(0, None), method="highs"
        )
        prices = -solution.ineqlin.marginals  # a card's worth of one share of each size
        value, pattern = _knapsack(sizes, prices)
        if value <= 1 + IMPROVEMENT or pattern in columns:
            break
        columns.append(pattern)
    return [
        ({sizes[j]: count for j, count in enumerate(column) if count}, float(cards))
        for column, cards in zip(columns, solution.x, strict=True)
        if cards > IMPROVEMENT
    ]


def _knapsack(sizes: list[int], prices: np.ndarray) -> tuple[float, list[int]]:
    """The pattern (count per size) worth most at ``prices`` on one card, and its worth."""
    best = [0.0] * (FULL_CARD_PERCENT + 1)
    last = [-1] * (FULL_CARD_PERCENT + 1)  # the size added last to reach the best
    for room in range(1, FULL_CARD_PERCENT + 1):
        best[room], last[room] = best[room - 1], -1
        for i, size in enumerate(sizes):
            if size <= room and best[room - size] + prices[i] > best[room] + IMPROVEMENT:
                best[room], last[room] = best[room - size] + prices[i], i
    pattern, room = [0] * len(sizes), FULL_CARD_PERCENT
    while room > 0:
        if last[room] < 0:
            room -= 1
        else:
            pattern[last[room]] += 1
            room -= sizes[last[room]]
    return best[FULL_CARD_PERCENT], pattern


def _sums(shares: Mapping[int, int]) -> list[int]:
    """Every total that some of these shares (size → count) make, 0 included."""
    reach = 1  # bit t: a total of t is made
    for size, count in shares.items():
        for _copy in range(count):
            reach |= reach << size
    return [total for total in range(FULL_CARD_PERCENT + 1) if reach >> total & 1]
