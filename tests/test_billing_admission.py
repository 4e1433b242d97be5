"""Billing admission: free-tier models only, and free hours that are not used up yet."""

from datetime import timedelta
from decimal import Decimal

import pytest

from billing.models import FreeGrant
from billing.rules import free_room, job_billing_errors
from billing.services import account_enable_billing, account_for_user, usage_accrue
from jobs.models import Job
from tests.billing_cast import LATER, T0, attempt_of, job_on, p4_model, v100_model

pytestmark = pytest.mark.django_db


@pytest.fixture
def p4():
    return p4_model()


def errors(user, gpu_model, *, gpu_count=1, replicas=1, max_runtime_minutes=None, **extra):
    return job_billing_errors(
        user=user,
        gpu_model=gpu_model,
        gpu_count=gpu_count,
        replicas=replicas,
        max_runtime_minutes=max_runtime_minutes,
        **extra,
    )


def test_free_account_may_not_use_a_paid_model(p4, owner):
    (message,) = errors(owner, v100_model())["gpu_model"]
    assert "only the free-tier GPU models (P4), not V100" in message


def test_paid_account_may_use_any_model_for_any_time(p4, owner, admin_user):
    account_enable_billing(account=account_for_user(user=owner), actor=admin_user)
    assert errors(owner, v100_model(), gpu_count=8, max_runtime_minutes=100_000) == {}
    assert errors(owner, p4, gpu_count=8, max_runtime_minutes=100_000) == {}


def test_free_job_within_the_remaining_hours_is_admitted(p4, owner):
    assert errors(owner, p4, gpu_count=2, max_runtime_minutes=50 * 60) == {}


def test_free_job_longer_than_the_remaining_hours_is_admitted(p4, owner):
    assert errors(owner, p4, gpu_count=2, max_runtime_minutes=60 * 60) == {}
    assert errors(owner, p4, gpu_count=1, replicas=3, max_runtime_minutes=200 * 60) == {}


def test_other_unfinished_jobs_hold_no_hours_only_use_counts(p4, owner):
    account_for_user(user=owner)
    FreeGrant.objects.filter(account__user=owner).update(card_hours=10)
    done = job_on(p4, owner=owner, state=Job.State.SUCCEEDED)
    attempt_of(done, started=T0, ended=T0 + timedelta(hours=3))
    usage_accrue(now=LATER)
    job_on(p4, owner=owner, state=Job.State.QUOTA_WAIT, gpu_count=2, max_runtime_minutes=120)
    job_on(p4, owner=owner, state=Job.State.QUOTA_WAIT, gpu_count=4)

    room = free_room(account=account_for_user(user=owner), gpu_model=p4)
    assert (room.grant, room.used, room.remaining) == (10, 3, 7)
    assert errors(owner, p4, max_runtime_minutes=8 * 60) == {}


def test_used_up_grant_refuses_new_free_jobs(p4, owner):
    account_for_user(user=owner)
    FreeGrant.objects.filter(account__user=owner).update(
        card_hours=1, used_card_seconds=Decimal(3600)
    )
    (message,) = errors(owner, p4)["gpu_model"]
    assert message.startswith("Your free P4 card-hours are used up: 0 of 1 remain")
