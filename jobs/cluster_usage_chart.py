"""The utilisation page's day chart, drawn on the server as SVG: per hour a bar of the cards
held and, over it, a bar of the cards in use, on a scale of the cluster's cards. Geometry comes
ready as strings, so the template never localises a coordinate."""

from __future__ import annotations

from dataclasses import dataclass

from django.utils import timezone
from django.utils.formats import time_format
from django.utils.translation import gettext as _

from core.svg_chart import Label

from .cluster_usage import Hour

WIDTH, HEIGHT = 720, 200
LEFT, RIGHT, TOP, BOTTOM = 36, 8, 10, 24
LABEL_EVERY = 3  # hours


@dataclass(frozen=True)
class Bar:
    x: str
    width: str
    held_y: str
    held_height: str
    in_use_y: str
    in_use_height: str
    title: str


@dataclass(frozen=True)
class DayChart:
    bars: list[Bar]
    ticks: list[Label]
    grid_ys: list[str]
    hour_labels: list[Label]
    width: int = WIDTH
    height: int = HEIGHT
    plot_left: int = LEFT
    plot_right: int = WIDTH - RIGHT
    baseline: int = HEIGHT - BOTTOM


def day_chart(hours: list[Hour], *, cards: int) -> DayChart:
    """``hours`` on a 0…``cards`` scale (more, if an hour held more than there are now)."""
    top = max([cards, 1, *(hour.held for hour in hours)])
    plot = HEIGHT - TOP - BOTTOM
    slot = (WIDTH - LEFT - RIGHT) / max(1, len(hours))

    def y(value: float) -> float:
        return HEIGHT - BOTTOM - value / top * plot

    bars, labels = [], []
    for i, hour in enumerate(hours):
        x = LEFT + i * slot + slot * 0.1
        when = time_format(timezone.localtime(hour.start), "H:i")
        bars.append(
            Bar(
                x=f"{x:.1f}",
                width=f"{slot * 0.8:.1f}",
                held_y=f"{y(hour.held):.1f}",
                held_height=f"{hour.held / top * plot:.1f}",
                in_use_y=f"{y(hour.in_use):.1f}",
                in_use_height=f"{hour.in_use / top * plot:.1f}",
                title=_("%(when)s: %(held)s cards held, %(in_use)s in use")
                % {"when": when, "held": f"{hour.held:g}", "in_use": f"{hour.in_use:g}"},
            )
        )
        if i % LABEL_EVERY == 0:
            labels.append(Label(x=f"{x + slot * 0.4:.1f}", y=str(HEIGHT - 8), text=when))
    values = [0, top / 2, top]
    return DayChart(
        bars=bars,
        ticks=[Label(x=str(LEFT - 4), y=f"{y(v) + 4:.1f}", text=f"{v:g}") for v in values],
        grid_ys=[f"{y(v):.1f}" for v in values],
        hour_labels=labels,
    )
