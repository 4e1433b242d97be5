"""Writes to billing accounts."""

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from billing.models import Account, AccountEvent, FreeGrant, model_is_free_tier
from core.reasons import Reason
from jobs.models import Job
from jobs.services.stop import job_stop


def account_enable_billing(*, account: Account, actor: AbstractBaseUser) -> None:
    """Turn on billing for an account, and log who did it."""
    with transaction.atomic():
        locked = Account.objects.select_for_update().get(pk=account.pk)
        if locked.billing_enabled:
            return
        locked.billing_enabled = True
        locked.billing_enabled_at = timezone.now()
        locked.billing_enabled_by = actor
        locked.save(update_fields=["billing_enabled", "billing_enabled_at", "billing_enabled_by"])
        AccountEvent.build(
            account=locked,
            actor=actor,
            kind="billing_enabled",
            message=Reason("billing.enabled", {"actor": actor.get_username()}),
        ).save()


def account_disable_billing(*, account: Account, actor: AbstractBaseUser) -> list[Job]:
    """Turn billing off again, log who did it, and stop what the account may no longer run.

    The account is back to the free rules: its jobs on paid models, and free-tier
    ones whose free hours are used up, are stopped at once (waiting ones leave
    the queue), as the stopping admin's action. What they used while billing was
    on is charged; the seconds they take to stop are recorded, not charged
    (``Account.charges_at``). The free grant stays as it is. Returns the jobs stopped.
    """
    with transaction.atomic():
        locked = Account.objects.select_for_update().get(pk=account.pk)
        if not locked.billing_enabled:
            return []
        locked.billing_enabled = False
        locked.billing_disabled_at = timezone.now()
        locked.billing_disabled_by = actor
        locked.save(update_fields=["billing_enabled", "billing_disabled_at", "billing_disabled_by"])
        message = Reason("billing.disabled", {"actor": actor.get_username()})
        AccountEvent.build(
            account=locked, actor=actor, kind="billing_disabled", message=message
        ).save()
        stopped = jobs_needing_billing(account=locked)
        for job in stopped:
            job_stop(job=job, reason=message, actor=actor)
    return stopped


def jobs_needing_billing(*, account: Account) -> list[Job]:
    """The account's unfinished jobs that its free rules would refuse (``billing.rules``).

    On a paid model, or on a free-tier one whose free hours are all used up.
    """
    grants = list(FreeGrant.objects.filter(account=account))
    granted = {grant.gpu_model_id for grant in grants}
    used_up = {grant.gpu_model_id for grant in grants if grant.is_used_up}
    unfinished = (
        Job.objects.filter(
            owner_id=account.user_id,
            state__in=[*Job.WAITING_STATES, *Job.ACTIVE_STATES],
            stop_requested_at__isnull=True,
            gpu_model__isnull=False,
        )
        .select_related("gpu_model")
        .prefetch_related("gpu_model__members")
        .order_by("pk")
    )
    needing = []
    for job in unfinished:
        model = job.gpu_model
        models = {m.pk for m in model.members.all()} if model.is_aggregated else {model.pk}
        hours_gone = bool(models & granted) and models & granted <= used_up
        if not model_is_free_tier(model) or hours_gone:
            needing.append(job)
    return needing
