"""The billing page with real usage: the free-hours bar, the chart, the statement."""

from datetime import timedelta

from django.utils import timezone
from playwright.sync_api import expect

from billing.services import account_for_user, usage_accrue
from jobs.models import Job
from tests.billing_cast import attempt_of, job_on, set_price
from tests.browser.conftest import screenshot


def test_billing_page_shows_the_free_hours_bar_and_the_chart_of_the_jobs_usage(pages, site, owner):
    now = timezone.now().replace(minute=0, second=0, microsecond=0)
    set_price(site.p4, "3.00", valid_from=now - timedelta(days=400))
    job = job_on(site.p4, owner=owner, project=site.project, name="on-p4", gpu_count=1)
    # Inside one month whatever today is: two card-hours ending this hour.
    start = max(now - timedelta(hours=2), now.replace(day=1, hour=0))
    attempt_of(job, started=start, ended=now)
    usage_accrue(now=now + timedelta(minutes=5))
    hours = round((now - start).total_seconds() / 3600)

    page = pages.open(owner, f"/billing/?month={now:%Y-%m}")
    bar = page.get_by_role("progressbar", name="Free P4 card-hours used")
    expect(bar).to_be_visible()
    expect(page.locator(".grant-head")).to_contain_text(f"{hours}.00 of")
    assert float(bar.get_attribute("aria-valuenow")) > 0 or hours == 0
    chart = page.locator("figure.chart svg").first
    expect(chart).to_be_visible()
    assert chart.locator("rect").count() >= (1 if hours else 0)
    expect(page.locator("#statement")).to_contain_text("P4")
    screenshot(page, "billing")


def test_admin_confirms_enabling_billing_and_disables_it_again_on_the_record(
    pages, site, member, admin_user
):
    account = account_for_user(user=member)
    page = pages.open(admin_user, f"/billing/accounts/{account.pk}/")

    page.get_by_role("link", name="Enable billing").click()
    expect(page.get_by_role("heading", name="Enable billing for member?")).to_be_visible()
    expect(page.locator("main")).to_contain_text("charged at the price list")
    account.refresh_from_db()
    assert not account.billing_enabled  # asking changed nothing
    screenshot(page, "billing-enable-confirm")
    page.get_by_role("button", name="Enable billing").click()
    expect(page.locator(".messages")).to_contain_text("Billing enabled for member.")
    account.refresh_from_db()
    assert account.billing_enabled

    paid_job = job_on(
        site.v100, owner=member, project=site.project, state=Job.State.QUOTA_WAIT, name="big-v100"
    )
    free_job = job_on(
        site.p4, owner=member, project=site.project, state=Job.State.QUOTA_WAIT, name="small-p4"
    )
    page.get_by_role("link", name="Disable billing").click()
    expect(page.get_by_role("heading", name="Disable billing for member?")).to_be_visible()
    expect(page.locator("main")).to_contain_text("big-v100")
    expect(page.locator("main")).not_to_contain_text("small-p4")
    screenshot(page, "billing-disable-confirm")
    page.get_by_role("button", name="Disable billing").click()

    expect(page.locator(".messages")).to_contain_text("Billing disabled for member.")
    expect(page.locator("#account-title ~ p").first).to_contain_text("Billing disabled on")
    expect(page.locator("#account-title ~ p").first).to_contain_text("by boss")
    expect(page.locator("#events-title ~ ul")).to_contain_text("Billing disabled by boss")
    expect(page.get_by_role("link", name="Enable billing")).to_be_visible()
    screenshot(page, "billing-disabled-account")
    paid_job.refresh_from_db()
    free_job.refresh_from_db()
    assert paid_job.state == Job.State.STOPPED
    assert free_job.state == Job.State.QUOTA_WAIT
