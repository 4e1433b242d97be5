"""What the waiting person sees: reason, queue position and estimated start."""

from datetime import timedelta

import pytest
from django.urls import reverse

from jobs.models import Job
from jobs.scheduler import run_pass
from tests.factories import GpuModelFactory, JobFactory, NodeFactory
from tests.scheduling import fresh, run_job

pytestmark = pytest.mark.django_db


@pytest.fixture
def waiting(owner, project):
    v100 = GpuModelFactory(name="V100")
    NodeFactory(gpu_model=v100)
    holder = JobFactory(
        owner=owner, project=project, gpu_model=v100, gpu_count=8, max_runtime_minutes=60
    )
    run_pass()
    run_job(holder)
    job = JobFactory(owner=owner, project=project, gpu_model=v100, gpu_count=8)
    run_pass()
    return fresh(job)


def test_the_job_list_shows_why_a_job_waits_its_place_and_its_latest_start(owner_client, waiting):
    assert waiting.state == Job.State.RESOURCE_WAIT
    assert waiting.estimated_start is not None

    page = owner_client.get(reverse("jobs:list")).content.decode()

    assert "needs a node with 8 free V100 cards; none has them" in page
    assert "#1 in its queue" in page
    assert "expected start" in page


def test_the_api_gives_reason_position_and_estimated_start(owner_client, waiting):
    data = owner_client.get(f"/api/v1/jobs/{waiting.pk}").json()

    assert data["state"] == "resource_wait"
    assert data["state_reason"] == waiting.state_reason
    assert data["queue_position"] == 1
    holder_end = Job.objects.exclude(pk=waiting.pk).get().started_at + timedelta(minutes=60)
    assert data["estimated_start"].startswith(holder_end.replace(microsecond=0).isoformat()[:19])


def test_the_job_list_shows_why_a_job_inside_slurm_waits_there(owner_client, owner, project):
    """Starting, inside Slurm's queue: Slurm's reason, place and estimate, as for a job
    waiting in Trainyard's (its page has them already)."""
    job = JobFactory(owner=owner, project=project, state=Job.State.STARTING)
    slurm_start = fresh(job).submitted_at + timedelta(minutes=19)
    Job.objects.filter(pk=job.pk).update(
        state_reason="Slurm job 4367 is waiting in Slurm's queue: the resources it needs "
        "are in use by other Slurm jobs.",
        queue_position=1,
        estimated_start=slurm_start,
    )

    page = owner_client.get(reverse("jobs:list")).content.decode()

    assert "the resources it needs are in use by other Slurm jobs" in page
    assert "#1 in its queue" in page and "expected start" in page
