"""A free account's P4 jobs in a real Chromium: its free hours are used, never held.

Issue 18, point 1, as a new user saw it: the first P4 job without a max run
time got one of all 100 free hours, and the second was refused with "0 of
100 remain (0 used, 100 held by your other unfinished jobs)".
"""

import pytest
from playwright.sync_api import expect

from jobs.models import Job
from tests.job_site import build_site
from tests.test_job_form_browser import signed_in_page


@pytest.fixture
def free_site(transactional_db, project, owner):
    return build_site(project=project)  # no billing: the free P4 hours only


def submit_p4_job(page, name: str) -> None:
    page.get_by_label("Name", exact=True).fill(name)
    page.get_by_label("GPU model").select_option("P4")
    page.wait_for_function("() => !document.querySelector('.htmx-request')")
    page.get_by_label("Startup command").fill("python train.py")
    page.get_by_role("button", name="Submit job").click()


def test_a_free_account_submits_a_second_p4_job_without_a_max_run_time(
    browser, live_server, free_site, owner
):
    page = signed_in_page(browser, live_server, owner)
    submit_p4_job(page, "first")
    expect(page.locator("h1")).to_contain_text("first")
    expect(page.locator("body")).not_to_contain_text("6000")
    page.goto(f"{live_server.url}/jobs/new/")
    submit_p4_job(page, "second")
    expect(page.locator("h1")).to_contain_text("second")
    expect(page.locator("body")).not_to_contain_text("held by your other unfinished jobs")
    assert list(Job.objects.order_by("pk").values_list("name", "max_runtime_minutes")) == [
        ("first", None),
        ("second", None),
    ]
