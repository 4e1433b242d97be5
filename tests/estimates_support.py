"""Rows the estimate tests share: the seed's GPU models and templates, finished runs."""

from datetime import timedelta

from django.utils import timezone

from jobs.estimates.seed import seed_templates
from jobs.models import Job, JobDataset, Replica, ReplicaAttempt, WorkloadTemplate
from resources.models import GpuModel
from tests.factories import DatasetFactory, GpuModelFactory, JobFactory, NodeFactory

SPEEDS = {"V100": 2.3, "P40": 1.4, "P4": 1.0}


def seed_models_and_templates() -> tuple[dict[str, GpuModel], dict[str, WorkloadTemplate]]:
    models = {
        "V100": GpuModelFactory(name="V100", relative_speed=2.3),
        "P40": GpuModelFactory(name="P40", card_memory_gib=24, relative_speed=1.4),
        "P4": GpuModelFactory(name="P4", card_memory_gib=8, relative_speed=1.0, free_tier=True),
    }
    return models, seed_templates()


def finished_run(
    *,
    template: WorkloadTemplate | None,
    gpu_model: GpuModel,
    training_seconds: float,
    samples: int = 6000,
    replicas: int = 1,
    gpu_count: int = 1,
    augmentation_seconds: float = 0.0,
    owner=None,
    command: str = "python train.py",
    finished_ago: timedelta = timedelta(hours=1),
) -> Job:
    """A succeeded job with one attempt per replica that took these phase times."""
    ended = timezone.now() - finished_ago
    training_started = ended - timedelta(seconds=training_seconds)
    started = training_started - timedelta(seconds=augmentation_seconds)
    extra = {"owner": owner} if owner else {}
    job = JobFactory(
        template=template,
        gpu_model=gpu_model,
        gpu_count=gpu_count,
        replicas=replicas,
        task_mode="distributed" if replicas > 1 else "single",
        command=command,
        augmentation_command="python augment.py" if augmentation_seconds else "",
        state=Job.State.SUCCEEDED,
        attempt=1,
        started_at=started,
        finished_at=ended,
        **extra,
    )
    dataset = DatasetFactory(project=job.project, size_samples=samples)
    JobDataset.objects.create(job=job, dataset=dataset, position=1)
    for index in range(replicas):
        node = NodeFactory(gpu_model=gpu_model)
        replica = Replica.objects.create(job=job, index=index, node=node)
        ReplicaAttempt.objects.create(
            replica=replica,
            number=1,
            node=node,
            state=ReplicaAttempt.State.SUCCEEDED,
            started_at=started,
            training_started_at=training_started,
            ended_at=ended,
            exit_code=0,
        )
    return job
