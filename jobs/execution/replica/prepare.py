"""Preparing a replica attempt on its node, for every executor alike.

The local agent and the Slurm replica script run a replica the same way: the
same folders (``files.py``), mounts, environment, phases and command scripts,
and the same sandbox (``sandbox.py``) in the same kind of network namespace
(``network.py``). What differs is who starts the phases: the agent's runner,
or the script Slurm runs.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from django.conf import settings
from django.db.models import Prefetch, prefetch_related_objects
from django.utils import timezone

from core.reasons import Reason
from jobs.environment import (
    JobPaths,
    ReplicaPlacement,
    environment_input_for_job,
    job_environment,
)
from jobs.execution.files import (
    checkpoint_marks_dir,
    checkpoint_root,
    replica_checkpoint_dir,
    replica_output_dir,
    storage_name,
)
from jobs.execution.report import attempt_ended, job_start_waits
from jobs.models import Job, JobDataset, JobPretrainedModel, PortAllocation, ReplicaAttempt

from . import limits, network, sandbox
from .checkpoint import checkpoint_mark, checkpoint_prepare
from .folder import AttemptFolder
from .gpu_driver import gpu_driver_files
from .image_cache import CachedImage
from .image_error import ImageError
from .image_root import attempt_image_prepare, image_environment, image_name
from .script import command_script

GIB = 1024 * 1024 * 1024


def attempt_refusal(attempt: ReplicaAttempt, folder: AttemptFolder) -> Reason | str | None:
    """Why this attempt must not start (superseded, stopped), "" if it ended, or None."""
    job = attempt.replica.job
    if attempt.state != ReplicaAttempt.State.PENDING:
        return ""
    if job.stop_requested_at or folder.exists("stop"):
        return Reason("stopped.unstarted")
    if attempt.number != job.attempt or job.state not in Job.ACTIVE_STATES:
        return Reason("superseded")
    return None


def end_unstarted(attempt: ReplicaAttempt, reason: Reason | str) -> None:
    if reason:
        attempt_ended(
            attempt_id=attempt.pk,
            state=ReplicaAttempt.State.STOPPED,
            ended_at=timezone.now(),
            reason=reason,
        )


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


def phase_argv(
    folder, attempt, name, command, mounts, uid, bwrap, replica_network=None
) -> list[str]:
    """The phase's command line: in bwrap (in the replica's namespace) or a plain process."""
    command_file = write_command_file(folder, name, command, uid)
    if not bwrap:
        return sandbox.plain_argv(command_file=command_file, uid=uid)
    enter = network.enter_argv(replica_network) if replica_network else []
    return enter + sandbox.bwrap_argv(
        bwrap=bwrap,
        mounts=mounts,
        command_file=command_file,
        uid=uid,
        tmp_bytes=attempt.replica.job.storage_gib * GIB,
        hostname=attempt.node.name,
    )


def write_command_file(folder: AttemptFolder, name: str, command: str, uid: int | None) -> Path:
    """The phase's command script, readable by the job's uid only (root's until it has one)."""
    command_file = folder.path / f"command-{name}.sh"
    command_file.write_text(command_script(command))
    if uid is not None:
        os.chown(command_file, uid, uid)
    os.chmod(command_file, 0o400)
    return command_file


# What a replica's plan reads of its job (inputs, ports asked for) and of its replica
# (host ports held): one query each for a whole batch of attempts, then none per attempt.
_JOB_INPUTS = (
    Prefetch("jobdataset_set", queryset=JobDataset.objects.select_related("dataset")),
    Prefetch(
        "jobpretrainedmodel_set",
        queryset=JobPretrainedModel.objects.select_related("pretrained_model"),
    ),
    "ports",
)


def prefetch_plan_inputs(attempts: list[ReplicaAttempt]) -> None:
    """Read what the attempts' plans read, once for them all (already read: nothing).

    The rows come in their models' order (position; port), as the plan reads them."""
    prefetch_related_objects([a.replica.job for a in attempts], *_JOB_INPUTS)
    _prefetch_held_ports(attempts)


def _prefetch_held_ports(attempts: list[ReplicaAttempt]) -> None:
    prefetch_related_objects([a.replica for a in attempts], "ports")


def published_ports(attempt: ReplicaAttempt) -> dict[int, int]:
    """Host port → port inside: the job's open ports, and the rendezvous port as itself."""
    _prefetch_held_ports([attempt])  # read here once: the placement reads them again
    return {held.host_port: held.job_port or held.host_port for held in attempt.replica.ports.all()}


def replica_mounts(attempt: ReplicaAttempt, uid: int | None) -> tuple[sandbox.Mounts, list[str]]:
    prefetch_plan_inputs([attempt])
    job = attempt.replica.job
    root = Path(settings.TRAINYARD_DATA_ROOT)
    datasets = [(link.dataset.name, root / link.dataset.path) for link in job.jobdataset_set.all()]
    pretrained = [
        (link.pretrained_model.name, root / link.pretrained_model.path)
        for link in job.jobpretrainedmodel_set.all()
    ]
    code = [(job.code_version.name, root / job.code_version.path)] if job.code_version else []
    missing = [
        f"{name}: {path}" for name, path in [*code, *datasets, *pretrained] if not path.exists()
    ]
    output = replica_output_dir(storage_name(attempt.node), job.pk, attempt.replica.index)
    _make_output(output, uid)
    mounts = sandbox.Mounts(
        code=code[0][1] if code else None,
        output=output,
        checkpoint=make_checkpoint(attempt, uid),
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


def make_checkpoint(attempt: ReplicaAttempt, uid: int | None) -> Path:
    """The replica's checkpoint folder, noted for removal and handed to this attempt's uid."""
    node, job_id, index = storage_name(attempt.node), attempt.replica.job_id, attempt.replica.index
    checkpoint_mark(checkpoint_marks_dir(node), job_id=job_id, replica_index=index)
    path = replica_checkpoint_dir(node, job_id, index)
    checkpoint_prepare(path, base=checkpoint_root(node), uid=uid)
    return path


def replica_environment(
    attempt, mounts, folder, *, sandboxed, uid, networked: bool = False, image_env=None
) -> dict[str, str]:
    """The replica's variables; ``networked``: it runs in a job network of its own.

    In an image (``image_env``, its ``Env``) the image's variables come first and
    the job's own and the platform's override them; on the host, the agent's Python.
    """
    job = attempt.replica.job
    paths = None if sandboxed else _plain_paths(folder, mounts, uid)
    placement = replica_placement(attempt, networked=networked)
    env = job_environment(environment_input_for_job(job), placement, paths)
    if image_env is not None:
        image = image_environment(image_env, gpu_driver=bool(mounts.gpu_driver or job.gpu_count))
        env = {"HOME": "/root", "LANG": "C.UTF-8", **image, "TMPDIR": "/tmp", **env}
    else:
        tmp = "/tmp" if sandboxed else str(folder.path / "tmp")
        env = {
            "PATH": sandbox.job_path_variable(),
            "HOME": tmp,
            "TMPDIR": tmp,
            "LANG": "C.UTF-8",
            **env,
        }
    if networked and "MASTER_ADDR" in env:
        # Collective libraries find their own address on the namespace's one interface.
        env |= {
            "GLOO_SOCKET_IFNAME": network.INSIDE_DEVICE,
            "NCCL_SOCKET_IFNAME": network.INSIDE_DEVICE,
        }
    return env


def _plain_paths(folder: AttemptFolder, mounts: sandbox.Mounts, uid: int | None) -> JobPaths:
    """Without a sandbox the same names point at real folders, through links in ``mounts/``."""
    links = folder.path / "mounts"
    links.mkdir(exist_ok=True)
    os.chmod(links, 0o755)
    targets = {"code": mounts.code, "output": mounts.output, "checkpoint": mounts.checkpoint}
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
    return JobPaths(
        code=str(links / "code"),
        output=str(mounts.output),
        checkpoint=str(mounts.checkpoint),
        data_root=str(links),
    )


def replica_placement(attempt: ReplicaAttempt, *, networked: bool = False) -> ReplicaPlacement:
    replica = attempt.replica
    job = replica.job
    held = replica.ports.all()  # prefetched for a plan (``prefetch_plan_inputs``)
    host_ports = {port.job_port: port.host_port for port in held if port.job_port is not None}
    master_addr = master_port = None
    if job.task_mode == Job.TaskMode.DISTRIBUTED:  # a rendezvous only among replicas
        master_port = (
            PortAllocation.objects.filter(replica__job=job, replica__index=0, job_port__isnull=True)
            .values_list("host_port", flat=True)
            .first()
        )
        master = job.replica_set.filter(index=0).select_related("node").first()
        master_addr = master.node.address if master and master.node else None
        if networked and master_addr:
            master_addr = network.reachable_address(master_addr)
    return ReplicaPlacement(
        index=replica.index,
        attempt=attempt.number,
        card_indices=list(replica.card_indices or []),
        host_ports=host_ports,
        master_addr=master_addr,
        master_port=master_port,
    )


def write_header(folder: AttemptFolder, attempt: ReplicaAttempt, spec: dict) -> None:
    job = attempt.replica.job
    if spec.get("network"):
        isolation = f"bubblewrap sandbox, own network {spec['network']['address']}"
    elif spec["sandboxed"]:
        isolation = "UNSAFE: bubblewrap sandbox on the host's network"
    else:
        isolation = "UNSAFE: plain process (no bwrap, no own network)"
    memory = limits.cgroup_label(spec["cgroup"])
    processes = spec["max_processes"] if spec["uid"] is not None else "not limited"
    lines = [
        f"[trainyard] job {job.pk} replica {attempt.replica.index} attempt {attempt.number} "
        f"on node {attempt.node.name}",
        f"[trainyard] {isolation}, uid {spec['uid'] if spec['uid'] is not None else os.getuid()}, "
        f"memory limit {job.memory_mib} MiB ({memory}), processes {processes}, "
        f"cpus {spec['cpus'] or 'not pinned'}",
        f"[trainyard] {root_label(job, spec)}",
    ]
    with folder.log.open("a") as log:
        log.write("\n".join(lines) + "\n")
    os.chmod(folder.log, 0o600)


def root_label(job: Job, spec: dict) -> str:
    """What the replica's ``/`` is, for its log: its image, or the node's own system."""
    if spec.get("image"):
        return f"image {image_name(job)} ({job.image_digest[:19]}…) as /"
    if job.image_digest:
        return (
            f"the node's own system as /: image {image_name(job)} needs the sandbox, "
            "which this node does not run"
        )
    return "the node's own system as / (no image)"


def fail_missing_inputs(folder: AttemptFolder, attempt: ReplicaAttempt, missing: list[str]) -> None:
    message = Reason("missing", {"items": "; ".join(missing)})
    with folder.log.open("a") as log:
        log.write(f"[trainyard] {message.english}\n")
    attempt_ended(
        attempt_id=attempt.pk,
        state=ReplicaAttempt.State.FAILED,
        ended_at=timezone.now(),
        reason=message,
    )


def fail_to_prepare(attempt: ReplicaAttempt, reason: Reason) -> None:
    """The node, not the job, is at fault: the job is placed again (see ``settle.py``)."""
    attempt_ended(
        attempt_id=attempt.pk,
        state=ReplicaAttempt.State.FAILED,
        ended_at=timezone.now(),
        reason=reason,
        platform_fault=True,
    )


# How often a long unpack updates the job's reason (each update is an event on its page).
IMAGE_PROGRESS_SECONDS = 10.0
MB = 1000 * 1000


def prepare_image(attempt: ReplicaAttempt, mounts: sandbox.Mounts) -> CachedImage | None:
    """The job's image ready in this node's cache, as the sandbox's root; None: the host's.

    Raises ``ImageError``; the job's reason says "Preparing image …" while it unpacks.
    """
    job = attempt.replica.job
    if not job.image_digest:
        return None
    name = image_name(job)
    last = [0.0]

    def progress(done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] >= IMAGE_PROGRESS_SECONDS:
            last[0] = now
            params = {"image": name, "done": done // MB, "total": max(1, total // MB)}
            job_start_waits(
                job=Job.objects.get(pk=job.pk), reason=Reason("image.preparing", params)
            )

    image = attempt_image_prepare(digest=job.image_digest, attempt_id=attempt.pk, progress=progress)
    mounts.image_root = image.rootfs
    mounts.read_only_extra = []  # the image's own Python, not the agent's
    mounts.gpu_driver = gpu_driver_files()
    return image


def fail_image(attempt: ReplicaAttempt, error: ImageError) -> None:
    """A broken image fails the job at once (no retry can help); a node's fault re-places it."""
    name = image_name(attempt.replica.job)
    if error.node_fault:
        reason = Reason(
            "image.node", {"node": attempt.node.name, "image": name, "error": str(error)}
        )
        fail_to_prepare(attempt, reason)
        return
    attempt_ended(
        attempt_id=attempt.pk,
        state=ReplicaAttempt.State.FAILED,
        ended_at=timezone.now(),
        reason=Reason("image.broken", {"image": name, "error": str(error)}),
    )
