"""Billing months: calendar months in the site's time zone (``TIME_ZONE``).

Statements do not move with the viewer's browser time zone: an account's March
is the same for the user, the admin and the API.
"""

from __future__ import annotations

import re
import zoneinfo
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils import timezone
from django.utils.translation import gettext as _

MONTH_PATTERN = re.compile(r"^(\d{4})-(\d{2})$")


def site_zone() -> zoneinfo.ZoneInfo:
    return zoneinfo.ZoneInfo(settings.TIME_ZONE)


@dataclass(frozen=True, order=True)
class Month:
    year: int
    month: int

    @classmethod
    def current(cls) -> Month:
        today = timezone.now().astimezone(site_zone()).date()
        return cls(today.year, today.month)

    @classmethod
    def parse(cls, text: str | None) -> Month:
        """``YYYY-MM``; empty means this month. Raises a ``ValidationError`` on ``month``."""
        if not text:
            return cls.current()
        match = MONTH_PATTERN.match(text.strip())
        if not match or not 1 <= int(match[2]) <= 12 or int(match[1]) < 1970:
            raise ValidationError(
                {
                    "month": [
                        _("Give the month as YYYY-MM (for example 2026-03); you gave “%(text)s”.")
                        % {"text": text[:20]}
                    ]
                }
            )
        return cls(int(match[1]), int(match[2]))

    def __str__(self) -> str:
        return f"{self.year:04d}-{self.month:02d}"

    @property
    def first_day(self) -> date:
        return date(self.year, self.month, 1)

    def next(self) -> Month:
        return Month(self.year + self.month // 12, self.month % 12 + 1)

    def previous(self) -> Month:
        return Month(self.year - (self.month == 1), (self.month - 2) % 12 + 1)

    @property
    def start(self) -> datetime:
        return datetime(self.year, self.month, 1, tzinfo=site_zone())

    @property
    def end(self) -> datetime:
        return self.next().start

    def days(self) -> list[date]:
        count = (self.next().first_day - self.first_day).days
        return [self.first_day + timedelta(days=n) for n in range(count)]
