"""Slurm job states in Trainyard's terms.

A Slurm job is pending (the attempt waits), active (the attempt runs) or
ended; an ended job becomes one final attempt state per replica:

========================  =====================================================
Slurm                     attempt
========================  =====================================================
COMPLETED                 succeeded (each replica's own exit code when recorded)
FAILED                    failed, with the exit code and the log's last lines
OUT_OF_MEMORY             failed (the user's request was too small)
TIMEOUT, DEADLINE         timed out: Slurm enforced the max run time
CANCELLED                 stopped (by Trainyard, or by someone in Slurm)
NODE_FAIL, BOOT_FAIL      lost to the platform: not billed, placed again
PREEMPTED                 lost to the platform: not billed, placed again
(forgotten, no exit.json) lost to the platform (``VANISHED``)
(keeper refused)          failed, the node's fault: placed again (``refused.json``)
(past its storage)        failed: "Storage limit exceeded" (``storage.json``)
========================  =====================================================

A stop or deadline Trainyard asked for (``stop.json``) decides over what the
job did afterwards, as with the local agent.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass

from core.reasons import Reason
from jobs.execution.replica.failure import exited_reason, isolation_refusal, storage_reason
from jobs.execution.replica.image_root import image_name
from jobs.execution.replica.runner import describe
from jobs.models import ReplicaAttempt

from .cli import SlurmJob

State = ReplicaAttempt.State

PENDING = frozenset(
    {"PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD"}
)
ACTIVE = frozenset(
    {"RUNNING", "COMPLETING", "SUSPENDED", "STOPPED", "SIGNALING", "STAGE_OUT", "RESIZING"}
)
PLATFORM_FAULTS = frozenset({"NODE_FAIL", "BOOT_FAIL", "PREEMPTED"})
# Our name for a job that Slurm forgot before we saw it end, leaving no exit status.
VANISHED = "VANISHED"
TIMED_OUT = frozenset({"TIMEOUT", "DEADLINE"})
# What a replica's processes exit with when Slurm ends them (its TERM at the time limit, at
# a cancel, when a step's task failed; the KILL after): Slurm's word, not the job's.
SLURMS_SIGNALS = frozenset({128 + signal.SIGTERM, 128 + signal.SIGKILL})


def is_pending(slurm_job: SlurmJob) -> bool:
    return slurm_job.state in PENDING


def is_active(slurm_job: SlurmJob) -> bool:
    return slurm_job.state in ACTIVE


def has_ended(slurm_job: SlurmJob) -> bool:
    return not (is_pending(slurm_job) or is_active(slurm_job))


@dataclass(frozen=True)
class ReplicaRecord:
    """What the replica's script and Trainyard wrote in the attempt folder."""

    stop: dict | None  # Trainyard asked it to stop (kind, reason, requested_at)
    exit: dict | None  # the replica's own exit (exit_code, summary, ended_at)
    log: object  # Path of the log, for the failure's last lines
    peer_failed: int | None  # index of another replica of the job that exited non-zero
    refused: dict | None = None  # the keeper did not start it (kind, problem): keeper.py
    storage: dict | None = None  # the keeper ended it past its storage (used, limit bytes)


@dataclass(frozen=True)
class Outcome:
    state: str
    exit_code: int | None
    reason: Reason
    platform_fault: bool = False


def outcome(slurm_job: SlurmJob, record: ReplicaRecord, *, attempt: ReplicaAttempt) -> Outcome:
    """The final attempt state for a replica of an ended Slurm job."""
    exit_code = record.exit["exit_code"] if record.exit else slurm_job.exit_code
    if record.refused and record.refused.get("kind") == "image":
        # As on the local agent: a broken image fails the job; a node that cannot unpack
        # it is at fault itself, and the job is placed again.
        return _image_refused(record.refused, attempt, exit_code)
    if record.refused:
        # As on the local agent: the node's fault, and the job is placed again.
        reason = isolation_refusal(node_name(attempt), record.refused["problem"])
        return Outcome(State.FAILED, exit_code, reason, platform_fault=True)
    if record.stop:
        # What Trainyard asked for, in its own words, as the local agent reports it.
        return Outcome(record.stop["kind"], exit_code, Reason.of(record.stop["reason"]))
    if record.storage:
        return Outcome(State.FAILED, exit_code, storage_reason(record.storage))
    state, detail, platform_fault = _classify(slurm_job, record, attempt, exit_code)
    reason = Reason(
        "slurm.ended", {"id": slurm_job.job_id, "state": slurm_job.state, "detail": detail}
    )
    return Outcome(state, exit_code, reason, platform_fault)


def _image_refused(refused: dict, attempt: ReplicaAttempt, exit_code: int | None) -> Outcome:
    name = image_name(attempt.replica.job)
    if refused.get("node_fault"):
        params = {"node": node_name(attempt), "image": name, "error": refused["problem"]}
        return Outcome(State.FAILED, exit_code, Reason("image.node", params), platform_fault=True)
    params = {"image": name, "error": refused["problem"]}
    return Outcome(State.FAILED, exit_code, Reason("image.broken", params))


def _classify(slurm_job, record, attempt, exit_code) -> tuple[str, Reason, bool]:
    if slurm_job.state in TIMED_OUT:
        return State.TIMED_OUT, max_runtime_reason(attempt.replica.job.max_runtime_minutes), False
    if slurm_job.state == VANISHED:
        return State.LOST, Reason("slurm.vanished"), True
    if slurm_job.state in PLATFORM_FAULTS:
        return State.LOST, Reason("slurm.lost", {"state": slurm_job.state}), True
    if slurm_job.state == "OUT_OF_MEMORY":
        detail = Reason("slurm.oom", {"memory": attempt.replica.job.memory_mib})
        return State.FAILED, detail, False
    if slurm_job.state == "CANCELLED":
        return State.STOPPED, Reason("slurm.cancelled"), False
    if record.peer_failed is not None and (record.exit is None or ended_by_slurm(record.exit)):
        return State.STOPPED, Reason("slurm.peer", {"index": record.peer_failed}), False
    if exit_code == 0 and slurm_job.state == "COMPLETED":
        return State.SUCCEEDED, Reason("exit.ok"), False
    return State.FAILED, _failure_detail(record, exit_code), False


def ended_by_slurm(exit: dict) -> bool:
    """Whether the replica's own exit is a signal Slurm sends: why, only Slurm's state says."""
    return exit["exit_code"] in SLURMS_SIGNALS


def max_runtime_reason(minutes: int | None) -> Reason:
    return Reason("timeout", {"minutes": minutes or 0})


def _failure_detail(record: ReplicaRecord, exit_code: int | None) -> Reason:
    summary = record.exit["summary"] if record.exit else describe_exit(exit_code)
    return exited_reason(summary, record.log)


def describe_exit(exit_code: int | None) -> str:
    """As the local runner words it: ``exit code 137 (SIGKILL)``."""
    return describe(exit_code if exit_code is not None else 1)[1]


def node_name(attempt: ReplicaAttempt) -> str:
    """Its node, or "Slurm" for one that ended before Slurm's node was known."""
    return attempt.node.name if attempt.node else "Slurm"
