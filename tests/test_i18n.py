import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_language_switch_shows_chinese(owner_client):
    response = owner_client.post(reverse("set_language"), {"language": "zh-hans", "next": "/jobs/"})
    assert response.status_code == 302
    page = owner_client.get(reverse("jobs:list")).content.decode()
    assert "任务" in page
    owner_client.post(reverse("set_language"), {"language": "en", "next": "/jobs/"})
    assert "Jobs" in owner_client.get(reverse("jobs:list")).content.decode()
