"""The billing page with real usage: the free-hours bar, the chart, the statement."""

from datetime import timedelta

from django.utils import timezone
from playwright.sync_api import expect

from accounting.services import usage_accrue
from billing.accounts import account_for_user
from jobs.models import Job
from tests.billing_cast import LATER, T0, attempt_of, job_on, set_price
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


def march_usage(site, owner, member):
    """March 2026: the owner (paid) 2 V100 card-hours and 8 core-hours; member 0.295 P4 hours."""
    set_price(site.p4, "3.00")
    set_price(site.v100, "12.00")
    set_price(None, "0.20")
    gpu = job_on(site.v100, owner=owner, project=site.project, name="paid-v100", gpu_count=1)
    attempt_of(gpu, started=T0, ended=T0 + timedelta(hours=2))
    cpu = job_on(
        None, owner=owner, project=site.project, name="cpu", resource_kind="cpu", gpu_count=0
    )
    cpu.cpu_milli = 4000
    cpu.save(update_fields=["cpu_milli"])
    attempt_of(cpu, started=T0, ended=T0 + timedelta(hours=2))
    free = job_on(site.p4, owner=member, project=site.project, name="free-p4", gpu_count=1)
    attempt_of(free, started=T0, ended=T0 + timedelta(seconds=1062))  # 0.295 card-hours
    usage_accrue(now=LATER)


def cell_texts(row) -> list[str]:
    return [text.strip() for text in row.locator("th, td").all_inner_texts()]


def test_overview_totals_fill_every_column_and_every_amount_carries_its_currency(
    pages, site, owner, member, admin_user
):
    march_usage(site, owner, member)
    page = pages.open(admin_user, "/billing/overview/?month=2026-03")
    accounts = page.locator("table").last
    headers = cell_texts(accounts.locator("thead tr"))
    total = accounts.locator("tfoot tr")
    spans = total.locator("th, td").evaluate_all("cells => cells.map(c => c.colSpan)")
    assert spans == [1] * len(headers), (headers, cell_texts(total))
    assert all(cell_texts(total)), cell_texts(total)
    # Card-hours and core-hours are never added together.
    assert "Billable card-hours" in headers and "Billable core-hours" in headers
    amount_at = headers.index("Amount")
    for row in accounts.locator("tbody tr, tfoot tr").all():
        assert cell_texts(row)[amount_at].endswith("CNY"), cell_texts(row)
    for row in page.locator("table").first.locator("tbody tr").all():
        assert cell_texts(row)[-1].endswith("CNY"), cell_texts(row)

    top = page.locator("#top-users-title ~ ol li")
    expect(top.first).to_contain_text("owner")
    expect(top.first).to_contain_text("25.60 CNY")  # 2 h × 12.00 + 8 core-hours × 0.20
    expect(top.first).to_contain_text("2.00 card-hours")
    expect(top.first).to_contain_text("8.00 core-hours")
    expect(top.nth(1)).to_contain_text("member")
    expect(top.nth(1)).to_contain_text("0.30 card-hours")
    screenshot(page, "billing-overview")


def test_free_hours_add_up_and_the_chart_has_round_distinct_ticks(pages, site, owner, member):
    march_usage(site, owner, member)
    page = pages.open(member, "/billing/?month=2026-03")

    expect(page.locator(".grant-head")).to_contain_text(
        "0.30 of 100 free card-hours used, 99.70 remaining"
    )
    chart = page.locator("figure.chart svg").first
    values = chart.locator("text[text-anchor=end]").all_text_contents()
    days = chart.locator("text[text-anchor=middle]").all_text_contents()
    assert values == ["0", "0.1", "0.2", "0.3"]
    assert days == ["5", "10", "15", "20", "25", "30"]
    screenshot(page, "billing-free-hours")
