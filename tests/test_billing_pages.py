"""My billing, the staff overview and account page, their CSVs and the free-hours banner."""

import csv
import io
from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse

from accounting.services import account_enable_billing, usage_accrue
from billing.accounts import account_for_user
from billing.models import AccountEvent, FreeGrant
from tests.billing_cast import (
    LATER,
    T0,
    attempt_of,
    hours_match_ledger,  # noqa: F401 (a fixture)
    job_on,
    p4_model,
    set_price,
    v100_model,
)
from tests.factories import UserFactory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("hours_match_ledger")]
MARCH = "2026-03"


@pytest.fixture
def usage(owner, admin_user):
    """Owner (paid): 3 P4 card-hours (free) and 2 V100 card-hours at 12.00 in March 2026."""
    p4, v100 = p4_model(), v100_model()
    set_price(p4, "3.00")
    set_price(v100, "12.00")
    account_enable_billing(account=account_for_user(user=owner), actor=admin_user)
    free_job = job_on(p4, owner=owner, name="resnet-p4", gpu_count=2)
    attempt_of(free_job, started=T0, ended=T0 + timedelta(minutes=90))
    paid_job = job_on(v100, owner=owner, name="=cmd|' /C calc'!A0", gpu_count=1)
    attempt_of(paid_job, started=T0 + timedelta(days=2), ended=T0 + timedelta(days=2, hours=2))
    usage_accrue(now=LATER)
    return free_job, paid_job


def test_my_billing_shows_free_hours_usage_by_model_amount_lines_and_chart(owner_client, usage):
    response = owner_client.get(reverse("billing:mine"), {"month": MARCH})

    assert response.status_code == 200
    page = response.content.decode()
    assert "3.00 of 100 free card-hours used, 97.00 remaining" in page
    assert 'aria-valuenow="3"' in page
    assert '<dd data-testid="billable-card-hours">2.00</dd>' in page
    assert '<dd data-testid="total-amount">24.00 CNY</dd>' in page
    assert "resnet-p4" in page
    assert "<svg" in page and "2026-03-10 · P4: 3 card-hours" in page
    assert "2026-03-12 · V100: 2 card-hours" in page


def test_another_month_shows_nothing_and_offers_the_neighbours(owner_client, usage):
    page = owner_client.get(reverse("billing:mine"), {"month": "2026-01"}).content.decode()
    assert "No usage this month." in page
    assert "?month=2025-12" in page and "?month=2026-02" in page
    assert '<figure class="chart">' not in page  # no chart (the free-hours bar is an SVG too)


def test_month_change_with_htmx_renders_only_the_statement(owner_client, usage):
    response = owner_client.get(reverse("billing:mine"), {"month": MARCH}, HTTP_HX_REQUEST="true")
    page = response.content.decode()
    assert page.lstrip().startswith('<div id="statement">')
    assert "<html" not in page


def test_a_bad_month_is_refused_with_the_format(owner_client):
    response = owner_client.get(reverse("billing:mine"), {"month": "March"})
    assert response.status_code == 400
    assert "Give the month as YYYY-MM (for example 2026-03); you gave “March”." in (
        response.content.decode()
    )
    assert owner_client.get(reverse("billing:mine_csv"), {"month": "2026-13"}).status_code == 400


def test_my_billing_refuses_post(owner_client):
    assert owner_client.post(reverse("billing:mine")).status_code == 405


def test_statement_csv_has_the_job_lines_and_neutralises_formulas(owner_client, usage):
    response = owner_client.get(reverse("billing:mine_csv"), {"month": MARCH})

    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [(r["job"], r["gpu_model"], r["hours"], r["free_hours"], r["amount"]) for r in rows] == [
        ("resnet-p4", "P4", "3.000000", "3.000000", "0.000000"),
        ("'=cmd|' /C calc'!A0", "V100", "2.000000", "0.000000", "24.000000"),
    ]


def test_my_billing_queries_are_pinned(owner_client, usage, django_assert_max_num_queries):
    with django_assert_max_num_queries(11):  # with the unread count, and the jobs' GPU use (2)
        assert owner_client.get(reverse("billing:mine"), {"month": MARCH}).status_code == 200
    with django_assert_max_num_queries(8):
        assert owner_client.get(reverse("billing:mine_csv"), {"month": MARCH}).status_code == 200


def test_outsider_sees_only_their_own_empty_statement(client, outsider, usage):
    client.force_login(outsider)
    page = client.get(reverse("billing:mine"), {"month": MARCH}).content.decode()
    assert "resnet-p4" not in page and "No usage this month." in page
    account = account_for_user(user=usage[0].owner)
    assert client.get(reverse("billing:account", args=[account.pk])).status_code == 403
    assert client.get(reverse("billing:account_csv", args=[account.pk])).status_code == 403
    assert client.get(reverse("billing:overview")).status_code == 403
    assert client.get(reverse("billing:overview_csv")).status_code == 403


def test_banner_warns_from_80_percent_on_every_page(owner_client, owner):
    p4_model()
    account_for_user(user=owner)
    grant = FreeGrant.objects.get(account__user=owner)
    grant.used_card_seconds = Decimal(79 * 3600)
    grant.save()
    assert "free-hours-banner" not in owner_client.get(reverse("billing:mine")).content.decode()

    FreeGrant.objects.filter(pk=grant.pk).update(used_card_seconds=Decimal(81 * 3600))
    page = owner_client.get(reverse("resources:overview")).content.decode()
    assert "You have used 81 % of your free P4 card-hours (81.00 of 100)." in page

    FreeGrant.objects.filter(pk=grant.pk).update(used_card_seconds=Decimal(100 * 3600))
    page = owner_client.get(reverse("billing:mine")).content.decode()
    assert "new jobs are refused and running ones are stopped" in page


