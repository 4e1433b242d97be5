"""Billing admission: free-tier models only, and free hours that are not used up yet."""

from datetime import timedelta
from decimal import Decimal

import pytest

from accounting.services import account_enable_billing, usage_accrue
from billing.accounts import account_for_user
from billing.models import FreeGrant
from billing.rules import free_room, job_billing_errors
from jobs.models import Job
from tests.billing_cast import LATER, T0, attempt_of, job_on, p4_model, v100_model

pytestmark = pytest.mark.django_db


@pytest.fixture
def p4():
    return p4_model()


def errors(user, gpu_model, *, gpu_count=1, replicas=1, **extra):
    return job_billing_errors(
        user=user, gpu_model=gpu_model, gpu_count=gpu_count, replicas=replicas, **extra
    )


def test_free_account_may_not_use_a_paid_model(p4, owner):
    (message,) = errors(owner, v100_model())["gpu_model"]
    assert "only the free-tier GPU models (P4), not V100" in message


def test_paid_account_may_use_any_model_for_any_time(p4, owner, admin_user):
    account_enable_billing(account=account_for_user(user=owner), actor=admin_user)
    assert errors(owner, v100_model(), gpu_count=8) == {}
    assert errors(owner, p4, gpu_count=8) == {}


def test_free_job_within_the_remaining_hours_is_admitted(p4, owner):
    assert errors(owner, p4, gpu_count=2) == {}


def test_free_job_asking_more_cards_than_hours_remain_for_long_is_admitted(p4, owner):
    """How long it may run is the accrual's business (see tests/test_billing_submit.py)."""
    assert errors(owner, p4, gpu_count=8, replicas=3) == {}


def test_the_last_minute_of_free_hours_counts_replicas_and_virtual_gpu_shares(p4, owner):
    """Refused only when not even a minute of the request's use is left."""
    account_for_user(user=owner)
    FreeGrant.objects.filter(account__user=owner).update(
        card_hours=1,
        used_card_seconds=Decimal(3600 - 180),  # 3 card-minutes left
    )
    assert "gpu_model" in errors(owner, p4, gpu_count=2, replicas=3)  # half a minute
    vgpu = {"resource_kind": "vgpu", "vgpu_compute_percent": 50}
    assert errors(owner, p4, gpu_count=1, **vgpu) == {}  # six minutes


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
    assert errors(owner, p4) == {}


def test_used_up_grant_refuses_new_free_jobs(p4, owner):
    account_for_user(user=owner)
    FreeGrant.objects.filter(account__user=owner).update(
        card_hours=1, used_card_seconds=Decimal(3600)
    )
    (message,) = errors(owner, p4)["gpu_model"]
    assert message.startswith("Your free P4 card-hours are used up: 0 of 1 remain")
