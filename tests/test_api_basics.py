import pytest

from accounts.models import ApiToken
from tests.factories import GpuModelFactory, SpecFactory

pytestmark = pytest.mark.django_db


def test_api_requires_authentication(client):
    response = client.get("/api/v1/gpu-models")
    assert response.status_code == 401


def test_bearer_token_authenticates(client, owner):
    GpuModelFactory(name="V100")
    _row, token = ApiToken.issue(user=owner)
    response = client.get("/api/v1/gpu-models", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200
    assert [m["name"] for m in response.json()] == ["V100"]


def test_wrong_token_is_refused(client, owner):
    ApiToken.issue(user=owner)
    response = client.get("/api/v1/gpu-models", HTTP_AUTHORIZATION="Bearer ty_wrong")
    assert response.status_code == 401


def test_specs_lists_enabled_only(owner_client):
    SpecFactory(name="on")
    SpecFactory(name="off", enabled=False)
    names = [s["name"] for s in owner_client.get("/api/v1/specs").json()]
    assert names == ["on"]


def test_projects_lists_only_the_users_projects(client, project, outsider, member):
    client.force_login(outsider)
    assert client.get("/api/v1/projects").json() == []
    client.force_login(member)
    assert [p["name"] for p in client.get("/api/v1/projects").json()] == ["vision"]


def test_openapi_document_is_served(owner_client):
    doc = owner_client.get("/api/v1/openapi.json").json()
    assert doc["openapi"].startswith("3.")
    assert "/api/v1/gpu-models" in doc["paths"]
