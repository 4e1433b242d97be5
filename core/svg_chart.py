"""Parts of the charts drawn on the server as SVG (billing's days, the cluster's hours):
coordinates come ready as strings, so a template never localises one ("12,5")."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Label:
    """Text at a point of the chart: an axis tick, an hour, a day."""

    x: str
    y: str
    text: str
