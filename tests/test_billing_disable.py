"""An admin disables billing again: recorded, paid jobs stopped, later usage not charged."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from accounting.services import account_disable_billing, account_enable_billing, usage_accrue
from billing.accounts import account_for_user
from billing.models import Account, AccountEvent, FreeGrant, UsageRecord
from jobs.models import Job
from tests.billing_cast import (
    attempt_of,
    grant_of,
    hours_match_ledger,  # noqa: F401 (a fixture)
    job_on,
    p4_model,
    set_price,
    v100_model,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("hours_match_ledger")]
QUERIES = 9  # with the navigation's unread notifications and the banner; any number of jobs


@pytest.fixture
def paid(owner, admin_user):
    """The owner's account with billing enabled by the admin, and P4 and V100 priced."""
    p4, v100 = p4_model(), v100_model()
    set_price(p4, "3.00")
    set_price(v100, "12.00")
    account = account_for_user(user=owner)
    account_enable_billing(account=account, actor=admin_user)
    return account, p4, v100


def test_disabling_billing_records_who_and_when(paid, admin_user):
    account, _p4, _v100 = paid
    before = timezone.now()

    account_disable_billing(account=account, actor=admin_user)

    account.refresh_from_db()
    assert not account.billing_enabled
    assert account.billing_disabled_by == admin_user
    assert before <= account.billing_disabled_at <= timezone.now()
    # When it was enabled stays on the record.
    assert account.billing_enabled_by == admin_user and account.billing_enabled_at
    event = AccountEvent.objects.get(account=account, kind="billing_disabled")
    assert event.actor == admin_user and event.message == "Billing disabled by boss"


def test_disabling_twice_records_it_once(paid, admin_user):
    account, _p4, _v100 = paid
    account_disable_billing(account=account, actor=admin_user)
    account_disable_billing(account=account, actor=admin_user)
    assert AccountEvent.objects.filter(account=account, kind="billing_disabled").count() == 1


def test_disabling_stops_the_unfinished_jobs_on_paid_models_only(paid, owner, admin_user):
    account, p4, v100 = paid
    waiting_v100 = job_on(v100, owner=owner, state=Job.State.QUOTA_WAIT, name="wait-v100")
    running_v100 = job_on(v100, owner=owner, state=Job.State.RUNNING, name="run-v100")
    free_p4 = job_on(p4, owner=owner, state=Job.State.RUNNING, name="run-p4")
    cpu = job_on(
        None, owner=owner, state=Job.State.RUNNING, name="cpu", gpu_count=0, resource_kind="cpu"
    )

    account_disable_billing(account=account, actor=admin_user)

    waiting_v100.refresh_from_db()
    running_v100.refresh_from_db()
    assert waiting_v100.state == Job.State.STOPPED
    assert "Billing disabled by boss" in waiting_v100.state_reason
    assert running_v100.stop_requested_at is not None
    for job in (free_p4, cpu):
        job.refresh_from_db()
        assert job.stop_requested_at is None and job.state == Job.State.RUNNING


def test_disabling_stops_free_tier_jobs_once_their_free_hours_are_used_up(owner, admin_user):
    p4 = p4_model()
    grant = grant_of(owner, "1")
    FreeGrant.objects.filter(pk=grant.pk).update(used_card_seconds=3600)
    account = account_for_user(user=owner)
    account_enable_billing(account=account, actor=admin_user)
    job = job_on(p4, owner=owner, state=Job.State.RESOURCE_WAIT)

    account_disable_billing(account=account, actor=admin_user)

    job.refresh_from_db()
    assert job.state == Job.State.STOPPED


