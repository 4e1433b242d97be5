"""GET /api/v1/billing/statement?month=YYYY-MM: the caller's own statement."""

from datetime import timedelta

import pytest

from accounting.services import account_enable_billing, usage_accrue
from accounts.models import ApiToken
from billing.accounts import account_for_user
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

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("hours_match_ledger")]
URL = "/api/v1/billing/statement"
KEYS = {
    "account",
    "billing_enabled",
    "free_grant_card_hours",
    "free_used_card_hours",
    "free_remaining_card_hours",
    "lines",
    "total_billable_card_hours",
    "total_amount",
    "currency",
}


@pytest.fixture
def usage(owner, admin_user):
    p4, v100 = p4_model(), v100_model()
    set_price(p4, "3.00")
    set_price(v100, "12.00")
    set_price(v100, "15.00", valid_from=T0 + timedelta(days=1))
    account_enable_billing(account=account_for_user(user=owner), actor=admin_user)
    free = job_on(p4, owner=owner, name="free", gpu_count=2)
    attempt_of(free, started=T0, ended=T0 + timedelta(minutes=90))
    paid = job_on(v100, owner=owner, name="paid")
    attempt_of(paid, started=T0 + timedelta(hours=23), ended=T0 + timedelta(hours=25))
    usage_accrue(now=LATER)
    return free, paid


def test_statement_has_the_issue_keys_and_exact_numbers(client, owner, usage):
    _row, token = ApiToken.issue(user=owner)
    response = client.get(URL, {"month": "2026-03"}, HTTP_AUTHORIZATION=f"Bearer {token}")

    assert response.status_code == 200
    body = response.json()
    assert set(body) == KEYS
    assert body["account"] == "owner"
    assert body["billing_enabled"] is True
    assert body["free_grant_card_hours"] == "100.000000"
    assert body["free_used_card_hours"] == "3.000000"
    assert body["free_remaining_card_hours"] == "97.000000"
    assert body["total_billable_card_hours"] == "2.000000"
    assert body["total_amount"] == "27.000000"  # 1 h at 12, then 1 h at 15 after the change
    assert body["currency"] == "CNY"
    lines = [
        (line["job_name"], line["gpu_model"], line["unit_price"], line["hours"], line["amount"])
        for line in body["lines"]
    ]
    assert lines == [
        ("free", "P4", "3.0000", "3.000000", "0.000000"),
        ("paid", "V100", "12.0000", "1.000000", "12.000000"),
        ("paid", "V100", "15.0000", "1.000000", "15.000000"),
    ]


def test_statement_of_a_month_without_usage_is_empty(owner_client, usage):
    body = owner_client.get(URL, {"month": "2026-02"}).json()
    assert body["lines"] == []
    assert body["total_amount"] == "0.000000"
    assert body["free_used_card_hours"] == "3.000000"  # the grant is the account's, not the month's


def test_outsider_gets_their_own_statement_never_anothers(client, outsider, usage):
    client.force_login(outsider)
    body = client.get(URL, {"month": "2026-03"}).json()
    assert body["account"] == "outsider"
    assert body["lines"] == []


def test_bad_month_is_a_422_naming_the_field(owner_client):
    response = owner_client.get(URL, {"month": "03/2026"})
    assert response.status_code == 422
    assert response.json() == {
        "errors": {
            "month": ["Give the month as YYYY-MM (for example 2026-03); you gave “03/2026”."]
        }
    }


def test_statement_needs_authentication(client):
    assert client.get(URL).status_code == 401


def test_statement_queries_are_pinned(client, owner, usage, django_assert_max_num_queries):
    _row, token = ApiToken.issue(user=owner)
    with django_assert_max_num_queries(8):
        response = client.get(URL, {"month": "2026-03"}, HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200