# Staff pages


@pytest.fixture
def many_accounts(usage, admin_user):
    v100 = v100_model()
    for n in range(5):
        user = UserFactory(username=f"user{n:02d}")
        account_for_user(user=user)
        if n % 2:
            account_enable_billing(account=account_for_user(user=user), actor=admin_user)
        job = job_on(v100, owner=user, gpu_count=1)
        attempt_of(job, started=T0, ended=T0 + timedelta(minutes=30 * (n + 1)))
    UserFactory(username="idle")
    account_for_user(user=UserFactory(username="idle"))
    usage_accrue(now=LATER)


def test_overview_lists_every_account_with_totals_top_users_and_models(
    admin_client_, many_accounts
):
    response = admin_client_.get(reverse("billing:overview"), {"month": MARCH})

    assert response.status_code == 200
    overview = response.context["overview"]
    amounts = {row.username: row.sums.amount for row in overview.rows}
    assert amounts["owner"] == Decimal("24")
    assert amounts["user03"] == Decimal("24")  # paid: 2 h of V100
    assert amounts["user02"] == 0  # free account: recorded, not charged
    assert amounts["idle"] == 0
    assert [row.username for row in overview.top][:2] == ["owner", "user03"]
    by_model = {(m.gpu_model, m.unit): m.sums.hours for m in overview.by_model}
    assert by_model[("P4", "card_hour")] == 3
    assert by_model[("V100", "card_hour")] == Decimal("2") + Decimal("7.5")
    assert "Billing overview, 2026-03" in response.content.decode()


def test_overview_sorts_and_filters(admin_client_, many_accounts):
    names = lambda response: [row.username for row in response.context["page"]]  # noqa: E731
    url = reverse("billing:overview")
    by_user = admin_client_.get(url, {"month": MARCH, "sort": "user"})
    assert names(by_user) == sorted(names(by_user))
    by_hours = names(admin_client_.get(url, {"month": MARCH, "sort": "-card_hours"}))
    assert by_hours[:3] == ["owner", "user04", "user03"]
    paid = names(admin_client_.get(url, {"month": MARCH, "billing": "yes"}))
    assert set(paid) == {"owner", "user01", "user03"}
    free = names(admin_client_.get(url, {"month": MARCH, "billing": "no", "q": "SER0"}))
    assert set(free) == {"user00", "user02", "user04"}
    assert admin_client_.get(url, {"sort": "password"}).status_code == 200  # unknown sort ignored


def test_overview_csv_has_every_account(admin_client_, many_accounts):
    response = admin_client_.get(reverse("billing:overview_csv"), {"month": MARCH})
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert {r["user"] for r in rows} == {"owner", "idle", *(f"user{n:02d}" for n in range(5))}
    owner_row = next(r for r in rows if r["user"] == "owner")
    assert (owner_row["card_hours"], owner_row["amount"]) == ("5.000000", "24.000000")


def test_overview_queries_are_pinned(admin_client_, many_accounts, django_assert_max_num_queries):
    with django_assert_max_num_queries(7):  # with the navigation's unread notifications
        assert admin_client_.get(reverse("billing:overview"), {"month": MARCH}).status_code == 200
    with django_assert_max_num_queries(5):
        admin_client_.get(reverse("billing:overview_csv"), {"month": MARCH})


def test_account_page_shows_the_statement(admin_client_, usage, django_assert_max_num_queries):
    account = account_for_user(user=usage[0].owner)
    with django_assert_max_num_queries(12):  # with the unread count, and the jobs' GPU use (2)
        response = admin_client_.get(
            reverse("billing:account", args=[account.pk]), {"month": MARCH}
        )
    page = response.content.decode()
    assert "Billing of owner" in page and "resnet-p4" in page
    assert "Billing enabled by boss" in page


def test_enabling_billing_is_a_logged_staff_action(admin_client_, admin_user, outsider):
    account = account_for_user(user=outsider)
    url = reverse("billing:account_enable", args=[account.pk])
    assert admin_client_.get(url).status_code == 200  # the confirmation, changing nothing

    response = admin_client_.post(url)

    assert response.status_code == 302
    account.refresh_from_db()
    assert account.billing_enabled and account.billing_enabled_by == admin_user
    event = AccountEvent.objects.get(account=account, kind="billing_enabled")
    assert event.actor == admin_user and "boss" in event.message


def test_a_normal_user_cannot_enable_billing(client, owner, outsider):
    client.force_login(outsider)
    account = account_for_user(user=owner)
    assert client.post(reverse("billing:account_enable", args=[account.pk])).status_code == 403
    account.refresh_from_db()
    assert not account.billing_enabled


def test_staff_see_the_billing_overview_link(client, admin_user, owner):
    client.force_login(admin_user)
    assert "Billing overview" in client.get(reverse("billing:mine")).content.decode()
    client.force_login(owner)
    assert "Billing overview" not in client.get(reverse("billing:mine")).content.decode()


def test_job_lines_are_paged_and_the_totals_stay_whole(owner_client, usage, monkeypatch):
    monkeypatch.setattr("accounting.views.LINES_PER_PAGE", 1)
    first = owner_client.get(reverse("billing:mine"), {"month": MARCH}).content.decode()
    second = owner_client.get(reverse("billing:mine"), {"month": MARCH, "page": 2})
    assert "resnet-p4" in first and "calc" not in first
    assert "Page 1 of 2" in first and "?month=2026-03&amp;page=2" in first
    page = second.content.decode()
    assert "calc" in page and "resnet-p4" not in page
    assert '<dd data-testid="total-amount">24.00 CNY</dd>' in page
