"""Safe admission through the one submit path (form, API, CLI): refusal and the run-time cap."""

import pytest
from django.core.exceptions import ValidationError

from jobs.services.submit import job_submit
from tests.job_site import build_site, job_body

pytestmark = pytest.mark.django_db
P4_JOB = {"kind": "gpu", "gpu_model": "P4", "gpu_count": 1}


def test_free_job_without_max_run_time_gets_the_remaining_hours_as_its_cap(owner, project):
    build_site(project=project)
    job = job_submit(user=owner, data=job_body(resources=P4_JOB))
    assert job.max_runtime_minutes == 100 * 60


def test_free_job_asking_more_than_the_remaining_hours_is_refused(owner, project):
    build_site(project=project)
    with pytest.raises(ValidationError) as refused:
        job_submit(user=owner, data=job_body(resources=P4_JOB, max_runtime_minutes=101 * 60))
    (message,) = refused.value.message_dict["max_runtime_minutes"]
    assert "may use 101 free P4 card-hours" in message and "at most 6000 minutes" in message


def test_the_cap_leaves_room_for_the_accounts_queued_jobs(owner, project):
    build_site(project=project)
    job_submit(user=owner, data=job_body(resources=P4_JOB, max_runtime_minutes=60 * 60))
    second = job_submit(user=owner, data=job_body(name="second", resources=P4_JOB))
    assert second.max_runtime_minutes == 40 * 60


def test_paid_job_without_max_run_time_stays_without_one(owner, project):
    build_site(project=project, billing_for=[owner])
    job = job_submit(user=owner, data=job_body(resources=P4_JOB))
    assert job.max_runtime_minutes is None
