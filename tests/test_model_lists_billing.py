"""What an account may not use is marked, with the reason, wherever models are listed.

Issue 18, point 2: the New job form's model and spec lists, the free panel
(on the form and the Resources page) and ``GET /api/v1/resources/free``
offered V100 to a free account as if usable; submit then refused it. They
now read the rule submit applies (``billing/rules.py``).
"""

import re
from decimal import Decimal

import pytest

from billing.accounts import account_for_user
from billing.models import FreeGrant
from resources.models import SiteSettings
from tests.factories import SpecFactory
from tests.job_site import build_site, form_post

pytestmark = pytest.mark.django_db
URL = "/jobs/new/"
HTMX = {"HTTP_HX_REQUEST": "true"}
FREE_TIER_ONLY = "may use only the free-tier GPU models (P4)"
NOT_V100 = "may use only the free-tier GPU models (P4), not V100"


@pytest.fixture
def free_site(project, owner):
    return build_site(project=project)  # no billing: P4 only


def use_up_free_hours(owner) -> None:
    account_for_user(user=owner)
    FreeGrant.objects.filter(account__user=owner).update(
        card_hours=Decimal(1), used_card_seconds=Decimal(3600)
    )


def free_rows(client) -> dict[str, dict]:
    response = client.get("/api/v1/resources/free")
    assert response.status_code == 200, response.content
    return {row["name"]: row for row in response.json()["gpu_models"]}


def groups(html: str, name: str) -> dict[str, list[str]]:
    """The option values of select ``name``, by optgroup label ("" outside any group)."""
    select = re.search(rf'<select name="{name}"[^>]*>(.*?)</select>', html, re.S).group(1)
    found: dict[str, list[str]] = {}
    for label, body in re.findall(r'<optgroup label="([^"]*)">(.*?)</optgroup>', select, re.S):
        found[label] = re.findall(r'value="([^"]*)"', body)
    outside = re.sub(r"<optgroup.*?</optgroup>", "", select, flags=re.S)
    found[""] = re.findall(r'value="([^"]*)"', outside)
    return found


def test_the_api_marks_the_models_a_free_account_may_not_use(owner_client, free_site):
    rows = free_rows(owner_client)
    assert rows["P4"]["available_to_you"] is True
    assert rows["P4"]["not_available_reason"] is None
    for name in ("V100", "V100-32G", "*V100"):
        assert rows[name]["available_to_you"] is False, name
        assert FREE_TIER_ONLY in rows[name]["not_available_reason"], name


def test_with_billing_every_model_is_available(owner_client, owner, free_site):
    account = account_for_user(user=owner)
    account.billing_enabled = True
    account.save(update_fields=["billing_enabled"])
    assert all(row["available_to_you"] for row in free_rows(owner_client).values())


def test_used_up_free_hours_mark_the_free_tier_model(owner_client, owner, free_site):
    use_up_free_hours(owner)
    p4 = free_rows(owner_client)["P4"]
    assert p4["available_to_you"] is False
    assert "card-hours are used up" in p4["not_available_reason"]


def test_the_form_lists_the_models_the_account_may_not_use_apart(owner_client, free_site):
    html = owner_client.get(URL).content.decode()
    found = groups(html, "gpu_model")
    assert found[""] == ["P4"]
    [(label, values)] = [(k, v) for k, v in found.items() if k]
    assert "Needs billing" in label
    assert set(values) == {"*V100", "V100", "V100-32G"}


def test_a_model_the_account_may_not_use_says_why_as_soon_as_it_is_chosen(owner_client, free_site):
    data = form_post(gpu_model="V100", _action="apply", _panel="resources")
    html = owner_client.post(URL, data, **HTMX).content.decode()
    field = re.search(r'id="field-gpu_model".*?</div>', html, re.S).group(0)
    assert NOT_V100 in field
    summary = re.search(r'<p class="summary[^"]*"[^>]*>(.*?)</p>', html, re.S).group(1)
    assert NOT_V100 in summary


def test_vgpu_mode_of_a_free_account_says_why_no_model_is_usable(owner_client, free_site):
    data = form_post(kind="vgpu", gpu_model="P4", _action="apply", _panel="resources")
    html = owner_client.post(URL, data, **HTMX).content.decode()
    field = re.search(r'id="field-gpu_model".*?</div>', html, re.S).group(0)
    assert FREE_TIER_ONLY in field


def test_specs_of_models_the_account_may_not_use_are_listed_apart(owner_client, free_site):
    site_settings = SiteSettings.load()
    site_settings.spec_management_enabled = True
    site_settings.save()
    SpecFactory(name="P4 × 1", gpu_model=free_site.p4)
    SpecFactory(name="V100 × 1", gpu_model=free_site.v100)
    found = groups(owner_client.get(URL).content.decode(), "spec")
    assert "P4 × 1" in found[""] and "V100 × 1" not in found[""]
    assert any("Needs billing" in label and "V100 × 1" in v for label, v in found.items())


def test_the_resources_page_marks_the_models_with_the_reason(owner_client, free_site):
    html = owner_client.get("/resources/").content.decode()
    row = re.search(r'<th scope="row">V100<.*?</tr>', html, re.S).group(0)
    assert "Needs billing" in row
    assert FREE_TIER_ONLY in html
    p4 = re.search(r'<th scope="row">P4<.*?</tr>', html, re.S).group(0)
    assert "Needs billing" not in p4
