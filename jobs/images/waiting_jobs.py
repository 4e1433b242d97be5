"""The jobs waiting for an image while it is added, once it is: its digest, or its problem.

A job may be submitted while its image is being added (``services/submit.py``): it waits
in the queue (the scheduler's ``image_reason``) with no digest. ``image_add`` saves the
image's outcome with ``image_saved`` in one transaction, which a submission racing with it
waits on (it reads the image locked), so no job is left between the two.
"""

from __future__ import annotations

from django.db import transaction

from core.reasons import Reason
from jobs.lifecycle.pass_requests import schedule_soon
from jobs.lifecycle.transitions import job_transition
from jobs.models import Image, Job


@transaction.atomic
def image_saved(image: Image) -> None:
    """Save ``image`` (now ready or failed) and move the jobs waiting for it on, at once."""
    image.save()
    waiting = Job.objects.filter(image=image, state__in=Job.WAITING_STATES, image_digest="")
    if image.state == Image.State.READY:
        if waiting.update(image_digest=image.digest):
            schedule_soon()  # they may start now
        return
    reason = Reason("image.failed", {"name": image.name, "problem": image.problem})
    for job in waiting.only("pk", "state", "state_reason"):
        job_transition(job=job, to_state=Job.State.FAILED, reason=reason)
