"""What a job does when the attempts of its current try have ended.

- Every replica exited 0: succeeded.
- A stop was requested: stopped. The max run time passed: timed out.
- A replica failed (non-zero exit, killed): the whole job restarts in place
  with ``attempt + 1`` (all replicas together, so distributed jobs get a fresh
  rendezvous) while failures ≤ ``max_retries``; then failed, with the exit code
  and the last log lines in the reason.
- Its image cannot be used: failed at once, its retries untouched (every try would
  use the same image).
- It was preempted (it borrowed idle quota and a job within its quota needed the
  cards): back to the queue with ``attempt + 1``; the stopped try is billed, but
  not counted against its retries (``_tries_with`` counts failed tries).
- A replica was lost to the platform (its node went down): the job goes back
  to resource wait, its resources are released, and the scheduler places it
  again (with ``attempt + 1``). Platform faults are not the user's failures and
  do not use up their retries; a bounded number of them is allowed.

While some replicas still run after one ended badly, they are stopped first;
the decision waits until all have ended, so nothing runs twice.

Settling decides; launching and stopping are done above (``launch.py``, the
executors), which this module does not import: on commit it sends ``job_retried``
or ``peers_to_stop``, which ``JobsConfig.ready`` connects to ``launch.py``.
"""

from __future__ import annotations

from django.db import transaction
from django.dispatch import Signal

from core.reasons import Reason
from jobs.lifecycle.release import job_release
from jobs.lifecycle.transitions import job_transition
from jobs.models import Job, ReplicaAttempt
from jobs.models.job import MAX_RETRIES

from .files import executor_of

Attempt = ReplicaAttempt
State = ReplicaAttempt.State
MAX_PLATFORM_RESTARTS = MAX_RETRIES

# Sent after the commit that moved a job to ``starting`` for its next try in place:
# ``job_id``; the receiver launches that try.
job_retried = Signal()
# Sent after the commit that saw a replica end badly while its peers run:
# ``attempt_ids_by_executor`` ({executor name: [attempt id]}) and ``reason``;
# the receiver asks each executor to stop its attempts.
peers_to_stop = Signal()


def job_settle(*, job: Job) -> None:
    """Called with the job's row locked, after one of its current attempts ended."""
    attempts = list(
        Attempt.objects.filter(replica__job=job, number=job.attempt)
        .select_related("replica", "node")
        .order_by("replica__index")
    )
    unfinished = [a for a in attempts if a.state not in Attempt.FINAL_STATES]
    if unfinished:
        ended_badly = [a for a in attempts if a.state in Attempt.FINAL_STATES]
        ended_badly = [a for a in ended_badly if a.state != State.SUCCEEDED]
        if ended_badly:
            _stop_peers(job=job, peers=unfinished, cause=ended_badly[0])
        return
    _decide(job=job, attempts=attempts)


def _decide(*, job: Job, attempts: list[ReplicaAttempt]) -> None:
    by_state = {state: [a for a in attempts if a.state == state] for state in State.values}
    if job.preempt_requested_at and not job.stop_requested_at:
        if len(by_state[State.SUCCEEDED]) == len(attempts):  # it ended within the grace
            _finish(job, Job.State.SUCCEEDED, Reason("exit.succeeded"))
        else:
            _requeue_preempted(job)
    elif job.stop_requested_at:
        stopped = by_state[State.STOPPED]
        _finish(job, Job.State.STOPPED, stopped[0].reason_value if stopped else Reason("stopped"))
    elif by_state[State.TIMED_OUT]:
        _finish(job, Job.State.TIMED_OUT, by_state[State.TIMED_OUT][0].reason_value)
    elif failed := [a for a in by_state[State.FAILED] if not a.platform_fault]:
        _retry_or_fail(job=job, failed=failed[0])
    elif lost := [a for a in attempts if a.platform_fault]:
        _replace_or_fail(job=job, lost=lost[0])
    elif len(by_state[State.SUCCEEDED]) == len(attempts):
        _finish(job, Job.State.SUCCEEDED, Reason("exit.succeeded"))
    else:
        stopped = by_state[State.STOPPED]
        _finish(job, Job.State.STOPPED, stopped[0].reason_value if stopped else Reason("stopped"))


