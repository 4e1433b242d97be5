"""Axis ticks on "nice numbers" (Heckbert, Graphics Gems I, 1990): 1, 2 or 5 × 10ⁿ apart.

Exact in ``Decimal``, so a tick is 0.3 and not 0.30000000000000004, and a label
shows the tick itself, however small: ticks are round, evenly stepped and never
print the same twice (0.001, 0.002, not 0, 0, 0.01).
"""

from __future__ import annotations

import math
from decimal import Decimal


def nice_number(value: Decimal) -> Decimal:
    """The 1, 2, 5 or 10 × 10ⁿ nearest to ``value`` (Heckbert's rounded "nice number")."""
    power = Decimal(10) ** math.floor(value.log10())
    fraction = value / power
    for limit, nice in ((Decimal("1.5"), 1), (Decimal(3), 2), (Decimal(7), 5)):
        if fraction < limit:
            return nice * power
    return 10 * power


def nice_ticks(
    *, high: Decimal, low: Decimal = Decimal(0), count: int = 5, inside: bool = False
) -> list[Decimal]:
    """About ``count`` round ticks for ``low``–``high``.

    Around the range by default (a value axis: from ``low`` down to a tick, up to
    the first tick at or above ``high``); only the ticks within it when
    ``inside`` (days of a month: 5, 10, … 30, never day 0 or 35).
    """
    high, low = Decimal(high), Decimal(low)
    if high <= low:
        high = low + 1
    step = nice_number((high - low) / (count - 1))
    if inside:
        first, last = math.ceil(low / step), math.floor(high / step)
    else:
        first, last = math.floor(low / step), math.ceil(high / step)
    return [n * step for n in range(first, last + 1)]


def tick_text(value: Decimal) -> str:
    """A tick in plain digits, no trailing zeros: ``0``, ``0.1``, ``5000`` (never ``5E+3``)."""
    return f"{value.normalize():f}"
