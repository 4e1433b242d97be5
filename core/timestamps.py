"""Timestamps read by the thousand as whole microseconds since 1970, not as datetimes.

Django reads a ``timestamptz`` through a loader of its own, written in Python: about
4 µs a value, so 9,184 running allocations' start times were 38 ms of a scheduling
pass's 61 ms read of them on PostgreSQL (``bench/scheduler_trace.py``). An integer is
read in C; ``from_micros`` makes it a datetime again in a fraction of that. For queries
that read a timestamp from every running job.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.db.models import BigIntegerField, Func

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class EpochMicros(Func):
    """A timestamp (or a NULL) as whole microseconds since 1970-01-01 UTC."""

    arity = 1
    output_field = BigIntegerField()

    def as_postgresql(self, compiler, connection, **extra):
        # EXTRACT gives an exact numeric (PostgreSQL 14 and later).
        template = "(EXTRACT(EPOCH FROM %(expressions)s) * 1000000)::bigint"
        return self.as_sql(compiler, connection, template=template, **extra)

    def as_sqlite(self, compiler, connection, **extra):
        # Django stores "YYYY-MM-DD HH:MM:SS[.ffffff]": the whole seconds (of the first 19
        # characters: strftime rounds a fraction), then the fraction's digits padded to six.
        template = (
            "(CAST(strftime('%%%%s', substr(%(expressions)s, 1, 19)) AS INTEGER) * 1000000"
            " + CAST(substr(substr(%(expressions)s, 21) || '000000', 1, 6) AS INTEGER))"
        )
        sql, params = self.as_sql(compiler, connection, template=template, **extra)
        return sql, (*params, *params)  # the expression is in it twice


def from_micros(micros: int | None) -> datetime | None:
    """The aware datetime (UTC) of ``EpochMicros``; None stays None."""
    return None if micros is None else EPOCH + timedelta(microseconds=micros)
