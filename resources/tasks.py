"""Celery tasks of the resources app."""

from celery import shared_task

from .free import free_resources_refresh


@shared_task(name="resources.tasks.refresh_free_resources", ignore_result=True)
def refresh_free_resources() -> None:
    """Recompute the free-resource hint (beat runs it every minute)."""

    free_resources_refresh()
