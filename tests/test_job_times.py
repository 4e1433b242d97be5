"""The job page's time panel: both phases of each attempt, the estimate, the likely finish."""

from datetime import timedelta

import pytest
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from jobs.estimates.job_times import job_times
from jobs.models import Job, JobDataset, Replica, ReplicaAttempt
from tests.estimates_support import finished_run, seed_models_and_templates
from tests.factories import DatasetFactory, JobFactory, NodeFactory

pytestmark = pytest.mark.django_db


def resnet_job(models, templates, **fields) -> Job:
    job = JobFactory(template=templates["ResNet50"], gpu_model=models["V100"], **fields)
    dataset = DatasetFactory(project=job.project, size_samples=6000)
    JobDataset.objects.create(job=job, dataset=dataset, position=1)
    return job


def test_finished_job_shows_both_phases_of_each_attempt(django_assert_max_num_queries):
    models, templates = seed_models_and_templates()
    job = finished_run(
        template=templates["ResNet50"],
        gpu_model=models["V100"],
        training_seconds=600,
        augmentation_seconds=1200,
    )
    with django_assert_max_num_queries(2):
        times = job_times(job=job)
    (row,) = times.attempts
    assert (row.augmentation_seconds, row.training_seconds) == (1200, 600)
    assert times.estimate is None and times.likely_finish is None
    html = render_to_string("jobs/_job_times.html", {"job": job, "times": times})
    assert "Augmentation search" in html and "20 min" in html and "10 min" in html


def test_running_job_likely_finishes_at_its_start_plus_the_estimate():
    models, templates = seed_models_and_templates()
    job = resnet_job(models, templates, state=Job.State.RUNNING, attempt=1)
    started = timezone.now() - timedelta(minutes=2)
    node = NodeFactory(gpu_model=models["V100"])
    replica = Replica.objects.create(job=job, index=0, node=node)
    ReplicaAttempt.objects.create(
        replica=replica,
        number=1,
        node=node,
        state="running",
        started_at=started,
        training_started_at=started,
    )
    times = job_times(job=job)
    assert times.estimate.seconds == pytest.approx(400)
    assert times.likely_finish == started + timedelta(seconds=times.estimate.seconds)
    assert times.attempts[0].training_seconds == pytest.approx(120, abs=5)
    assert times.attempts[0].augmentation_seconds is None


def test_attempt_still_searching_has_no_training_time_yet():
    models, templates = seed_models_and_templates()
    job = resnet_job(
        models, templates, state=Job.State.RUNNING, attempt=1, augmentation_command="search"
    )
    node = NodeFactory(gpu_model=models["V100"])
    replica = Replica.objects.create(job=job, index=0, node=node)
    ReplicaAttempt.objects.create(
        replica=replica,
        number=1,
        node=node,
        state="running",
        phase="augmentation",
        started_at=timezone.now() - timedelta(seconds=90),
    )
    (row,) = job_times(job=job).attempts
    assert row.searching
    assert row.training_seconds is None
    assert row.augmentation_seconds == pytest.approx(90, abs=5)


def test_waiting_job_likely_finishes_its_expected_duration_after_its_expected_start():
    models, templates = seed_models_and_templates()
    expected = timezone.now() + timedelta(minutes=20)
    job = resnet_job(models, templates, state=Job.State.RESOURCE_WAIT, estimated_start=expected)
    times = job_times(job=job)
    assert times.likely_finish == expected + timedelta(seconds=400)
    html = render_to_string("jobs/_job_times.html", {"job": job, "times": times})
    # The expected start itself is the state card's, as on the list: one label, one value.
    assert "Likely finish" in html and "Likely start" not in html


def test_job_page_shows_the_phases_and_the_commands(client):
    models, templates = seed_models_and_templates()
    job = finished_run(
        template=templates["SSD-MobileNetV1"],
        gpu_model=models["V100"],
        training_seconds=600,
        augmentation_seconds=1200,
    )
    client.force_login(job.owner)
    response = client.get(reverse("jobs:detail", args=[job.pk]))
    html = response.content.decode()
    assert response.status_code == 200
    assert "Augmentation search" in html and "20 min" in html and "10 min" in html
    assert "Augmentation-search command" in html and "python augment.py" in html
    assert "Workload template: SSD-MobileNetV1" in html


def test_queued_job_page_shows_its_likely_finish(client):
    models, templates = seed_models_and_templates()
    bound = timezone.now() + timedelta(hours=1)
    job = resnet_job(models, templates, state=Job.State.RESOURCE_WAIT, estimated_start=bound)
    client.force_login(job.owner)
    html = client.get(reverse("jobs:detail", args=[job.pk])).content.decode()
    assert "Likely finish" in html and "Expected duration" in html and "7 min" in html
