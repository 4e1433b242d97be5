"""Cutting an attempt's time into ledger periods.

Billing counts whole seconds: an attempt's start and end are taken to the
second. Periods lie on a fixed grid (``TRAINYARD_BILLING_PERIOD_SECONDS``,
one minute, counted from the Unix epoch), so a period never straddles a day
or a month, and the same time always yields the same periods. A period is
also cut where the augmentation search hands over to training and where a
price changes, so that each row has one phase and one price.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta


@dataclass(frozen=True)
class Period:
    start: datetime
    end: datetime
    phase: str

    @property
    def seconds(self) -> int:
        return int((self.end - self.start).total_seconds())


def to_second(moment: datetime) -> datetime:
    return moment.replace(microsecond=0)


def ceil_second(moment: datetime) -> datetime:
    whole = to_second(moment)
    return whole if whole == moment else whole + timedelta(seconds=1)


def grid_floor(moment: datetime, period_seconds: int) -> datetime:
    """The start of the grid period that holds ``moment``."""
    epoch_seconds = int(moment.timestamp())
    return datetime.fromtimestamp(epoch_seconds - epoch_seconds % period_seconds, tz=UTC)


def split_periods(
    *,
    start: datetime,
    end: datetime,
    period_seconds: int,
    cuts: Iterable[datetime],
    phase_at: Callable[[datetime], str],
) -> list[Period]:
    """Contiguous periods covering ``[start, end)``: the grid, cut again at ``cuts``."""
    cut_points = sorted({cut for cut in cuts if start < cut < end})
    periods: list[Period] = []
    moment = start
    while moment < end:
        next_grid = grid_floor(moment, period_seconds) + timedelta(seconds=period_seconds)
        next_cut = next((cut for cut in cut_points if cut > moment), end)
        period_end = min(next_grid, next_cut, end)
        periods.append(Period(start=moment, end=period_end, phase=phase_at(moment)))
        moment = period_end
    return periods
