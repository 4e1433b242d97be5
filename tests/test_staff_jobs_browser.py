"""An admin operates a user's job in a real Chromium: finds it in Jobs, opens it, stops it."""

import pytest
from playwright.sync_api import expect

from jobs.models import Job
from tests.browser_support import signed_in_context
from tests.factories import JobFactory, UserFactory


@pytest.fixture
def alices_job(transactional_db):
    return JobFactory(owner=UserFactory(username="alice"), name="alice-train")


def test_admin_finds_opens_and_stops_alices_job(browser, live_server, alices_job):
    staff = UserFactory(username="ops", is_staff=True)
    page = signed_in_context(browser, live_server, staff).new_page()
    page.goto(f"{live_server.url}/jobs/")
    page.get_by_role("link", name="alice-train").click()
    expect(page.locator("h1")).to_contain_text("alice-train")
    page.get_by_role("button", name="Stop job").click()
    # Stop job asks first, on a page of its own; only its button stops.
    page.get_by_role("button", name=f"Yes, stop job #{alices_job.pk}").click()
    expect(page.locator("body")).to_contain_text(f"Stop requested for job #{alices_job.pk}")
    assert Job.objects.get(pk=alices_job.pk).state == Job.State.STOPPED
