"""The Slurm executor: each job attempt becomes one Slurm job (see ``jobs.execution.slurm``).

Both calls hand the work to a Celery task, so a scheduling pass or a page
that stops a job never waits on a Slurm controller that is slow to answer. The tasks
(``jobs.execution.slurm.tasks``) are sent by name: the adapter is not imported here.
"""

from __future__ import annotations

from core.reasons import Reason
from core.task_names import send_task


class SlurmExecutor:
    name = "slurm"

    def start_attempts(self, attempt_ids: list[int]) -> None:
        send_task("jobs.slurm.submit", args=[list(attempt_ids)])

    def stop_attempts(self, attempt_ids: list[int], *, reason: Reason) -> None:
        send_task("jobs.slurm.stop", args=[list(attempt_ids), Reason.of(reason).as_json()])
