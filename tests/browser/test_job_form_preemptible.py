"""New job's Preemptible checkbox: ticked, submitted, and said on the job's page."""

from playwright.sync_api import expect

from jobs.models import Job
from tests.browser.conftest import screenshot, settle


def test_a_ticked_preemptible_box_makes_a_preemptible_job(pages, site, owner):
    page = pages.open(owner, "/jobs/new/")
    page.get_by_label("Name", exact=True).fill("spare-cards")
    page.get_by_label("Startup command").fill("python train.py")
    box = page.get_by_label("Preemptible")
    expect(box).not_to_be_checked()
    box.check()
    settle(page)
    expect(box).to_be_checked()
    screenshot(page, "job-form-preemptible")
    page.get_by_role("button", name="Submit job").click()

    expect(page.locator("h1")).to_contain_text("spare-cards")
    request = page.locator("#request-title").locator("..")
    expect(request.locator("dt:text-is('Preemptible') + dd")).to_have_text("Yes")
    assert Job.objects.get(name="spare-cards").preemptible is True
    screenshot(page, "job-page-preemptible")
