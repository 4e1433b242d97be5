"""The environment variables every replica gets; the form's panel shows the same.

One builder serves the executors (with a real placement) and the job form
(without one: values only known at start are shown as placeholders).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.utils.translation import gettext as _

from resources.models import SiteSettings

from .port_sites import PortSite

SANDBOX_ROOT = "/trainyard"
# The placeholder in the builder's result; pages show ``unknown_value()`` in its place.
UNKNOWN = "<assigned at start>"


def unknown_value():
    """The placeholder as the reader reads it."""
    return _("<assigned at start>")


def shown_environment(env: dict[str, str]) -> dict[str, str]:
    """``env`` for a page: placeholders in the reader's language."""
    return {name: unknown_value() if value == UNKNOWN else value for name, value in env.items()}


@dataclass(frozen=True)
class JobPaths:
    """Where the replica sees its inputs and outputs (inside the sandbox by default)."""

    code: str = f"{SANDBOX_ROOT}/code"
    output: str = f"{SANDBOX_ROOT}/output"
    checkpoint: str = f"{SANDBOX_ROOT}/checkpoint"
    data_root: str = SANDBOX_ROOT

    def dataset(self, position: int) -> str:
        return f"{self.data_root}/data-{position}"

    def pretrained(self, position: int) -> str:
        return f"{self.data_root}/pretrained-{position}"


@dataclass(frozen=True)
class ReplicaPlacement:
    """What is known once a replica attempt is placed on a node."""

    index: int
    attempt: int
    card_indices: list[int] = field(default_factory=list)
    host_ports: dict[int, int] = field(default_factory=dict)  # job port → host port
    master_addr: str | None = None
    master_port: int | None = None
    deadline_epoch: int | None = None


@dataclass(frozen=True)
class EnvironmentInput:
    """The parts of a job the environment depends on (also for an unsaved form)."""

    job_id: int | None
    replicas: int
    distributed: bool
    kind: str
    gpu_count: int
    card_memory_mib: int | None = None
    vgpu_compute_percent: int | None = None
    vgpu_memory_mib: int | None = None
    dataset_count: int = 0
    pretrained_count: int = 0
    ports: tuple[int, ...] = ()
    # A preemptible job's time between TERM and KILL when preempted (the site's setting).
    preempt_grace_seconds: int | None = None


def job_environment(
    spec: EnvironmentInput, placement: ReplicaPlacement | None = None, paths: JobPaths | None = None
) -> dict[str, str]:
    """Every variable a replica gets, in a stable order."""
    paths = paths or JobPaths()
    known = placement is not None
    env: dict[str, str] = {
        "TRAINYARD_JOB_ID": str(spec.job_id) if spec.job_id else UNKNOWN,
        "TRAINYARD_REPLICA": str(placement.index) if known else "0",
        "TRAINYARD_ATTEMPT": str(placement.attempt) if known else "1",
        "TRAINYARD_DEADLINE": _deadline(placement),
        "TRAINYARD_CODE": paths.code,
        "TRAINYARD_DATA_OUT": paths.output,
        "TRAINYARD_CHECKPOINT": paths.checkpoint,
    }
    if spec.preempt_grace_seconds is not None:
        env["TRAINYARD_PREEMPT_GRACE"] = str(spec.preempt_grace_seconds)
    for position in range(1, spec.dataset_count + 1):
        env[f"TRAINYARD_DATA_IN{position}"] = paths.dataset(position)
    for position in range(1, spec.pretrained_count + 1):
        env[f"TRAINYARD_PRETRAINED{position}"] = paths.pretrained(position)
    for port in spec.ports:
        host_port = placement.host_ports.get(port) if known else None
        env[f"TRAINYARD_PORT_{port}"] = str(host_port) if host_port else UNKNOWN
    if not known or placement.index == 0:  # the proxy serves replica 0's ports
        for port in spec.ports:
            site = PortSite(spec.job_id, port) if spec.job_id else None
            env[f"TRAINYARD_PORT_URL_{port}"] = site.url if site else UNKNOWN
    env.update(_gpu_variables(spec, placement))
    if spec.distributed:
        env.update(_rendezvous_variables(spec, placement))
    return env


def _deadline(placement: ReplicaPlacement | None) -> str:
    if placement is None:
        return UNKNOWN
    return str(placement.deadline_epoch) if placement.deadline_epoch else ""


def _gpu_variables(spec: EnvironmentInput, placement: ReplicaPlacement | None) -> dict[str, str]:
    if spec.kind == "cpu":
        return {"CUDA_VISIBLE_DEVICES": ""}
    cards = placement.card_indices if placement is not None else list(range(spec.gpu_count))
    env = {"CUDA_VISIBLE_DEVICES": ",".join(str(i) for i in cards)}
    if spec.kind == "vgpu":
        env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = str(spec.vgpu_compute_percent)
        limit_mib = spec.vgpu_memory_mib or 0
        # MPS numbers devices as the process sees them (0..n-1 after CUDA_VISIBLE_DEVICES).
        env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = ",".join(
            f"{visible}={limit_mib}M" for visible in range(len(cards))
        )
    return env


def _rendezvous_variables(
    spec: EnvironmentInput, placement: ReplicaPlacement | None
) -> dict[str, str]:
    rank = str(placement.index) if placement is not None else UNKNOWN
    master_addr = placement.master_addr if placement and placement.master_addr else UNKNOWN
    master_port = placement.master_port if placement and placement.master_port else UNKNOWN
    # One process per replica by default, so plain init_process_group() works;
    # torchrun --nnodes=$NNODES --node_rank=$NODE_RANK sets its own per-process values.
    return {
        "MASTER_ADDR": master_addr,
        "MASTER_PORT": str(master_port),
        "NNODES": str(spec.replicas),
        "NODE_RANK": rank,
        "RANK": rank,
        "WORLD_SIZE": str(spec.replicas),
        "LOCAL_RANK": "0",
        "LOCAL_WORLD_SIZE": "1",
    }


def environment_input_for_job(job) -> EnvironmentInput:
    """The environment input of a saved job."""
    return EnvironmentInput(
        job_id=job.pk,
        replicas=job.replicas,
        distributed=job.task_mode == "distributed",
        kind=job.resource_kind,
        gpu_count=job.gpu_count,
        card_memory_mib=job.gpu_model.card_memory_mib if job.gpu_model_id else None,
        vgpu_compute_percent=job.vgpu_compute_percent,
        vgpu_memory_mib=job.vgpu_memory_mib,
        dataset_count=job.jobdataset_set.count(),
        pretrained_count=job.jobpretrainedmodel_set.count(),
        ports=tuple(port.port for port in job.ports.all()),
        preempt_grace_seconds=SiteSettings.load().preempt_grace_seconds
        if job.preemptible
        else None,
    )
