"""The free grant: warnings at 80 % and 95 %, and what happens when it is used up."""

from datetime import timedelta
from decimal import Decimal

import pytest

from accounting.services import account_enable_billing, usage_accrue
from billing.accounts import account_for_user
from billing.models import AccountEvent, FreeGrant
from jobs.models import Job, JobEvent
from tests.billing_cast import (
    LATER,
    T0,
    attempt_of,
    grant_of,
    hours_match_ledger,  # noqa: F401 (a fixture)
    hours_of,
    job_on,
    ledger,
    p4_model,
    set_price,
    total,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("hours_match_ledger")]


@pytest.fixture
def p4():
    model = p4_model()
    set_price(model, "3.00")
    return model


def billing_events(job: Job) -> list[str]:
    return [e.data.get("billing") for e in JobEvent.objects.filter(job=job) if e.data]


def test_warnings_at_80_and_95_percent_once_each_with_a_job_event(p4, owner):
    grant_of(owner, "1")
    job = job_on(p4, owner=owner)
    attempt_of(job, started=T0)

    for minute in range(1, 60):  # 58 settled minutes: 96.7 % used
        usage_accrue(now=T0 + timedelta(minutes=minute, seconds=5))

    kinds = list(
        AccountEvent.objects.filter(account__user=owner)
        .order_by("pk")
        .values_list("kind", flat=True)
    )
    assert kinds == ["free_used_80", "free_used_95"]
    assert billing_events(job) == ["free_used_80", "free_used_95"]
    warning = JobEvent.objects.filter(job=job, data__billing="free_used_80").get()
    assert "80 % of your free P4 card-hours are used" in warning.reason
    assert Job.objects.get(pk=job.pk).stop_requested_at is None


def test_grant_running_out_mid_job_stops_it_with_usage_exact_to_the_period(
    p4, owner, django_capture_on_commit_callbacks
):
    grant_of(owner, "1")
    job = job_on(p4, owner=owner, gpu_count=2)
    attempt_of(job, started=T0)

    with django_capture_on_commit_callbacks() as callbacks:
        usage_accrue(now=T0 + timedelta(minutes=32))  # settled to 00:31: 1.033 card-hours

    job.refresh_from_db()
    assert job.stop_requested_at is not None
    assert callbacks, "the executors are told to stop the job after the commit"
    stop_event = JobEvent.objects.filter(job=job, data__billing="free_used_up").get()
    assert "free P4 hours used up" in stop_event.reason
    rows = ledger(job=job)
    assert hours_of(rows, "free_unit_seconds") == 1
    free_rows = [r for r in rows if r.billed]
    assert free_rows[-1].period_end == T0 + timedelta(minutes=30)  # 2 cards × 30 min
    over = [r for r in rows if not r.billed]
    assert [r.period_start for r in over] == [T0 + timedelta(minutes=30)]
    assert over[0].unbilled_reason == "free P4 hours used up (1 card-hours)"
    assert total(rows, "amount") == 0
    assert AccountEvent.objects.filter(account__user=owner, kind="free_used_up").count() == 1


def test_grant_used_up_stops_the_accounts_queued_jobs_too(p4, owner):
    grant_of(owner, "0.5")
    running = job_on(p4, owner=owner)
    queued = job_on(p4, owner=owner, state=Job.State.QUOTA_WAIT)
    attempt_of(running, started=T0, ended=T0 + timedelta(hours=1))

    usage_accrue(now=LATER)

    queued.refresh_from_db()
    assert queued.state == Job.State.STOPPED
    assert "free P4 hours used up" in queued.state_reason


def test_paid_account_keeps_running_and_pays_for_p4_after_its_grant(p4, owner, admin_user):
    grant_of(owner, "0.5")
    account_enable_billing(account=account_for_user(user=owner), actor=admin_user)
    job = job_on(p4, owner=owner)
    attempt_of(job, started=T0, ended=T0 + timedelta(hours=1))

    usage_accrue(now=LATER)

    job.refresh_from_db()
    assert job.stop_requested_at is None
    rows = ledger(job=job)
    assert hours_of(rows, "free_unit_seconds") == Decimal("0.5")
    assert hours_of(rows, "billable_unit_seconds") == Decimal("0.5")
    assert total(rows, "amount") == Decimal("1.5")


def test_free_account_cpu_time_is_recorded_but_not_charged(owner):
    set_price(None, "0.20")
    job = job_on(None, owner=owner, resource_kind="cpu", gpu_count=0, cpu_milli=4000)
    attempt_of(job, started=T0, ended=T0 + timedelta(minutes=10))

    usage_accrue(now=LATER)

    rows = ledger(job=job)
    assert hours_of(rows) * 60 == 40  # 4 core × 10 min
    assert not any(r.billed for r in rows)
    assert {r.unbilled_reason for r in rows} == {
        "Not charged: billing is not enabled for this account"
    }


def test_grant_consumption_equals_the_free_units_in_the_ledger(p4, owner):
    grant_of(owner, "2")
    for gpu_count in (1, 2):
        job = job_on(p4, owner=owner, gpu_count=gpu_count)
        attempt_of(job, started=T0 + timedelta(seconds=gpu_count), ended=T0 + timedelta(hours=1))

    for minute in range(0, 70, 7):
        usage_accrue(now=T0 + timedelta(minutes=minute))

    grant = FreeGrant.objects.get(account__user=owner)
    assert grant.used_card_seconds == total(ledger(account__user=owner), "free_unit_seconds")
    assert grant.used_card_hours == 2


def test_a_grant_finer_than_the_ledger_is_used_up_to_its_last_thousandth(p4, owner):
    grant = grant_of(owner, "1.000001")  # 3600.0036 card-seconds
    job = job_on(p4, owner=owner)
    attempt_of(job, started=T0, ended=T0 + timedelta(hours=2))

    usage_accrue(now=LATER)

    grant.refresh_from_db()
    assert grant.used_card_seconds == Decimal("3600.003")
    assert grant.is_used_up
    assert AccountEvent.objects.filter(account__user=owner, kind="free_used_up").exists()
