"""How billing numbers read in messages."""

from decimal import ROUND_HALF_UP, Decimal


def hours_text(hours: Decimal) -> str:
    """Hours to the hundredth, without trailing zeros: ``3``, ``2.5``, ``80.25``."""
    rounded = Decimal(hours).quantize(Decimal("0.01"), ROUND_HALF_UP)
    text = f"{rounded:f}"
    return text.rstrip("0").rstrip(".") if "." in text else text
