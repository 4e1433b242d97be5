"""Stop job asks first: a confirmation step that works without script (the CSP is strict)."""

from django.conf import settings
from playwright.sync_api import expect

from jobs.models import Job
from jobs.services.submit import job_submit
from tests.browser_support import host_cookie
from tests.job_site import job_body


def test_stop_job_asks_for_confirmation_and_cancel_keeps_the_job(pages, site, owner):
    job = job_submit(user=owner, data=job_body(name="keep-me"))
    page = pages.open(owner, f"/jobs/{job.pk}/")

    page.get_by_role("button", name="Stop job").click()
    # Nothing is stopped yet: the page says what stopping does and asks.
    expect(page.get_by_role("heading", level=1)).to_contain_text(f"Stop job #{job.pk}")
    expect(page.locator("main")).to_contain_text("keep-me")
    job.refresh_from_db()
    assert job.state == Job.State.QUOTA_WAIT and job.stop_requested_at is None

    page.get_by_role("link", name="Cancel").click()
    expect(page.locator("#job-state-badge")).to_contain_text("Waiting for quota")
    job.refresh_from_db()
    assert job.state == Job.State.QUOTA_WAIT

    page.get_by_role("button", name="Stop job").click()
    page.get_by_role("button", name=f"Yes, stop job #{job.pk}").click()
    expect(page.locator("#job-state-badge")).to_contain_text("Stopped")
    expect(page.locator(".messages")).to_contain_text(f"Stop requested for job #{job.pk}")


def test_the_confirmation_is_in_chinese_too(pages, site, owner):
    job = job_submit(user=owner, data=job_body(name="keep-me"))
    page = pages.open(owner, f"/jobs/{job.pk}/")
    page.context.add_cookies(
        [host_cookie(pages.url("/"), settings.LANGUAGE_COOKIE_NAME, "zh-hans")]
    )
    page.goto(pages.url(f"/jobs/{job.pk}/stop/"))
    expect(page.get_by_role("heading", level=1)).to_contain_text(f"停止任务 #{job.pk}")
    expect(page.get_by_role("link", name="取消")).to_be_visible()
