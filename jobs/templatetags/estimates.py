from django import template

from jobs.estimates.formatting import duration_text, range_text

register = template.Library()


@register.filter
def duration(seconds: float | None) -> str:
    """Seconds as "7 min" / "1 h 20 min"; "—" when unknown."""
    return "—" if seconds is None else duration_text(seconds)


@register.filter
def estimate_range(estimate) -> str:
    """An estimate's range as "6 min – 8 min"."""
    return range_text(estimate.low_seconds, estimate.high_seconds)
