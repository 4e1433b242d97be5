"""How billing numbers read in messages."""

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

HUNDREDTH = Decimal("0.01")


def hours_text(hours: Decimal) -> str:
    """Hours to the hundredth, without trailing zeros: ``3``, ``2.5``, ``80.25``."""
    rounded = Decimal(hours).quantize(HUNDREDTH, ROUND_HALF_UP)
    text = f"{rounded:f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


@dataclass(frozen=True)
class GrantFigures:
    """A free grant as pages show it: rounded once, so used + remaining = grant, as shown."""

    grant: Decimal
    used: Decimal
    remaining: Decimal


def grant_figures(*, grant_hours: Decimal, used_hours: Decimal) -> GrantFigures:
    """Round the grant and the use to the hundredth; what remains is their difference.

    Rounding "remaining" on its own would show 0.30 used and 99.71 remaining of 100.
    """
    grant = Decimal(grant_hours).quantize(HUNDREDTH, ROUND_HALF_UP)
    used = min(Decimal(used_hours).quantize(HUNDREDTH, ROUND_HALF_UP), grant)
    return GrantFigures(grant=grant, used=used, remaining=grant - used)
