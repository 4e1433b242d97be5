"""Log-in throttling (django-axes): 5 failed passwords lock a username out from one address.

The lock holds 15 minutes, shows the log-in page with the reason (429, not a
bare 403 text), touches neither other usernames nor other addresses, and does
not apply to the API's bearer tokens.
"""

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.db.models import F
from django.urls import reverse

from accounts.models import ApiToken

pytestmark = pytest.mark.django_db

LOCKED = "Too many failed log-ins for this username from your address. Try again in 15 minutes."


@pytest.fixture(autouse=True)
def fast_hashing(settings):
    """Dozens of log-ins: a fast hasher keeps the module quick (the lock is what is tested)."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def log_in(client, username: str, password: str, address: str = "10.0.0.1", **headers):
    return client.post(
        reverse("login"),
        {"username": username, "password": password},
        REMOTE_ADDR=address,
        **headers,
    )


def fail(client, times: int, username: str = "owner", address: str = "10.0.0.1", **headers):
    return [log_in(client, username, "wrong", address, **headers) for _ in range(times)][-1]


def test_four_failures_are_ordinary_wrong_passwords(client, owner):
    response = fail(client, 4)
    assert response.status_code == 200
    assert LOCKED not in response.content.decode()
    assert log_in(client, "owner", "pw").status_code == 302


def test_the_fifth_failure_locks_out_with_the_reason_on_the_log_in_page(client, owner):
    response = fail(client, 5)
    assert response.status_code == 429
    assert response["Retry-After"] == str(15 * 60)
    page = response.content.decode()
    assert LOCKED in page
    assert 'name="password"' in page and 'value="owner"' in page


def test_the_right_password_does_not_open_a_locked_username(client, owner):
    fail(client, 5)
    response = log_in(client, "owner", "pw")
    assert response.status_code == 429
    assert client.get(reverse("jobs:list")).status_code == 302


def test_the_lock_is_per_username_and_address(client, owner, member):
    fail(client, 5, username="owner", address="10.0.0.1")
    assert log_in(client, "member", "pw", address="10.0.0.1").status_code == 302
    client.logout()
    assert log_in(client, "owner", "pw", address="10.0.0.2").status_code == 302


def test_the_lock_ends_after_fifteen_minutes(client, owner):
    fail(client, 5)
    AccessAttempt.objects.update(attempt_time=F("attempt_time") - timedelta(minutes=16))
    assert log_in(client, "owner", "pw").status_code == 302


def test_a_try_during_the_lock_starts_its_fifteen_minutes_again(client, owner):
    fail(client, 5)
    AccessAttempt.objects.update(attempt_time=F("attempt_time") - timedelta(minutes=14))
    assert log_in(client, "owner", "pw").status_code == 429
    AccessAttempt.objects.update(attempt_time=F("attempt_time") - timedelta(minutes=14))
    assert log_in(client, "owner", "pw").status_code == 429


def test_a_successful_log_in_forgets_earlier_failures(client, owner):
    fail(client, 4)
    assert log_in(client, "owner", "pw").status_code == 302
    client.logout()
    assert fail(client, 4).status_code == 200


def test_behind_a_proxy_the_lock_is_for_the_address_it_saw(client, owner, settings):
    settings.TRAINYARD_PROXY_COUNT = 1
    proxy = "10.9.9.9"
    fail(client, 5, address=proxy, HTTP_X_FORWARDED_FOR="1.1.1.1, 203.0.113.7")
    assert AccessAttempt.objects.get().ip_address == "203.0.113.7"
    # Another client through the same proxy is not locked out; a forged left entry changes nothing.
    assert (
        log_in(client, "owner", "pw", proxy, HTTP_X_FORWARDED_FOR="198.51.100.2").status_code == 302
    )
    client.logout()
    forged = log_in(client, "owner", "pw", proxy, HTTP_X_FORWARDED_FOR="5.5.5.5, 203.0.113.7")
    assert forged.status_code == 429


def test_without_a_proxy_a_forwarded_header_is_ignored(client, owner):
    fail(client, 5, HTTP_X_FORWARDED_FOR="203.0.113.7")
    assert AccessAttempt.objects.get().ip_address == "10.0.0.1"
    assert log_in(client, "owner", "pw", HTTP_X_FORWARDED_FOR="198.51.100.2").status_code == 429


def test_the_admin_has_no_second_password_form(client, admin_user):
    """Signed out, the admin's log-in sends to the site's (throttled) one, checking nothing."""
    response = client.post(reverse("admin:login"), {"username": "boss", "password": "pw"})
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))
    assert client.get(reverse("admin:index")).status_code == 302


def test_bearer_tokens_are_not_throttled(client, owner):
    fail(client, 5)
    _row, token = ApiToken.issue(user=owner)
    response = client.get(
        "/api/v1/projects", HTTP_AUTHORIZATION=f"Bearer {token}", REMOTE_ADDR="10.0.0.1"
    )
    assert response.status_code == 200
