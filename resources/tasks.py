"""Celery tasks of the resources app."""

from celery import shared_task


@shared_task(name="resources.tasks.refresh_free_resources", ignore_result=True)
def refresh_free_resources() -> None:
    """Recompute the free-resource hint (beat runs it every minute)."""
    from .free import free_resources_refresh

    free_resources_refresh()
