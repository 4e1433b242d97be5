"""The Slurm executor: each job attempt becomes one Slurm job (see ``jobs.execution.slurm``).

Both calls hand the work to a Celery task, so a scheduling pass or a page
that stops a job never waits on a Slurm controller that is slow to answer.
"""

from __future__ import annotations

from trainyard.reasons import Reason


class SlurmExecutor:
    name = "slurm"

    def start_attempts(self, attempt_ids: list[int]) -> None:
        from jobs.execution.slurm.tasks import slurm_submit

        slurm_submit.delay(list(attempt_ids))

    def stop_attempts(self, attempt_ids: list[int], *, reason: Reason) -> None:
        from jobs.execution.slurm.tasks import slurm_stop

        slurm_stop.delay(list(attempt_ids), Reason.of(reason).as_json())
