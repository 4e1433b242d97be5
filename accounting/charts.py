"""The daily usage chart, drawn on the server as SVG: bars per day, stacked by GPU model.

Geometry is computed here and handed to the template as ready strings, so the
template never localises a coordinate ("12,5" would break the SVG).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal

from django.utils.translation import gettext as _

from billing.formatting import hours_text
from billing.models import Price
from billing.months import Month
from core.svg_chart import Label

from .selectors import DailyUsage
from .ticks import nice_ticks, tick_text

WIDTH, HEIGHT = 720, 220
LEFT, RIGHT, TOP, BOTTOM = 48, 8, 12, 26
PALETTE = ("#1d4ed8", "#d97706", "#059669", "#7c3aed", "#db2777", "#0891b2", "#65a30d")


@dataclass(frozen=True)
class Bar:
    x: str
    y: str
    width: str
    height: str
    color: str
    title: str


@dataclass(frozen=True)
class Chart:
    unit: str
    title: str
    bars: list[Bar]
    ticks: list[Label]
    grid_ys: list[str]
    day_labels: list[Label]
    legend: list[tuple[str, str]]
    width: int = WIDTH
    height: int = HEIGHT
    plot_left: int = LEFT
    plot_right: int = WIDTH - RIGHT
    baseline: int = HEIGHT - BOTTOM


def daily_charts(*, month: Month, daily: list[DailyUsage]) -> list[Chart]:
    """One chart per unit used in the month: card-hours by model, and core-hours."""
    units = [
        u for u in (Price.Unit.CARD_HOUR, Price.Unit.CORE_HOUR) if any(d.unit == u for d in daily)
    ]
    return [_chart(month, [d for d in daily if d.unit == unit], unit) for unit in units]


def _chart(month: Month, daily: list[DailyUsage], unit: str) -> Chart:
    series = sorted({d.gpu_model or _("CPU") for d in daily})
    colors = {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(series)}
    by_day: dict = defaultdict(dict)
    for d in daily:
        by_day[d.day][d.gpu_model or _("CPU")] = d.hours
    values = nice_ticks(high=max((sum(v.values()) for v in by_day.values()), default=Decimal(0)))
    top = values[-1]
    unit_label = _("card-hours") if unit == Price.Unit.CARD_HOUR else _("core-hours")
    days = month.days()
    ticks, grid_ys = _axis(values)
    return Chart(
        unit=unit,
        title=_("Daily usage in %(month)s, %(unit)s") % {"month": month, "unit": unit_label},
        bars=_bars(days, series, colors, by_day, top, unit_label),
        ticks=ticks,
        grid_ys=grid_ys,
        day_labels=[
            Label(
                x=f"{_slot_left(days, days[int(day) - 1]) + _slot(days) / 2:.2f}",
                y=str(HEIGHT - 8),
                text=tick_text(day),
            )
            for day in nice_ticks(low=Decimal(1), high=Decimal(len(days)), count=7, inside=True)
        ],
        legend=[(name, colors[name]) for name in series],
    )


def _slot(days: list) -> float:
    return (WIDTH - LEFT - RIGHT) / len(days)


def _slot_left(days: list, day) -> float:
    return LEFT + (day.day - 1) * _slot(days)


def _bars(days, series, colors, by_day, top: Decimal, unit_label: str) -> list[Bar]:
    """Each day's bar, one segment per model, stacked from the baseline."""
    plot_height = HEIGHT - TOP - BOTTOM
    bars = []
    for day in days:
        base = 0.0
        for name in series:
            value = by_day.get(day, {}).get(name)
            if not value:
                continue
            height = float(value / top) * plot_height
            bars.append(
                Bar(
                    x=f"{_slot_left(days, day) + _slot(days) * 0.15:.2f}",
                    y=f"{HEIGHT - BOTTOM - base - height:.2f}",
                    width=f"{_slot(days) * 0.7:.2f}",
                    height=f"{height:.2f}",
                    color=colors[name],
                    title=f"{day.isoformat()} · {name}: {hours_text(value)} {unit_label}",
                )
            )
            base += height
    return bars


def _axis(values: list[Decimal]) -> tuple[list[Label], list[str]]:
    """A label and a grid line at each round value, from 0 at the baseline to the top."""
    plot_height = HEIGHT - TOP - BOTTOM
    ticks, grid_ys = [], []
    for value in values:
        y = HEIGHT - BOTTOM - plot_height * float(value / values[-1])
        grid_ys.append(f"{y:.2f}")
        ticks.append(Label(x=str(LEFT - 6), y=f"{y + 4:.2f}", text=tick_text(value)))
    return ticks, grid_ys
