import os

import pytest
from django.conf import settings

from tests.factories import ProjectFactory, UserFactory


def pytest_configure(config: pytest.Config) -> None:
    # CI sets this: a missing DATABASE_URL must fail loudly, never fall back to SQLite.
    if os.environ.get("TRAINYARD_REQUIRE_SERVICES"):
        engine = settings.DATABASES["default"]["ENGINE"]
        if "postgresql" not in engine:
            raise pytest.UsageError(f"CI requires PostgreSQL, got {engine}")
        if not os.environ.get("REDIS_URL"):
            raise pytest.UsageError("CI requires REDIS_URL")


@pytest.fixture
def owner(db):
    return UserFactory(username="owner")


@pytest.fixture
def member(db):
    return UserFactory(username="member")


@pytest.fixture
def outsider(db):
    return UserFactory(username="outsider")


@pytest.fixture
def admin_user(db):
    return UserFactory(username="boss", is_staff=True, is_superuser=True)


@pytest.fixture
def project(owner, member):
    project = ProjectFactory(name="vision", owner=owner)
    project.members.add(member)
    return project


@pytest.fixture
def owner_client(client, owner):
    client.force_login(owner)
    return client


@pytest.fixture
def admin_client_(client, admin_user):
    client.force_login(admin_user)
    return client