def _retry_or_fail(*, job: Job, failed: ReplicaAttempt) -> None:
    if failed.reason_value.code == "image.broken":
        _finish(job, Job.State.FAILED, failed.reason_value)  # the same image on every try
        return
    failures = _tries_with(job, platform_fault=False)
    what = {
        "index": failed.replica.index,
        "attempt": job.attempt,
        "used": failures,
        "retries": job.max_retries,
    }
    code = "retry_all" if job.replicas > 1 else "retry"
    if failures > job.max_retries:
        code = "failed"
    reason = failed.reason_value
    exited = _exit_of(reason)
    if exited is None:
        reason = Reason(code, {**what, "reason": reason})
    else:
        # The user's error first: the exit and the log's last lines lead the job's reason.
        reason = Reason(f"{code}.exited", {**what, **exited.params})
    if code == "failed":
        _finish(job, Job.State.FAILED, reason)
    else:
        _restart_in_place(job=job, reason=reason)


def _exit_of(reason: Reason) -> Reason | None:
    """The program's exit in an attempt's reason (local, or inside Slurm's), if it says one."""
    if reason.code == "exited":
        return reason
    detail = reason.params.get("detail")
    if reason.code == "slurm.ended" and isinstance(detail, dict | Reason):
        detail = Reason.of(detail)
        return detail if detail.code == "exited" else None
    return None


def _replace_or_fail(*, job: Job, lost: ReplicaAttempt) -> None:
    node = lost.node.name if lost.node else "Slurm"  # lost before Slurm placed it
    what = {"index": lost.replica.index, "node": node, "reason": lost.reason_value}
    if _tries_with(job, platform_fault=True) > MAX_PLATFORM_RESTARTS:
        _finish(job, Job.State.FAILED, Reason("lost.final", what))
        return
    # The next try gets a new attempt number here; the scheduler keeps it when it places the job.
    job_transition_and_release(
        job=job,
        to_state=Job.State.RESOURCE_WAIT,
        reason=Reason("lost", what),
        attempt=job.attempt + 1,
    )


def _requeue_preempted(job: Job) -> None:
    job_transition_and_release(
        job=job,
        to_state=Job.State.RESOURCE_WAIT,
        reason=Reason("preempted", {"job": job.preempted_for_id}),
        attempt=job.attempt + 1,
        borrowed=False,
        preempt_requested_at=None,
        started_at=None,
    )


def _tries_with(job: Job, *, platform_fault: bool) -> int:
    """How many tries of the job had a replica fail (or be lost, for platform faults)."""
    ended = Attempt.objects.filter(replica__job=job, platform_fault=platform_fault)
    if not platform_fault:
        ended = ended.filter(state=State.FAILED)
    return ended.values("number").distinct().count()


def _restart_in_place(*, job: Job, reason: Reason) -> None:
    next_attempt = job.attempt + 1
    if job_transition(job=job, to_state=Job.State.STARTING, reason=reason, attempt=next_attempt):
        job_id = job.pk
        transaction.on_commit(lambda: job_retried.send(sender=Job, job_id=job_id))


def _finish(job: Job, state: str, reason: Reason) -> None:
    job_transition_and_release(job=job, to_state=state, reason=reason)


def job_transition_and_release(*, job: Job, to_state: str, reason: Reason, **fields) -> None:
    """Leave the active states and give back the nodes, cards and ports (same transaction)."""
    if job_transition(job=job, to_state=to_state, reason=reason, **fields):
        job_release(job=job)


def _stop_peers(*, job: Job, peers: list[ReplicaAttempt], cause: ReplicaAttempt) -> None:
    state = Reason(f"attempt.{cause.state}")
    reason = Reason("stopped.peer", {"index": cause.replica.index, "state": state})
    by_executor: dict[str, list[int]] = {}
    for peer in peers:
        by_executor.setdefault(executor_of(peer.node), []).append(peer.pk)

    transaction.on_commit(
        lambda: peers_to_stop.send(sender=Job, attempt_ids_by_executor=by_executor, reason=reason)
    )
