"""Which events notify, and the key that makes each one notify once."""

from __future__ import annotations

from jobs.models import Job

from .models import Kind

# The job states a user hears of (the first time the job enters them); a stop only
# when its owner did not ask for it (see ``jobs.services.stop.stop_requester``).
JOB_STATE_KINDS: dict[str, str] = {
    Job.State.RUNNING: Kind.STARTED,
    Job.State.SUCCEEDED: Kind.SUCCEEDED,
    Job.State.FAILED: Kind.FAILED,
    Job.State.TIMED_OUT: Kind.TIMED_OUT,
    Job.State.STOPPED: Kind.STOPPED,
}
# The shares of a free grant whose crossing notifies (billing warns at the same lines).
FREE_HOURS_PERCENTS = (80, 95)


def job_event_key(*, job_id: int, kind: str) -> str:
    """One per job and kind: a job restarted in place does not say "running" twice."""
    return f"job:{job_id}:{kind}"


def grant_event_key(*, grant_id: int, percent: int) -> str:
    return f"grant:{grant_id}:{percent}"
