"""Every page requires login; admin pages are for staff only."""

import pytest
from django.contrib import admin
from django.urls import reverse

pytestmark = pytest.mark.django_db

PAGES = ["jobs:list", "resources:overview", "billing:mine", "admin:index"]


@pytest.mark.parametrize("name", PAGES)
def test_anonymous_is_sent_to_login(client, name):
    response = client.get(reverse(name))
    assert response.status_code == 302
    assert "/login/" in response["Location"]


@pytest.mark.parametrize("name", ["jobs:list", "resources:overview", "billing:mine"])
def test_signed_in_user_sees_page(owner_client, name):
    response = owner_client.get(reverse(name))
    assert response.status_code == 200
    assert b"Trainyard" in response.content


def test_login_page_is_public(client):
    response = client.get(reverse("login"))
    assert response.status_code == 200
    assert b'name="username"' in response.content


def test_login_with_password_works(client, owner):
    response = client.post(reverse("login"), {"username": "owner", "password": "pw"})
    assert response.status_code == 302
    assert client.get(reverse("jobs:list")).status_code == 200


def test_logout_needs_post(owner_client):
    assert owner_client.get(reverse("logout")).status_code == 405
    assert owner_client.post(reverse("logout")).status_code == 302
    assert owner_client.get(reverse("jobs:list")).status_code == 302


def admin_changelists() -> list[str]:
    return [
        f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist"
        for model in admin.site._registry
    ]


@pytest.mark.parametrize("name", admin_changelists())
def test_admin_changelist_loads_for_staff(admin_client_, name):
    assert admin_client_.get(reverse(name)).status_code == 200


@pytest.mark.parametrize("name", admin_changelists())
def test_admin_changelist_refused_to_normal_user(owner_client, name):
    response = owner_client.get(reverse(name))
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


def test_admin_nav_link_only_for_staff(client, owner, admin_user):
    client.force_login(owner)
    assert b'href="/admin/"' not in client.get(reverse("jobs:list")).content
    client.force_login(admin_user)
    assert b'href="/admin/"' in client.get(reverse("jobs:list")).content
