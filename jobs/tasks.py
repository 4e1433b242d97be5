"""Celery tasks of the jobs app: each takes ids, re-reads rows and calls a service."""

from celery import shared_task


@shared_task(name="jobs.tasks.schedule_pass", ignore_result=True)
def schedule_pass() -> None:
    """One scheduling pass; then a launch lost to a dead process is done again."""
    from jobs.execution.launch import lost_launches_retry
    from jobs.scheduler import run_pass
    from jobs.services.hooks import pass_begins

    pass_begins()
    run_pass()
    lost_launches_retry()
