"""Celery tasks of the Slurm backend; short, idempotent, and idle unless Slurm is configured.

Sent by name, not imported: by the Slurm executor, and by ``track`` (which these tasks
call) for a submission it retries and for the Slurm jobs' reports of each pass.
"""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from core.reasons import Reason

from .checkpoints import slurm_checkpoints_remove_ended
from .inventory import inventory_sync
from .replica_reports import report_from_files
from .submit import stop_attempts, submit_attempts
from .track import track_pass


@shared_task(name="jobs.slurm.submit", ignore_result=True)
def slurm_submit(attempt_ids: list[int]) -> None:
    submit_attempts(attempt_ids)


@shared_task(name="jobs.slurm.stop", ignore_result=True)
def slurm_stop(attempt_ids: list[int], reason: dict | str) -> None:
    stop_attempts(attempt_ids, reason=Reason.of(reason))


@shared_task(name="jobs.slurm.track", ignore_result=True)
def slurm_track() -> None:
    if settings.TRAINYARD_SLURM_ENABLED:
        track_pass()


@shared_task(name="jobs.slurm.reports", ignore_result=True)
def slurm_reports(reports: list[tuple[str, list[int]]]) -> None:
    report_from_files(reports)


@shared_task(name="jobs.slurm.sync_nodes", ignore_result=True)
def slurm_sync_nodes() -> None:
    if settings.TRAINYARD_SLURM_ENABLED:
        inventory_sync()


@shared_task(name="jobs.slurm.clean_checkpoints", ignore_result=True)
def slurm_clean_checkpoints() -> None:
    if settings.TRAINYARD_SLURM_ENABLED:
        slurm_checkpoints_remove_ended()
