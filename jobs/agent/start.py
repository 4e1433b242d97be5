"""Starting a replica attempt on this node: prepare its folders and spec, hand it to a runner.

The task returns once the runner has started the process (milliseconds); the
runner, not the task, waits on the training run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.utils import timezone
from django.utils.translation import gettext as _

from jobs.environment import (
    JobPaths,
    ReplicaPlacement,
    environment_input_for_job,
    job_environment,
)
from jobs.execution.files import node_root, replica_output_dir
from jobs.execution.report import attempt_ended, attempt_running
from jobs.models import Job, PortAllocation, ReplicaAttempt

from . import limits, sandbox
from .failure import disk_full_reason
from .script import command_script
from .state import AttemptFolder, active_attempt_ids, parse_time

RUNNER = Path(__file__).with_name("runner.py")
STARTED_WAIT_SECONDS = 10
MIB = 1024 * 1024
GIB = 1024 * MIB


def start_attempt(attempt_id: int) -> None:
    attempt = _load(attempt_id)
    if attempt is None:
        return
    folder = AttemptFolder(attempt.node.name, attempt.pk)
    with folder.lock():
        if not folder.exists("spec"):
            refusal = _refusal(attempt, folder)
            if refusal is not None:
                _end_unstarted(attempt, refusal)
                return
            try:
                launched = _launch(folder, attempt)
            except OSError as error:  # the node's disk is full, or its folders are broken
                reason = _("Could not prepare the replica on node %(node)s: %(error)s.") % {
                    "node": attempt.node.name,
                    "error": error.strerror or error,
                }
                _fail_to_prepare(attempt, reason)
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


def _refusal(attempt: ReplicaAttempt, folder: AttemptFolder) -> str | None:
    """Why this attempt must not start (already ended, superseded, stopped), or None."""
    job = attempt.replica.job
    if attempt.state != ReplicaAttempt.State.PENDING:
        return ""
    if job.stop_requested_at or folder.exists("stop"):
        return _("Stopped before it started.")
    if attempt.number != job.attempt or job.state not in Job.ACTIVE_STATES:
        return _("Superseded before it started.")
    return None


def _end_unstarted(attempt: ReplicaAttempt, reason: str) -> None:
    if reason:
        attempt_ended(
            attempt_id=attempt.pk,
            state=ReplicaAttempt.State.STOPPED,
            ended_at=timezone.now(),
            reason=reason,
        )


def _launch(folder: AttemptFolder, attempt: ReplicaAttempt) -> bool:
    job = attempt.replica.job
    # A job on a full disk could not even write its log: the node is at fault, not the job.
    full = disk_full_reason(attempt.node.name, [node_root(attempt.node.name)])
    if full:
        _fail_to_prepare(attempt, full)
        return False
    folder.path.mkdir(parents=True, exist_ok=True)
    os.chmod(folder.path, 0o711)  # the job's uid may reach its command file, nothing else
    uid = sandbox.sandbox_uid(job.pk)
    mounts, missing = _mounts(attempt, uid)
    if missing:
        _fail_before_start(folder, attempt, missing)
        return False
    bwrap = sandbox.bwrap_path()
    env = _environment(attempt, mounts, folder, sandboxed=bool(bwrap), uid=uid)
    phases = [
        {"name": name, "argv": _phase_argv(folder, attempt, name, command, mounts, uid, bwrap)}
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
    }
    try:
        _write_header(folder, attempt, spec)
        folder.write("spec", spec)
    except OSError:
        limits.remove_cgroup(spec["cgroup"])
        raise
    folder.mark_active()
    with (folder.path / "runner.err").open("ab") as errors:
        subprocess.run(
            [sys.executable, "-I", "-S", str(RUNNER), str(folder.path)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errors,
            check=True,
        )
    return True


def attempt_phases(job: Job) -> list[tuple[str, str]]:
    """The phases a replica runs, in order; training always comes last.

    A phase named ``training`` marks the attempt's ``training_started_at`` when
    it begins; earlier phases (the augmentation search) are billed as well.
    """
    phases = []
    if job.augmentation_command.strip():
        phases.append((ReplicaAttempt.Phase.AUGMENTATION.value, job.augmentation_command))
    phases.append((ReplicaAttempt.Phase.TRAINING.value, job.command))
    return phases


def _phase_argv(folder, attempt, name, command, mounts, uid, bwrap) -> list[str]:
    command_file = folder.path / f"command-{name}.sh"
    command_file.write_text(command_script(command))
    if uid is not None:
        os.chown(command_file, uid, uid)
    os.chmod(command_file, 0o400)
    if not bwrap:
        return sandbox.plain_argv(command_file=command_file, uid=uid)
    return sandbox.bwrap_argv(
        bwrap=bwrap,
        mounts=mounts,
        command_file=command_file,
        uid=uid,
        tmp_bytes=attempt.replica.job.storage_gib * GIB,
        hostname=attempt.node.name,
    )


def _mounts(attempt: ReplicaAttempt, uid: int | None) -> tuple[sandbox.Mounts, list[str]]:
    job = attempt.replica.job
    root = Path(settings.TRAINYARD_DATA_ROOT)
    datasets = [
        (link.dataset.name, root / link.dataset.path)
        for link in job.jobdataset_set.select_related("dataset").order_by("position")
    ]
    pretrained = [
        (link.pretrained_model.name, root / link.pretrained_model.path)
        for link in job.jobpretrainedmodel_set.select_related("pretrained_model").order_by(
            "position"
        )
    ]
    code = [(job.code_version.name, root / job.code_version.path)] if job.code_version else []
    missing = [
        f"{name}: {path}" for name, path in [*code, *datasets, *pretrained] if not path.exists()
    ]
    output = replica_output_dir(attempt.node.name, job.pk, attempt.replica.index)
    _make_output(output, uid)
    mounts = sandbox.Mounts(
        code=code[0][1] if code else None,
        output=output,
        datasets=[path for _name, path in datasets],
        pretrained=[path for _name, path in pretrained],
        read_only_extra=sandbox.python_environment_paths(),
    )
    return mounts, missing


def _make_output(output: Path, uid: int | None) -> None:
    """The output folder belongs to the job's uid; its parents only let it pass through."""
    output.mkdir(parents=True, exist_ok=True)
    for parent in list(output.parents)[:4]:
        os.chmod(parent, 0o711)
    if uid is not None:
        os.chown(output, uid, uid)
    os.chmod(output, 0o700)


