"""Billing admission: free-tier models only, and "safe" admission within the free hours."""

from datetime import timedelta
from decimal import Decimal

import pytest

from billing.models import FreeGrant
from billing.rules import free_runtime_cap_minutes, job_billing_errors
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


def test_free_job_longer_than_the_remaining_hours_is_refused_with_the_numbers(p4, owner):
    (message,) = errors(owner, p4, gpu_count=2, max_runtime_minutes=60 * 60)["max_runtime_minutes"]
    assert message == (
        "This job may use 120 free P4 card-hours (2 cards × 1 replicas × 60 h), but only "
        "100 of your 100 remain (0 used, 0 held by your other unfinished jobs). Set a max "
        "run time of at most 3000 minutes, or ask an admin to enable billing."
    )


def test_replicas_and_virtual_gpu_shares_count_in_the_hours(p4, owner):
    assert "max_runtime_minutes" in errors(
        owner, p4, gpu_count=1, replicas=3, max_runtime_minutes=34 * 60
    )
    assert (
        errors(
            owner,
            p4,
            gpu_count=1,
            max_runtime_minutes=200 * 60,
            resource_kind="vgpu",
            vgpu_compute_percent=50,
        )
        == {}
    )


def test_used_and_reserved_hours_are_taken_off(p4, owner):
    account_for_user(user=owner)
    FreeGrant.objects.filter(account__user=owner).update(card_hours=10)
    done = job_on(p4, owner=owner, state=Job.State.SUCCEEDED)
    attempt_of(done, started=T0, ended=T0 + timedelta(hours=3))
    usage_accrue(now=LATER)
    job_on(p4, owner=owner, state=Job.State.QUOTA_WAIT, gpu_count=2, max_runtime_minutes=120)

    (message,) = errors(owner, p4, max_runtime_minutes=4 * 60)["max_runtime_minutes"]
    assert "only 3 of your 10 remain (3 used, 4 held by your other unfinished jobs)" in message
    assert errors(owner, p4, max_runtime_minutes=3 * 60) == {}


def test_a_running_jobs_reservation_shrinks_as_it_uses_hours(p4, owner):
    account_for_user(user=owner)
    FreeGrant.objects.filter(account__user=owner).update(card_hours=10)
    running = job_on(p4, owner=owner, max_runtime_minutes=6 * 60)
    attempt_of(running, started=T0)
    usage_accrue(now=T0 + timedelta(hours=2, minutes=1))  # 2 h settled

    (message,) = errors(owner, p4, max_runtime_minutes=5 * 60)["max_runtime_minutes"]
    assert "only 4 of your 10 remain (2 used, 4 held by" in message


def test_used_up_grant_refuses_new_free_jobs(p4, owner):
    account_for_user(user=owner)
    FreeGrant.objects.filter(account__user=owner).update(
        card_hours=1, used_card_seconds=Decimal(3600)
    )
    (message,) = errors(owner, p4)["gpu_model"]
    assert message.startswith("Your free P4 card-hours are used up: 0 of 1 remain")
    assert free_runtime_cap_minutes(user=owner, gpu_model=p4, gpu_count=1, replicas=1) is None


def test_job_without_max_run_time_is_capped_at_the_remaining_hours(p4, owner):
    cap = free_runtime_cap_minutes(user=owner, gpu_model=p4, gpu_count=2, replicas=1)
    assert cap == 3000
    assert errors(owner, p4, gpu_count=2, max_runtime_minutes=cap) == {}
    assert (
        free_runtime_cap_minutes(
            user=owner,
            gpu_model=p4,
            gpu_count=1,
            replicas=2,
            resource_kind="vgpu",
            vgpu_compute_percent=25,
        )
        == 12_000
    )


def test_no_cap_for_paid_accounts_or_models_without_a_grant(p4, owner, admin_user):
    assert free_runtime_cap_minutes(user=owner, gpu_model=None, gpu_count=0, replicas=1) is None
    account_enable_billing(account=account_for_user(user=owner), actor=admin_user)
    assert free_runtime_cap_minutes(user=owner, gpu_model=p4, gpu_count=1, replicas=1) is None
