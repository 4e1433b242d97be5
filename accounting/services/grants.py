"""Free grants during an accrual: what each ledger row takes, and what follows.

The grant is consumed first, by usage of its model, for paid accounts too. At
80 % and 95 % used the account gets a warning (an account event, the banner)
and each job that was using the grant a job event, and its user is
notified (``notifications``). When it is used up, an account without billing
has its unfinished jobs on that model stopped with the reason; their usage
after that point is recorded, not charged.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from decimal import Decimal

from django.db.models import Q

from billing.formatting import hours_text
from billing.models import Account, AccountEvent, FreeGrant
from billing.signals import free_grant_crossed
from core.reasons import Reason
from jobs.models import Job, JobEvent
from jobs.services.stop import job_stop

WARNING_PERCENTS = (80, 95)


class GrantUse:
    """The account's locked grant rows while one accrual consumes them."""

    def __init__(self, grants: Iterable[FreeGrant]) -> None:
        self.by_model = {grant.gpu_model_id: grant for grant in grants}
        self.used_before = {
            model_id: grant.used_card_seconds for model_id, grant in self.by_model.items()
        }
        self.jobs_by_model: dict[int, set[int]] = defaultdict(set)

    def covers(self, gpu_model_id: int | None) -> bool:
        return gpu_model_id in self.by_model

    def take(self, *, gpu_model_id: int | None, unit_seconds: Decimal, job_id: int) -> Decimal:
        """Take what the grant still has, up to ``unit_seconds``; return what was taken."""
        grant = self.by_model.get(gpu_model_id)
        if grant is None:
            return Decimal(0)
        self.jobs_by_model[gpu_model_id].add(job_id)
        free = min(grant.remaining_card_seconds, unit_seconds)
        grant.used_card_seconds += free
        return free

    def used_up_reason(self, gpu_model_id: int) -> Reason:
        grant = self.by_model[gpu_model_id]
        return Reason(
            "free_used_up",
            {"model": grant.gpu_model.name, "grant": hours_text(grant.card_hours)},
        )

    def save(self) -> None:
        changed = [
            grant
            for model_id, grant in self.by_model.items()
            if grant.used_card_seconds != self.used_before[model_id]
        ]
        FreeGrant.objects.bulk_update(changed, ["used_card_seconds"])


def grant_consequences(*, account: Account, grants: GrantUse) -> None:
    """Warnings for the lines crossed in this accrual, and stops for a grant used up."""
    for model_id, grant in grants.by_model.items():
        if not grant.card_hours:
            continue
        before, after = grants.used_before[model_id], grant.used_card_seconds
        job_ids = grants.jobs_by_model.get(model_id, set())
        for percent in WARNING_PERCENTS:
            line = grant.card_seconds * percent / 100
            if before < line <= after:
                _warn(account, grant, percent, job_ids)
                free_grant_crossed.send(sender=FreeGrant, grant_id=grant.pk, percent=percent)
        used_up = grant.is_used_up
        if used_up and before < after:
            AccountEvent.build(
                account=account, kind="free_used_up", message=grants.used_up_reason(model_id)
            ).save()
        # Checked on every run that used the model: a job queued before the grant ran
        # out and started since is stopped too.
        if used_up and not account.billing_enabled and job_ids:
            _stop_jobs(account, grant, grants.used_up_reason(model_id))


def _warn(account: Account, grant: FreeGrant, percent: int, job_ids: set[int]) -> None:
    message = Reason(
        "free_used",
        {
            "percent": percent,
            "model": grant.gpu_model.name,
            "used": hours_text(grant.used_card_hours),
            "grant": hours_text(grant.card_hours),
        },
    )
    AccountEvent.build(account=account, kind=f"free_used_{percent}", message=message).save()
    JobEvent.objects.bulk_create(
        JobEvent.build(job_id=job_id, reason=message, data={"billing": f"free_used_{percent}"})
        for job_id in sorted(job_ids)
    )


def _stop_jobs(account: Account, grant: FreeGrant, reason: Reason) -> None:
    unfinished = (
        Job.objects.filter(
            owner_id=account.user_id,
            state__in=[*Job.WAITING_STATES, *Job.ACTIVE_STATES],
            stop_requested_at__isnull=True,
        )
        .filter(Q(gpu_model_id=grant.gpu_model_id) | Q(gpu_model__members=grant.gpu_model_id))
        .distinct()
        .order_by("pk")
    )
    for job in unfinished:
        was_active = job.is_active
        job_stop(job=job, reason=reason)
        if was_active:
            JobEvent.build(job=job, reason=reason, data={"billing": "free_used_up"}).save()
