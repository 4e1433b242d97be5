"""The interface every executor implements."""

from __future__ import annotations

from typing import Protocol

from core.reasons import Reason


class Executor(Protocol):
    """Starts and stops replica attempts on nodes; never waits on a training run.

    Both calls are idempotent: starting an attempt that already runs, or stopping
    one that already ended, does nothing. State changes come back through the
    execution services (``jobs.execution``), never by the executor writing job
    states itself.
    """

    name: str

    def start_attempts(self, attempt_ids: list[int]) -> None:
        """Start these attempts: every replica of each job attempt among them (a gang
        starts whole), the job attempts in the order given (the queue's)."""

    def stop_attempts(self, attempt_ids: list[int], *, reason: Reason) -> None:
        """TERM, a grace period, then KILL; the attempts end as stopped."""
