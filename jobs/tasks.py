"""Celery tasks of the jobs app: each takes ids, re-reads rows and calls a service."""

from celery import shared_task

from jobs.execution.launch import launch_each, lost_launches_retry, preempt_each
from jobs.images import add as images
from jobs.lifecycle.pass_requests import pass_begins, request_pass
from jobs.scheduler import run_pass

from . import usage_thinning


@shared_task(name="jobs.tasks.schedule_pass", ignore_result=True)
def schedule_pass() -> None:
    """One scheduling pass, whose started jobs are launched on commit; then a launch lost
    to a dead process is done again."""
    pass_begins()
    report = run_pass(launch=launch_each, preempt=preempt_each)
    if report.truncated:  # a burst larger than a pass starts: the rest at once
        request_pass()
    lost_launches_retry()


@shared_task(name="jobs.tasks.image_add", ignore_result=True)
def image_add(image_id: int) -> None:
    """Bring an admin's new image into the site's store and record what it holds (minutes)."""
    images.image_add(image_id)


@shared_task(name="jobs.tasks.usage_thin", ignore_result=True)
def usage_thin() -> None:
    """Usage samples older than an hour down to one a minute; past retention, none."""
    usage_thinning.usage_thin()
