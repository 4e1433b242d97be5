"""Likely start of a waiting job: the scheduler's replay with the estimator's ends."""

from datetime import timedelta

import pytest
from django.urls import reverse

from jobs.estimates.start import likely_start
from jobs.models import Job, JobDataset
from jobs.scheduler import run_pass
from tests.estimates_support import seed_models_and_templates
from tests.factories import DatasetFactory, JobFactory, NodeFactory
from tests.scheduling import fresh, run_job

pytestmark = pytest.mark.django_db


@pytest.fixture
def site():
    models, templates = seed_models_and_templates()
    NodeFactory(gpu_model=models["V100"], gpu_count=1)
    return models, templates


def resnet_job(site, **fields) -> Job:
    models, templates = site
    job = JobFactory(
        template=templates["ResNet50"], gpu_model=models["V100"], max_runtime_minutes=60, **fields
    )
    JobDataset.objects.create(
        job=job, dataset=DatasetFactory(project=job.project, size_samples=6000), position=1
    )
    return job


def test_waiting_job_likely_starts_when_the_running_job_likely_ends(
    site, django_assert_max_num_queries
):
    holder = resnet_job(site)
    run_pass()
    holder = run_job(holder, started_minutes_ago=2)
    first, second = resnet_job(site), resnet_job(site)
    run_pass()
    first, second = fresh(first), fresh(second)
    assert first.state == second.state == Job.State.RESOURCE_WAIT
    # The scheduler's upper bound: the holder runs its whole hour.
    assert first.estimated_start == (holder.started_at + timedelta(minutes=60)).replace(
        microsecond=0
    )

    with django_assert_max_num_queries(18):
        likely_first = likely_start(job=first)
    # The measured 400 s on one V100, then 7 whole minutes for the first in line.
    assert likely_first == holder.started_at + timedelta(seconds=400)
    assert likely_start(job=second) == likely_first + timedelta(minutes=7)
    assert likely_first < first.estimated_start


def test_a_running_job_without_an_estimate_keeps_its_max_run_time(site):
    models, _templates = site
    holder = JobFactory(gpu_model=models["V100"], max_runtime_minutes=30, command="python x.py")
    run_pass()
    holder = run_job(holder, started_minutes_ago=1)
    waiter = resnet_job(site)
    run_pass()
    assert likely_start(job=fresh(waiter)) == holder.started_at + timedelta(minutes=30)


def test_a_job_that_overran_its_estimate_is_expected_to_end_now(site):
    holder = resnet_job(site)
    run_pass()
    holder = run_job(holder, started_minutes_ago=30)  # 400 s expected
    waiter = resnet_job(site)
    run_pass()
    start = likely_start(job=fresh(waiter))
    assert (
        holder.started_at + timedelta(minutes=29)
        < start
        < holder.started_at + timedelta(minutes=31)
    )


def test_only_jobs_waiting_for_resources_get_a_likely_start(site):
    job = resnet_job(site, state=Job.State.QUOTA_WAIT)
    assert likely_start(job=job) is None


def test_the_job_page_shows_likely_start_beside_the_upper_bound(site, client):
    holder = resnet_job(site)
    run_pass()
    run_job(holder, started_minutes_ago=2)
    waiter = resnet_job(site)
    run_pass()
    client.force_login(waiter.owner)
    html = client.get(reverse("jobs:detail", args=[waiter.pk])).content.decode()
    assert "Likely start" in html and "at the latest" in html


def test_queries_do_not_grow_with_the_running_jobs(site, django_assert_max_num_queries):
    models, _templates = site
    NodeFactory(gpu_model=models["V100"], gpu_count=4)
    for n in range(4):
        owner_job = JobFactory(gpu_model=models["V100"], command=f"python run{n}.py")
        run_pass()
        run_job(owner_job)
    holder = resnet_job(site)
    run_pass()
    run_job(holder)
    waiter = resnet_job(site)
    run_pass()
    assert fresh(waiter).state == Job.State.RESOURCE_WAIT
    with django_assert_max_num_queries(20):
        likely_start(job=fresh(waiter))
