"""The billing page with real usage: the free-hours bar, the chart, the statement."""

from datetime import timedelta

from django.utils import timezone
from playwright.sync_api import expect

from billing.services import usage_accrue
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
