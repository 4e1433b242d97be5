"""Submitting a job attempt to Slurm, at most once, and stopping it.

Idempotent: the Slurm job's name says which Trainyard job and attempt it runs
(``<prefix>-j<job>-r<replicas>-a<attempt>``), and before submitting again
(once a submission plan exists) we ask Slurm for a job of that name, so a start
delivered twice, or retried after ``sbatch`` answered but before we recorded
its id, never makes a second job.
Submit and stop of one job attempt take the lead attempt folder's lock, so a
stop either finds the Slurm job id or prevents the submission.
"""

from __future__ import annotations

import logging
import os
import re
import sys
from datetime import timedelta
from itertools import groupby

from django.conf import settings
from django.utils import timezone

from core.reasons import Reason
from jobs.execution.replica import keeper, sandbox
from jobs.execution.replica.folder import AttemptFolder
from jobs.execution.replica.image_error import ImageError
from jobs.execution.replica.image_root import image_plan
from jobs.execution.replica.limits import process_limit
from jobs.execution.replica.prepare import (
    GIB,
    attempt_phases,
    attempt_refusal,
    end_unstarted,
    fail_image,
    fail_missing_inputs,
    prefetch_plan_inputs,
    published_ports,
    replica_environment,
    replica_mounts,
    write_command_file,
)
from jobs.execution.report import attempt_ended, job_start_waits
from jobs.models import Job, ReplicaAttempt
from resources.models import SiteSettings

from . import cli
from .batch import SubmitBatch
from .eligible import asked_model_id, model_closed
from .scripts import (
    REPLICA_SCRIPT,
    ReplicaPlan,
    Request,
    batch_script,
    replica_script,
    sbatch_argv,
)
from .scripts import shared_environment as shared_env

logger = logging.getLogger(__name__)
State = ReplicaAttempt.State
PLAN = "slurm-submit"


def job_name(job_id: int, attempt_number: int, replicas: int) -> str:
    indices = "0" if replicas == 1 else f"0-{replicas - 1}"
    return f"{settings.TRAINYARD_SLURM_JOB_PREFIX}-j{job_id}-r{indices}-a{attempt_number}"


def parse_job_name(name: str) -> tuple[int, int] | None:
    """(job id, attempt number) of one of our Slurm jobs, or None for anyone else's."""
    prefix = re.escape(settings.TRAINYARD_SLURM_JOB_PREFIX)
    match = re.fullmatch(rf"{prefix}-j(\d+)-r[\d-]+-a(\d+)", name)
    return (int(match[1]), int(match[2])) if match else None


def load_groups(attempt_ids: list[int]) -> list[list[ReplicaAttempt]]:
    """The attempts by job attempt (one Slurm job each), lead replica first, the job
    attempts in the order of their attempts in ``attempt_ids`` (the queue's)."""
    attempts = (
        ReplicaAttempt.objects.filter(pk__in=attempt_ids)
        .select_related("node", "replica__job__gpu_model", "replica__job__code_version")
        .order_by("replica__job_id", "number", "replica__index")
    )
    groups = [
        list(group) for _key, group in groupby(attempts, key=lambda a: (a.replica.job_id, a.number))
    ]
    position = {pk: index for index, pk in enumerate(attempt_ids)}
    return sorted(groups, key=lambda group: min(position[a.pk] for a in group))


def submit_attempts(attempt_ids: list[int]) -> None:
    """Submit every job attempt among these attempts that Slurm does not have yet, in
    their order: Slurm queues the first first."""
    groups = load_groups(attempt_ids)
    prefetch_plan_inputs([attempt for group in groups for attempt in group])
    batch = SubmitBatch([group[0].replica.job for group in groups])
    for position, group in enumerate(groups):
        try:
            submit_group(group, batch)
        except cli.SlurmUnavailable as error:
            cli.log_unavailable("submitting", error)
            # Each further try would wait as long; the next tracking pass retries them all.
            for waiting in groups[position:]:
                _note_waiting(waiting[0].replica.job_id, error)
            return
        except Exception:
            # One job attempt's fault holds back none of the others; the tracking pass
            # submits it again (``RESUBMIT_AFTER``).
            logger.exception("submitting job %s failed", group[0].replica.job_id)


