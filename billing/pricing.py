"""Which price applies when: prices take effect at their ``valid_from`` and are never retroactive.

A price added with a ``valid_from`` in the past applies only to periods not yet
in the ledger; rows already written keep the price they were written with.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime

from billing.models import Price

from .periods import ceil_second

PriceKey = tuple[str, int | None]


class PriceBook:
    """Every price, loaded once per accrual run."""

    def __init__(self, prices: Iterable[Price]) -> None:
        by_key: dict[PriceKey, list[Price]] = defaultdict(list)
        for price in prices:
            by_key[(price.unit, price.gpu_model_id)].append(price)
        self._prices = {
            key: sorted(rows, key=lambda p: p.valid_from) for key, rows in by_key.items()
        }
        self._starts = {key: [p.valid_from for p in rows] for key, rows in self._prices.items()}

    @classmethod
    def load(cls) -> PriceBook:
        return cls(Price.objects.all())

    def price_at(self, *, unit: str, gpu_model_id: int | None, moment: datetime) -> Price | None:
        """The price in effect at ``moment``: the latest ``valid_from`` not after it."""
        key = (unit, gpu_model_id)
        index = bisect.bisect_right(self._starts.get(key, []), moment)
        return self._prices[key][index - 1] if index else None

    def changes(self, *, unit: str, gpu_model_id: int | None) -> list[datetime]:
        """Where a period must be cut so that each part has one price."""
        return [ceil_second(start) for start in self._starts.get((unit, gpu_model_id), [])]
