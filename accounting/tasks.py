"""Celery tasks of the billing app: each calls a service that is safe to run again."""

from celery import shared_task

from accounting.services import usage_accrue


@shared_task(name="accounting.tasks.accrue_usage", ignore_result=True)
def accrue_usage() -> int:
    """Accrue running and ended replica attempts into the usage ledger (every minute)."""

    return usage_accrue()