def submit_group(group: list[ReplicaAttempt], batch: SubmitBatch | None = None) -> str | None:
    """The Slurm job id of this job attempt, submitting it if Slurm has none by its name.

    ``batch``: what it shares with the other job attempts of its task (else its own)."""
    lead = group[0]
    folder = AttemptFolder.of(lead)
    with folder.lock():
        group = _reload(group)
        recorded = next((a.external_id for a in group if a.external_id), "")
        if recorded:
            return _record(group, recorded)
        refusal = attempt_refusal(group[0], folder)
        if refusal is not None:
            for attempt in group:
                end_unstarted(attempt, refusal)
            return None
        job = lead.replica.job
        name = job_name(job.pk, lead.number, job.replicas)
        # The plan is written before the first sbatch: without one, nothing was submitted.
        existing = cli.job_ids_named(name) if folder.exists(PLAN) else []
        batch = batch or SubmitBatch([job])
        slurm_id = existing[-1] if existing else _sbatch(group, folder, name, batch)
        return _record(group, slurm_id) if slurm_id else None


def _reload(group: list[ReplicaAttempt]) -> list[ReplicaAttempt]:
    fresh = ReplicaAttempt.objects.in_bulk([a.pk for a in group])
    for attempt in group:
        attempt.state = fresh[attempt.pk].state
        attempt.external_id = fresh[attempt.pk].external_id
    return group


def _record(group: list[ReplicaAttempt], slurm_id: str) -> str:
    ReplicaAttempt.objects.filter(pk__in=[a.pk for a in group], external_id="").update(
        external_id=slurm_id
    )
    return slurm_id


def _sbatch(
    group: list[ReplicaAttempt], folder: AttemptFolder, name: str, batch: SubmitBatch
) -> str | None:
    # The plan is written once: a retry after an unreachable controller submits the same job.
    plan = folder.read(PLAN) or _plan(group, folder, name, batch)
    if plan is None:
        return None
    try:
        return cli.submit(argv=plan["argv"], script=plan["script"], env=plan["env"])
    except cli.SlurmRefused as error:
        # Every node it could use closed by Trainyard since it was admitted (an admin's
        # drain, keepers that could not isolate): the platform's doing, so the job waits
        # again, its retries untouched, rather than fail (``settle``: a platform fault).
        closed = model_closed(group[0])
        code = "slurm.nodes_closed" if closed else "slurm.refused"
        reason = Reason(code, {"message": str(error)})
        for attempt in group:
            attempt_ended(
                attempt_id=attempt.pk,
                state=State.FAILED,
                ended_at=timezone.now(),
                reason=reason,
                platform_fault=closed,
            )
        return None


def _plan(
    group: list[ReplicaAttempt], folder: AttemptFolder, name: str, batch: SubmitBatch
) -> dict | None:
    """Prepare every replica's folders and scripts; None if one could not start."""
    plans = [_replica_plan(attempt, group) for attempt in group]
    if None in plans:
        return None
    job = group[0].replica.job
    lead = group[0]
    model_id = asked_model_id(lead)
    request = _request(job, model_id, batch)
    shared = shared_env(plans)
    deadline_seconds = job.max_runtime_minutes * 60 if job.max_runtime_minutes else None
    masters = batch.master_addresses if len(plans) > 1 and group[0].node is None else None
    for replica in plans:
        replica.script_path.write_text(
            replica_script(
                replica,
                shared=shared,
                request=request,
                deadline_seconds=deadline_seconds,
                master_addresses=masters,
            )
        )
        replica.script_path.chmod(0o500)
    plan = {
        "argv": sbatch_argv(
            plans,
            name=name,
            request=request,
            partition=settings.TRAINYARD_SLURM_PARTITION,
            account=settings.TRAINYARD_SLURM_ACCOUNT,
            exclude=batch.avoided_nodes(request, model_id) if lead.node is None else [],
        ),
        "script": batch_script(plans, request=request, python=sys.executable),
        "env": shared,
    }
    folder.write(PLAN, plan)
    return plan


def _replica_plan(attempt: ReplicaAttempt, group: list[ReplicaAttempt]) -> ReplicaPlan | None:
    """The local agent's preparation; the node's part is left to the replica's keeper.

    Only the node knows the replica's slot (its uid and job address), so the
    keeper (``replica/keeper.py``) takes it there, makes the network and writes
    the phases' bwrap lines from ``keeper.json``; the rest is prepared here.
    """
    job = attempt.replica.job
    folder = AttemptFolder.of(attempt)
    folder.path.mkdir(parents=True, exist_ok=True)
    os.chmod(folder.path, 0o711)  # the job's uid may reach its command file, nothing else
    mounts, missing = replica_mounts(attempt, None)
    if missing:
        fail_missing_inputs(folder, attempt, missing)
        return None
    try:
        image = image_plan(job)
    except ImageError as error:
        fail_image(attempt, error)
        return None
    env = replica_environment(
        attempt,
        mounts,
        folder,
        sandboxed=True,
        uid=None,
        networked=True,
        image_env=image["env"] if image else None,
    )
    phases = [
        (name, write_command_file(folder, name, command, None))
        for name, command in attempt_phases(job)
    ]
    folder.write(
        keeper.PLAN,
        keeper.keeper_plan(
            attempt_id=attempt.pk,
            node_settings={name: getattr(settings, name) for name in keeper.NODE_SETTINGS},
            mounts=mounts,
            phases=phases,
            log=folder.log,
            script=REPLICA_SCRIPT,
            storage_bytes=job.storage_gib * GIB,
            max_processes=process_limit(job.cpu_milli),
            scratch=sandbox.scratch_paths(in_image=bool(image)),
            published=published_ports(attempt),
            peers=[AttemptFolder.of(a).path for a in group if a != attempt],
            image=image,
        ),
    )
    return ReplicaPlan(
        index=attempt.replica.index,
        attempt_number=attempt.number,
        attempt_folder=folder.path,
        node_name=attempt.node.name if attempt.node else "",
        env=env,
        phases=[name for name, _path in phases],
    )


