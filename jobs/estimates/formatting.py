"""How durations read: "45 s", "7 min", "1 h 20 min"."""

from django.utils.translation import gettext as _

SECONDS_PER_MINUTE = 60
MINUTES_PER_HOUR = 60


def duration_text(seconds: float) -> str:
    if seconds < SECONDS_PER_MINUTE - 0.5:
        return _("%(seconds)s s") % {"seconds": round(seconds)}
    minutes = round(seconds / SECONDS_PER_MINUTE)
    if minutes < MINUTES_PER_HOUR:
        return _("%(minutes)s min") % {"minutes": minutes}
    hours, minutes = divmod(minutes, MINUTES_PER_HOUR)
    if not minutes:
        return _("%(hours)s h") % {"hours": hours}
    return _("%(hours)s h %(minutes)s min") % {"hours": hours, "minutes": minutes}


def range_text(low_seconds: float, high_seconds: float) -> str:
    return _("%(low)s – %(high)s") % {
        "low": duration_text(low_seconds),
        "high": duration_text(high_seconds),
    }
