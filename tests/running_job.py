"""A job running on a node with open ports and a long log, as the agent leaves it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.utils import timezone

from jobs.execution.files import attempt_log_path
from jobs.models import Job, JobPort, PortAllocation, Replica, ReplicaAttempt
from tests.agent_support import make_node
from tests.factories import JobFactory

# 500 lines; line 7 (outside the last 200) and line 450 name the needle; line 499 is long.
LONG_LINE = "epoch 9 " + "loss=0.125 " * 60 + "END-OF-LONG-LINE"
LOG = "".join(
    f"line {i}{' needle' if i in (7, 450) else ''}\n" if i != 499 else LONG_LINE + "\n"
    for i in range(1, 501)
)


@dataclass
class Running:
    job: Job
    attempt: ReplicaAttempt
    host: str
    deadline_epoch: int


def running_job(*, owner, project, state: str = Job.State.RUNNING) -> Running:
    """Replica 0 runs on ``gpu-a`` (10.0.0.5); job port 8080 is published on host port 40123."""
    node = make_node(name="gpu-a", address="10.0.0.5")
    job = JobFactory(
        owner=owner,
        project=project,
        name="resnet",
        state=state,
        attempt=1,
        gpu_model=None,
        gpu_count=0,
        resource_kind="cpu",
        cpu_milli=1000,
        max_runtime_minutes=240,
        started_at=timezone.now() - timedelta(minutes=3),
    )
    JobPort.objects.create(job=job, port=8080)
    replica = Replica.objects.create(job=job, index=0, node=node)
    deadline = timezone.now().replace(microsecond=0) + timedelta(hours=4)
    finished = state in (Job.State.SUCCEEDED, Job.State.FAILED)
    attempt = ReplicaAttempt.objects.create(
        replica=replica,
        number=1,
        node=node,
        state="succeeded" if finished else "running",
        started_at=job.started_at,
        training_started_at=job.started_at,
        deadline=deadline,
        ended_at=timezone.now() if finished else None,
        exit_code=0 if finished else None,
    )
    if not finished:
        PortAllocation.objects.create(replica=replica, job_port=8080, host_port=40123)
    path = attempt_log_path(node.name, attempt.pk)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(LOG)
    return Running(job, attempt, node.address, int(deadline.timestamp()))