def _request(job: Job, model_id: int | None, batch: SubmitBatch | None = None) -> Request:
    # With an augmentation search first, the max run time starts with training:
    # Slurm's limit would count both phases, so the tracking pass enforces it instead.
    runtime = job.max_runtime_minutes if not job.augmentation_command.strip() else None
    batch = batch or SubmitBatch([job])
    return Request(
        cpu_milli=job.cpu_milli,
        memory_mib=job.memory_mib,
        gres=gres(job, model_id, batch),
        runtime_minutes=runtime,
        warning_seconds=max(1, batch.stop_grace_seconds),
        nice=batch.nice(job),
    )


def gres(job: Job, model_id: int | None, batch: SubmitBatch | None = None) -> str:
    """``gpu:<type>:<n>`` with the Slurm GPU type of the model it asks for
    (``asked_model_id``) when one type maps to that model."""
    if job.resource_kind == "cpu" or not job.gpu_count:
        return ""
    types = (batch or SubmitBatch([job])).slurm_types(model_id)
    return f"gpu:{types[0]}:{job.gpu_count}" if len(types) == 1 else f"gpu:{job.gpu_count}"


def _note_waiting(job_id: int, error: Exception) -> None:
    job = Job.objects.filter(pk=job_id, state=Job.State.STARTING).first()
    if job is not None:
        job_start_waits(
            job=job,
            reason=Reason("slurm.unreachable"),
            data={"slurm_error": str(error)[:500]},
        )


def stop_attempts(attempt_ids: list[int], *, reason: Reason, kind: str = State.STOPPED) -> None:
    """Stop these attempts: TERM now, KILL after the grace (the tracker's ``scancel``).

    The stop is remembered in each attempt folder: each replica's keeper sees it and
    passes the TERM on (``keeper.watch_stop``), and the tracking pass reports the attempt
    as stopped (or timed out) whatever it exits with. Attempts not submitted yet end at
    once. The grace is the site's preemption grace for a preempted job, else its stop
    grace.
    """
    site = SiteSettings.load()
    killed: list[str] = []
    for group in load_groups(attempt_ids):
        lead = group[0]
        preempted = lead.replica.job.preempt_requested_at is not None
        seconds = site.preempt_grace_seconds if preempted else site.stop_grace_seconds
        grace = timedelta(seconds=seconds)
        with AttemptFolder.of(lead).lock():
            group = _reload(group)
            for attempt in group:
                if attempt.state in ReplicaAttempt.FINAL_STATES:
                    continue
                remember_stop(attempt, kind=kind, reason=reason, grace=grace)
                if not attempt.external_id:
                    end_unstarted(attempt, reason)
            if not grace:
                killed += sorted({a.external_id for a in group if a.external_id})
    if killed:
        send_stop(killed)


def remember_stop(attempt: ReplicaAttempt, *, kind: str, reason: Reason, grace: timedelta) -> dict:
    folder = AttemptFolder.of(attempt)
    stop = folder.read("stop")
    if stop is None:
        now = timezone.now()
        stop = {
            "kind": str(kind),
            "reason": Reason.of(reason).as_json(),
            "requested_at": now.isoformat(),
            "kill_at": (now + grace).isoformat(),
        }
        folder.path.mkdir(parents=True, exist_ok=True)
        folder.write("stop", stop)
    return stop


def send_stop(slurm_ids: list[str]) -> bool:
    """End the jobs at once (Slurm's KillWait between its TERM and KILL); False if Slurm
    did not answer (the tracking pass tries again)."""
    try:
        cli.cancel(slurm_ids)
    except cli.SlurmUnavailable as error:
        cli.log_unavailable("stopping", error)
        return False
    except cli.SlurmRefused as error:
        logger.warning("Slurm refused to stop %s: %s", slurm_ids, error)
        return False
    return True
