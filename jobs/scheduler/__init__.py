"""The scheduler: admission against quota, placement on nodes, queue order.

``run_pass()`` is the one entry point (the Celery task ``jobs.tasks.schedule_pass``
calls it); ``release.job_release(job=)`` gives back what a finished job holds.
"""

from .passes import PassReport
from .run import run_pass

__all__ = ["PassReport", "run_pass"]