def _environment(attempt, mounts, folder, *, sandboxed, uid) -> dict[str, str]:
    job = attempt.replica.job
    paths = None if sandboxed else _plain_paths(folder, mounts, uid)
    env = job_environment(environment_input_for_job(job), _placement(attempt), paths)
    tmp = "/tmp" if sandboxed else str(folder.path / "tmp")
    return {
        "PATH": sandbox.job_path_variable(),
        "HOME": tmp,
        "TMPDIR": tmp,
        "LANG": "C.UTF-8",
        **env,
    }


def _plain_paths(folder: AttemptFolder, mounts: sandbox.Mounts, uid: int | None) -> JobPaths:
    """Without a sandbox the same names point at real folders, through links in ``mounts/``."""
    links = folder.path / "mounts"
    links.mkdir(exist_ok=True)
    os.chmod(links, 0o755)
    targets = {"code": mounts.code, "output": mounts.output}
    targets.update({f"data-{i}": p for i, p in enumerate(mounts.datasets, start=1)})
    targets.update({f"pretrained-{i}": p for i, p in enumerate(mounts.pretrained, start=1)})
    for name, target in targets.items():
        if target is not None and not (links / name).is_symlink():
            (links / name).symlink_to(target)
    tmp = folder.path / "tmp"
    tmp.mkdir(exist_ok=True)
    if uid is not None:
        os.chown(tmp, uid, uid)
    os.chmod(tmp, 0o700)
    return JobPaths(code=str(links / "code"), output=str(mounts.output), data_root=str(links))


def _placement(attempt: ReplicaAttempt) -> ReplicaPlacement:
    replica = attempt.replica
    job = replica.job
    host_ports = dict(
        PortAllocation.objects.filter(replica=replica, job_port__isnull=False).values_list(
            "job_port", "host_port"
        )
    )
    rendezvous = (
        PortAllocation.objects.filter(replica__job=job, replica__index=0, job_port__isnull=True)
        .select_related("replica__node")
        .first()
    )
    master = job.replica_set.filter(index=0).select_related("node").first()
    return ReplicaPlacement(
        index=replica.index,
        attempt=attempt.number,
        card_indices=list(replica.card_indices or []),
        host_ports=host_ports,
        master_addr=master.node.address if master and master.node else None,
        master_port=rendezvous.host_port if rendezvous else None,
    )


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


def _write_header(folder: AttemptFolder, attempt: ReplicaAttempt, spec: dict) -> None:
    job = attempt.replica.job
    isolation = "bubblewrap sandbox" if spec["sandboxed"] else "plain process (no bwrap)"
    memory = limits.cgroup_label(spec["cgroup"])
    processes = spec["max_processes"] if spec["uid"] is not None else "not limited"
    lines = [
        f"[trainyard] job {job.pk} replica {attempt.replica.index} attempt {attempt.number} "
        f"on node {attempt.node.name}",
        f"[trainyard] {isolation}, uid {spec['uid'] if spec['uid'] is not None else os.getuid()}, "
        f"memory limit {job.memory_mib} MiB ({memory}), processes {processes}, "
        f"cpus {spec['cpus'] or 'not pinned'}",
    ]
    with folder.log.open("a") as log:
        log.write("\n".join(lines) + "\n")
    os.chmod(folder.log, 0o600)


def _fail_before_start(folder: AttemptFolder, attempt: ReplicaAttempt, missing: list[str]) -> None:
    message = _("Missing on the node: %(items)s") % {"items": "; ".join(missing)}
    with folder.log.open("a") as log:
        log.write(f"[trainyard] {message}\n")
    attempt_ended(
        attempt_id=attempt.pk,
        state=ReplicaAttempt.State.FAILED,
        ended_at=timezone.now(),
        reason=message,
    )


def _fail_to_prepare(attempt: ReplicaAttempt, reason: str) -> None:
    """The node, not the job, is at fault: the job is placed again (see ``settle.py``)."""
    attempt_ended(
        attempt_id=attempt.pk,
        state=ReplicaAttempt.State.FAILED,
        ended_at=timezone.now(),
        reason=reason,
        platform_fault=True,
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
