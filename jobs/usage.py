"""What billing's ledger holds for each job, read into the jobs' own query (the jobs list)."""

from __future__ import annotations

from django.db.models import Max, OuterRef, QuerySet, Subquery, Sum

from billing.models import UsageRecord
from jobs.models import Job


def jobs_with_usage(jobs: QuerySet[Job]) -> QuerySet[Job]:
    """``jobs`` annotated with what the ledger holds for each, in the jobs' own query:
    ``ledger_hours`` (card-hours, or core-hours of a CPU job), ``ledger_amount``,
    ``ledger_currency`` (None for a job with no usage)."""
    of_job = UsageRecord.objects.filter(job=OuterRef("pk")).order_by().values("job")

    def total(expression):
        return Subquery(of_job.annotate(total=expression).values("total")[:1])

    return jobs.annotate(
        ledger_hours=total(Sum("unit_seconds") / 3600),
        ledger_amount=total(Sum("amount")),
        ledger_currency=total(Max("currency")),
    )
