"""Why a job waits in Slurm's queue, in the reader's words, and where it stands there.

``squeue`` gives a pending job's reason as a code (``Resources``, ``Priority``,
``ReqNodeNotAvail, UnavailableNodes:gpu-[1-2]``, ``JobHeldUser``, ``QOSMaxGRESPerUser``…,
the "JOB REASON CODES" of squeue(1)); each known one has a reason code of ours
(``slurm.why.*``, English and Chinese), and any other is shown as Slurm wrote it.
"""

from __future__ import annotations

from collections.abc import Iterable

from core.reasons import Reason

from .cli import SlurmJob

REASONS = {
    "Resources": "slurm.why.resources",
    "Priority": "slurm.why.priority",
    "Dependency": "slurm.why.dependency",
    "DependencyNeverSatisfied": "slurm.why.never",
    "JobHeldUser": "slurm.why.held_user",
    "JobHeldAdmin": "slurm.why.held_admin",
    "BeginTime": "slurm.why.begin",
    "ReqNodeNotAvail": "slurm.why.nodes",
    "NodeDown": "slurm.why.nodes",
    "PartitionDown": "slurm.why.partition",
    "PartitionInactive": "slurm.why.partition",
    "Reservation": "slurm.why.reservation",
    "": "slurm.why.none",
    "None": "slurm.why.none",
    "launch failed requeued held": "slurm.why.launch",
}
# Limits of a partition, an association or a QOS: the reason names the limit.
LIMIT_PREFIXES = ("Partition", "Assoc", "QOS", "MaxGRES", "MaxCpu", "MaxMem")


def pending_reason(slurm_reason: str, *, slurm_id: str) -> Reason:
    """Our reason for Slurm's ``slurm_reason`` of the pending job ``slurm_id``."""
    head, _comma, rest = slurm_reason.partition(",")
    head = head.strip()
    code = REASONS.get(head)
    if code == "slurm.why.nodes":
        nodes = rest.strip().removeprefix("UnavailableNodes:").strip()
        return Reason(code, {"nodes": nodes or "—"})
    if code == "slurm.why.held_user":
        return Reason(code, {"id": slurm_id})
    if code is not None:
        return Reason(code)
    if head.startswith(LIMIT_PREFIXES):
        return Reason("slurm.why.limit", {"limit": head})
    return Reason("slurm.why.other", {"raw": slurm_reason.strip()[:200]})


def pending_positions(jobs: Iterable[SlurmJob], *, partition: str) -> dict[str, int]:
    """Each pending job's place among everyone's pending in ``partition`` (all, if none
    is set): Slurm's order, its priority first, then its id (submission order)."""
    pending = [
        job
        for job in jobs
        if job.state == "PENDING" and (not partition or job.partition == partition)
    ]
    pending.sort(key=lambda job: (-job.priority, int(job.job_id)))
    return {job.job_id: position for position, job in enumerate(pending, start=1)}
