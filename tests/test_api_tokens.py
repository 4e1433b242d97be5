"""Personal API tokens: the profile page and ``create_api_token``."""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from accounts.models import ApiToken
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_profile_creates_a_token_shown_once(owner_client, client):
    response = owner_client.post(reverse("profile"), {"name": "laptop"})
    token = response.context["new_token"]
    assert token.startswith("ty_") and token in response.content.decode()
    row = ApiToken.objects.get()
    assert (row.name, row.prefix) == ("laptop", token[:8])
    assert token not in owner_client.get(reverse("profile")).content.decode()
    anonymous = client.__class__()
    answer = anonymous.get("/api/v1/projects", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert answer.status_code == 200


def test_profile_lists_only_own_tokens(owner_client, outsider):
    ApiToken.issue(user=outsider, name="theirs")
    ApiToken.issue(user=UserFactory(username="owner"), name="mine")
    html = owner_client.get(reverse("profile")).content.decode()
    assert "mine" in html and "theirs" not in html


def test_token_name_too_long(owner_client):
    response = owner_client.post(reverse("profile"), {"name": "x" * 65})
    assert response.status_code == 422
    assert "The token name is at most 64 characters; yours has 65" in response.content.decode()
    assert not ApiToken.objects.exists()


def test_revoke_own_token(owner_client, owner):
    row, token = ApiToken.issue(user=owner)
    response = owner_client.post(reverse("token_revoke", args=[row.pk]))
    assert response.status_code == 302
    assert not ApiToken.objects.exists()
    anonymous = owner_client.__class__()
    assert (
        anonymous.get("/api/v1/projects", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 401
    )


def test_cannot_revoke_someone_elses_token(owner_client, outsider):
    row, _token = ApiToken.issue(user=outsider)
    owner_client.post(reverse("token_revoke", args=[row.pk]))
    assert ApiToken.objects.filter(pk=row.pk).exists()


def test_revoke_needs_post(owner_client, owner):
    row, _token = ApiToken.issue(user=owner)
    assert owner_client.get(reverse("token_revoke", args=[row.pk])).status_code == 405


def test_command_prints_a_working_token(client, owner):
    out = StringIO()
    call_command("create_api_token", "owner", "--name", "ci", stdout=out)
    token = out.getvalue().strip()
    assert ApiToken.objects.get().name == "ci"
    assert client.get("/api/v1/projects", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 200


def test_command_refuses_an_unknown_user(db):
    with pytest.raises(CommandError, match="No user named 'ghost'"):
        call_command("create_api_token", "ghost")


def test_profile_is_linked_from_the_user_menu(owner_client):
    assert f'href="{reverse("profile")}"' in owner_client.get(reverse("jobs:list")).content.decode()


def test_a_token_records_its_use_at_most_once_a_minute(client, owner):
    # A write, and its commit, on every API request a script makes (a CLI polling its
    # jobs, a burst of submissions) for a column the profile page shows to the minute.
    row, token = ApiToken.issue(user=owner)
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    assert client.get("/api/v1/projects", **bearer).status_code == 200
    first = ApiToken.objects.get().last_used_at
    assert first is not None
    with CaptureQueriesContext(connection) as queries:
        assert client.get("/api/v1/projects", **bearer).status_code == 200
    table = f'"{ApiToken._meta.db_table}"'
    assert not [q["sql"] for q in queries if q["sql"].startswith(f"UPDATE {table}")]
    assert ApiToken.objects.get().last_used_at == first
    ApiToken.objects.filter(pk=row.pk).update(last_used_at=first - timedelta(seconds=61))
    assert client.get("/api/v1/projects", **bearer).status_code == 200
    assert ApiToken.objects.get().last_used_at > first
