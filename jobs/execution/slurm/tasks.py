"""Celery tasks of the Slurm backend; short, idempotent, and idle unless Slurm is configured."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings


@shared_task(name="jobs.slurm.submit", ignore_result=True)
def slurm_submit(attempt_ids: list[int]) -> None:
    from .submit import submit_attempts

    submit_attempts(attempt_ids)


@shared_task(name="jobs.slurm.stop", ignore_result=True)
def slurm_stop(attempt_ids: list[int], reason: dict | str) -> None:
    from trainyard.reasons import Reason

    from .submit import stop_attempts

    stop_attempts(attempt_ids, reason=Reason.of(reason))


@shared_task(name="jobs.slurm.track", ignore_result=True)
def slurm_track() -> None:
    if settings.TRAINYARD_SLURM_ENABLED:
        from .track import track_pass

        track_pass()


@shared_task(name="jobs.slurm.report", ignore_result=True)
def slurm_report(slurm_id: str, attempt_ids: list[int]) -> None:
    from .track import report_from_files

    report_from_files(slurm_id, attempt_ids)


@shared_task(name="jobs.slurm.sync_nodes", ignore_result=True)
def slurm_sync_nodes() -> None:
    if settings.TRAINYARD_SLURM_ENABLED:
        from .inventory import inventory_sync

        inventory_sync()
