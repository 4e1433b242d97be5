"""A log line per job event: all `make run` says of jobs unless TRAINYARD_VERBOSE=1.

Events saved one by one are logged as they are saved (a ``post_save`` receiver, connected
in ``JobsConfig.ready``); the scheduler's bulk inserts call ``log_job_event`` for each row.
The text is the event's stored English reason (a log is for the operator, not a reader).
"""

from __future__ import annotations

import logging

from django.db.models.signals import post_save
from django.dispatch import receiver

from jobs.models import JobEvent

logger = logging.getLogger("trainyard.jobs")


def log_job_event(job_id: int, from_state: str, to_state: str, reason: str) -> None:
    if from_state and from_state != to_state:
        logger.info("Job %s: %s → %s: %s", job_id, from_state, to_state, reason)
    else:
        logger.info("Job %s (%s): %s", job_id, to_state, reason)


@receiver(post_save, sender=JobEvent, dispatch_uid="trainyard-log-job-event")
def job_event_saved(sender, instance: JobEvent, created: bool, **_kwargs) -> None:
    if created:
        log_job_event(instance.job_id, instance.from_state, instance.to_state, instance.reason)
