"""Starting a replica attempt on this node: prepare its folders and spec, hand it to a runner.

The task returns once the runner has started the process (milliseconds); the
runner, not the task, waits on the training run. The preparation itself is
the executors' shared replica runtime (``jobs.execution.replica``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

from core.reasons import Reason
from jobs.execution.files import node_root
from jobs.execution.replica import limits, runner, sandbox
from jobs.execution.replica.failure import disk_full_reason
from jobs.execution.replica.folder import AttemptFolder, active_attempt_ids, parse_time
from jobs.execution.replica.image_error import ImageError
from jobs.execution.replica.network import NetworkError
from jobs.execution.replica.prepare import (
    attempt_phases,
    attempt_refusal,
    end_unstarted,
    fail_image,
    fail_missing_inputs,
    fail_to_prepare,
    phase_argv,
    prepare_image,
    replica_environment,
    replica_mounts,
    write_header,
)
from jobs.execution.report import attempt_running
from jobs.models import ReplicaAttempt

from .isolation import Isolation, Refused, isolate, release

RUNNER = Path(runner.__file__)
STARTED_WAIT_SECONDS = 10
MIB = 1024 * 1024
GIB = 1024 * MIB


def start_attempt(attempt_id: int) -> None:
    attempt = _load(attempt_id)
    if attempt is None:
        return
    folder = AttemptFolder.of(attempt)
    with folder.lock():
        if not folder.exists("spec"):
            refusal = attempt_refusal(attempt, folder)
            if refusal is not None:
                end_unstarted(attempt, refusal)
                return
            try:
                launched = _launch(folder, attempt)
            except OSError as error:  # the node's disk is full, or its folders are broken
                reason = Reason(
                    "prepare_failed",
                    {"node": attempt.node.name, "error": str(error.strerror or error)},
                )
                fail_to_prepare(attempt, reason)
                return
            if not launched:
                return
    report_started(folder, attempt, wait_seconds=STARTED_WAIT_SECONDS)


def _load(attempt_id: int) -> ReplicaAttempt | None:
    return (
        ReplicaAttempt.objects.select_related(
            "node", "replica__job__code_version", "replica__job__gpu_model", "replica__node"
        )
        .filter(pk=attempt_id)
        .first()
    )


def _launch(folder: AttemptFolder, attempt: ReplicaAttempt) -> bool:
    # A job on a full disk could not even write its log: the node is at fault, not the job.
    full = disk_full_reason(attempt.node.name, [node_root(attempt.node.name)])
    if full:
        fail_to_prepare(attempt, full)
        return False
    folder.path.mkdir(parents=True, exist_ok=True)
    os.chmod(folder.path, 0o711)  # the job's uid may reach its command file, nothing else
    try:
        isolation = isolate(attempt)
    except Refused as refusal:
        fail_to_prepare(attempt, refusal.args[0])
        return False
    except NetworkError as error:
        fail_to_prepare(
            attempt,
            Reason("network_failed", {"node": attempt.node.name, "error": str(error)}),
        )
        return False
    try:
        return _start_runner(folder, attempt, isolation)
    except BaseException:
        release(
            {
                "network": isolation.network.as_dict() if isolation.network else None,
                "image": {"digest": attempt.replica.job.image_digest},
                "attempt_id": attempt.pk,
            }
        )
        raise
    finally:
        isolation.close_lease()


def _start_runner(folder: AttemptFolder, attempt: ReplicaAttempt, isolation: Isolation) -> bool:
    job = attempt.replica.job
    uid, bwrap, replica_network = isolation.uid, isolation.bwrap, isolation.network
    mounts, missing = replica_mounts(attempt, uid)
    if missing:
        fail_missing_inputs(folder, attempt, missing)
        release({"network": replica_network.as_dict() if replica_network else None})
        return False
    try:
        image = prepare_image(attempt, mounts) if bwrap else None
    except ImageError as error:
        fail_image(attempt, error)
        release({"network": replica_network.as_dict() if replica_network else None})
        return False
    env = replica_environment(
        attempt,
        mounts,
        folder,
        sandboxed=bool(bwrap),
        uid=uid,
        networked=bool(replica_network),
        image_env=image.env if image else None,
    )
    phases = [
        {
            "name": name,
            "argv": phase_argv(folder, attempt, name, command, mounts, uid, bwrap, replica_network),
        }
        for name, command in attempt_phases(job)
    ]
    if job.max_runtime_minutes:
        # The max run time limits training alone (seed 000); the runner starts the
        # clock, and sets TRAINYARD_DEADLINE, when the training phase starts.
        phases[-1]["deadline_seconds"] = job.max_runtime_minutes * 60
    memory_bytes = job.memory_mib * MIB
    cgroup = limits.attempt_cgroup(
        node_name=attempt.node.name, attempt_id=attempt.pk, memory_bytes=memory_bytes
    )
    spec = {
        "attempt_id": attempt.pk,
        "phases": phases,
        "env": env,
        "cwd": "/",
        "log": str(folder.log),
        "memory_bytes": memory_bytes,
        "cgroup": str(cgroup) if cgroup else None,
        "cpus": _cpus(attempt),
        "max_processes": limits.process_limit(job.cpu_milli),
        "sandboxed": bool(bwrap),
        "uid": uid,
        "network": replica_network.as_dict() if replica_network else None,
        # The image's root this attempt holds a lease on (released with the network).
        "image": {"digest": image.digest} if image else None,
        # What the job may write, output, checkpoint and /tmp together (the runner watches it).
        "storage": {
            "output": str(mounts.output),
            "checkpoint": str(mounts.checkpoint),
            "limit_bytes": job.storage_gib * GIB,
            "scratch": sandbox.scratch_paths(in_image=bool(image)),
        },
    }
    try:
        write_header(folder, attempt, spec)
        folder.write("spec", spec)
    except OSError:
        release(spec)
        raise
    folder.mark_active()
    lease = [isolation.slot.fd] if isolation.slot else []
    with (folder.path / "runner.err").open("ab") as errors:
        subprocess.run(
            [sys.executable, "-I", "-S", str(RUNNER), str(folder.path)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errors,
            pass_fds=lease,  # the runner holds the slot for as long as it lives
            check=True,
        )
    return True


def _cpus(attempt: ReplicaAttempt) -> list[int] | None:
    taken: set[int] = set()
    for other_id in active_attempt_ids(attempt.node.name):
        other = AttemptFolder(attempt.node.name, other_id).read("spec")
        if other and other_id != attempt.pk:
            taken.update(other.get("cpus") or [])
    return limits.choose_cpus(
        node_cpu_milli=attempt.node.cpu_milli,
        request_milli=attempt.replica.job.cpu_milli,
        taken=taken,
    )


def report_started(folder: AttemptFolder, attempt: ReplicaAttempt, *, wait_seconds: float) -> None:
    """Report the runner's start time once it is written (idempotent)."""
    stop_at = time.monotonic() + wait_seconds
    started = folder.read("started")
    while started is None and not folder.exists("exit") and time.monotonic() < stop_at:
        time.sleep(0.005)
        started = folder.read("started")
    if started is None:
        return  # the poll reports it when it appears
    spec = folder.read("spec") or {}
    first_phase = spec.get("phases", [{}])[0]
    started_at = parse_time(started["started_at"])
    limit = first_phase.get("deadline_seconds")
    attempt_running(
        attempt_id=attempt.pk,
        started_at=started_at,
        pid=started["pgid"],
        deadline=started_at + timedelta(seconds=limit) if limit else None,
        phase=first_phase.get("name", ReplicaAttempt.Phase.TRAINING),
    )
