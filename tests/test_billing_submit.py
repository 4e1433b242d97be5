"""Free hours through the one submit path (form, API, CLI): consumed as used, never reserved.

Issue 18, point 1: a free job without a max run time was given one of all the
remaining free hours and "held" them, so the account's next P4 job was
refused. Now no job reserves hours; the accrual stops free jobs when the
hours run out (tests/test_billing_grant.py).
"""

import pytest
from django.core.exceptions import ValidationError

from billing.accounts import account_for_user
from billing.models import FreeGrant
from jobs.services.submit import job_submit
from tests.job_site import build_site, job_body

pytestmark = pytest.mark.django_db
P4_JOB = {"kind": "gpu", "gpu_model": "P4", "gpu_count": 1}


def test_free_job_without_max_run_time_keeps_no_limit(owner, project):
    build_site(project=project)
    job = job_submit(user=owner, data=job_body(resources=P4_JOB))
    assert job.max_runtime_minutes is None


def test_a_free_account_runs_as_many_jobs_as_its_quota_allows(owner, project):
    build_site(project=project)
    first = job_submit(user=owner, data=job_body(resources=P4_JOB))
    second = job_submit(user=owner, data=job_body(name="second", resources=P4_JOB))
    third = job_submit(
        user=owner, data=job_body(name="third", resources=P4_JOB, max_runtime_minutes=90 * 60)
    )
    assert [first.max_runtime_minutes, second.max_runtime_minutes] == [None, None]
    assert third.max_runtime_minutes == 90 * 60


def test_a_max_run_time_longer_than_the_remaining_hours_is_admitted(owner, project):
    """Hours are consumed as they are used: the job is stopped if they run out first."""
    build_site(project=project)
    job = job_submit(user=owner, data=job_body(resources=P4_JOB, max_runtime_minutes=101 * 60))
    assert job.max_runtime_minutes == 101 * 60


def test_used_up_free_hours_refuse_the_next_free_job(owner, project):
    build_site(project=project)
    account_for_user(user=owner)
    FreeGrant.objects.filter(account__user=owner).update(used_card_seconds=100 * 3600)
    with pytest.raises(ValidationError) as refused:
        job_submit(user=owner, data=job_body(resources=P4_JOB))
    (message,) = refused.value.message_dict["gpu_model"]
    assert message == (
        "Your free P4 card-hours are used up: 0 of 100 remain (100 used). "
        "Ask an admin to enable billing."
    )


def test_paid_job_without_max_run_time_stays_without_one(owner, project):
    build_site(project=project, billing_for=[owner])
    job = job_submit(user=owner, data=job_body(resources=P4_JOB))
    assert job.max_runtime_minutes is None
