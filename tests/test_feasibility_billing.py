"""The feasibility check applies submit's billing rules too (issue 18, point 2).

A free account asked for 2 × V100: "Feasible… fits your quota", and submit
then refused it for billing. The check, the API's and the form's, now says
"not feasible" with the same reason submit gives.
"""

import pytest
from playwright.sync_api import expect

from tests.job_site import build_site
from tests.test_job_form_browser import signed_in_page

JSON = "application/json"
FREE_TIER_ONLY = "may use only the free-tier GPU models (P4), not V100"


@pytest.fixture
def free_site(transactional_db, project, owner):
    return build_site(project=project)  # no billing: P4 only


def feasibility(client, resources: dict) -> dict:
    response = client.post(
        "/api/v1/resources/feasibility", {"resources": resources}, content_type=JSON
    )
    assert response.status_code == 200, response.content
    return response.json()


def test_a_model_the_account_may_not_use_is_not_feasible_with_submits_reason(
    owner_client, free_site
):
    answer = feasibility(owner_client, {"kind": "gpu", "gpu_model": "V100", "gpu_count": 2})
    assert answer["feasible"] is False
    assert any(FREE_TIER_ONLY in reason for reason in answer["reasons"]), answer


def test_the_free_tier_model_stays_feasible(owner_client, free_site):
    answer = feasibility(owner_client, {"kind": "gpu", "gpu_model": "P4", "gpu_count": 1})
    assert answer == {"feasible": True, "reasons": []}


def test_the_form_says_not_feasible_for_a_model_the_account_may_not_use(
    browser, live_server, free_site, owner
):
    page = signed_in_page(browser, live_server, owner)
    page.get_by_label("GPU model").select_option("V100")
    page.wait_for_function("() => !document.querySelector('.htmx-request')")
    page.get_by_role("button", name="Check feasibility").click()
    panel = page.locator("#feasibility-panel")
    expect(panel).to_contain_text("Not feasible")
    expect(panel).to_contain_text(FREE_TIER_ONLY)