def test_usage_while_billing_was_enabled_is_charged_and_after_it_is_not(paid, owner, admin_user):
    account, _p4, v100 = paid
    now = timezone.now().replace(microsecond=0)
    Account.objects.filter(pk=account.pk).update(billing_enabled_at=now - timedelta(days=1))
    job = job_on(v100, owner=owner, gpu_count=1)
    attempt_of(job, started=now - timedelta(hours=2), ended=now + timedelta(hours=1))

    # The accrual runs late: both hours before the switch are still to be written.
    account_disable_billing(account=account, actor=admin_user)
    usage_accrue(now=now + timedelta(hours=2))

    rows = UsageRecord.objects.filter(job=job)
    disabled_at = account_for_user(user=owner).billing_disabled_at
    before = [r for r in rows if r.period_start < disabled_at]
    after = [r for r in rows if r.period_start >= disabled_at]
    assert sum(r.amount for r in before) >= Decimal("23.9")  # ~2 h × 12.00
    assert after and all(not r.billed and r.amount == 0 for r in after)
    assert {r.unbilled_reason for r in after} == {
        "Not charged: billing is not enabled for this account"
    }


def test_the_free_hours_stay_as_they_are_across_disable_and_enable(paid, admin_user):
    account, _p4, _v100 = paid
    FreeGrant.objects.filter(account=account).update(used_card_seconds=7200)

    account_disable_billing(account=account, actor=admin_user)
    account_enable_billing(account=account, actor=admin_user)

    grants = list(FreeGrant.objects.filter(account=account))
    assert [(g.card_hours, g.used_card_seconds) for g in grants] == [(100, 7200)]
    account.refresh_from_db()
    assert account.billing_enabled
    kinds = list(AccountEvent.objects.filter(account=account).values_list("kind", flat=True))
    assert kinds.count("billing_enabled") == 2 and kinds.count("billing_disabled") == 1


def test_enable_and_disable_ask_first_and_change_nothing_on_get(admin_client_, paid, outsider):
    account, _p4, v100 = paid
    job_on(v100, owner=account.user, state=Job.State.RUNNING, name="long-v100")
    disable = admin_client_.get(reverse("billing:account_disable", args=[account.pk]))
    page = disable.content.decode()
    assert disable.status_code == 200
    assert "Disable billing for owner?" in page and "long-v100" in page
    account.refresh_from_db()
    assert account.billing_enabled

    free = account_for_user(user=outsider)
    enable = admin_client_.get(reverse("billing:account_enable", args=[free.pk]))
    assert "Enable billing for outsider?" in enable.content.decode()
    free.refresh_from_db()
    assert not free.billing_enabled


def test_disabling_billing_is_a_staff_action(admin_client_, paid, outsider, admin_user):
    account, _p4, _v100 = paid
    url = reverse("billing:account_disable", args=[account.pk])
    stranger = Client()
    stranger.force_login(outsider)
    assert stranger.post(url).status_code == 403
    assert stranger.get(url).status_code == 403

    response = admin_client_.post(url)

    assert response.status_code == 302
    account.refresh_from_db()
    assert not account.billing_enabled and account.billing_disabled_by == admin_user


def test_the_django_admin_asks_before_it_disables_billing(admin_client_, paid, admin_user):
    account, _p4, _v100 = paid
    url = reverse("admin:billing_account_changelist")
    chosen = {"action": "disable_billing", "_selected_action": [account.pk]}

    question = admin_client_.post(url, chosen)

    assert question.status_code == 200
    assert "Disable billing for the selected accounts" in question.content.decode()
    account.refresh_from_db()
    assert account.billing_enabled
    assert admin_client_.post(url, {**chosen, "confirmed": "yes"}).status_code == 302
    account.refresh_from_db()
    assert not account.billing_enabled and account.billing_disabled_by == admin_user


def test_the_confirmation_pages_queries_are_pinned(
    admin_client_, paid, django_assert_max_num_queries
):
    account, p4, v100 = paid
    for model in (v100, v100, p4):
        job_on(model, owner=account.user, state=Job.State.RUNNING)
    with django_assert_max_num_queries(QUERIES):
        admin_client_.get(reverse("billing:account_disable", args=[account.pk]))
    with django_assert_max_num_queries(QUERIES):
        admin_client_.get(reverse("billing:account_enable", args=[account.pk]))
