"""The jobs list as a person uses it all day: rows follow the jobs, reasons wrap, search."""

from playwright.sync_api import expect

from jobs.models import Job
from tests.browser.conftest import screenshot
from tests.factories import JobFactory

LONG_REASON = (
    "Waiting for resources: needs a node with 1 free P4 card, 12 CPU cores and 40 GiB of"
    " memory; none has them now, and the next one frees at the earliest in 2 hours"
)


def test_states_refresh_in_place_and_a_long_reason_wraps(pages, site, owner, member):
    waiting = JobFactory(
        owner=owner,
        project=site.project,
        gpu_model=site.p4,
        name="sweep-1",
        state=Job.State.RESOURCE_WAIT,
        state_reason=LONG_REASON,
        queue_position=1,
    )
    JobFactory(owner=member, project=site.project, gpu_model=site.p4, name="members-job")
    page = pages.open(owner, "/jobs/", width=1100)
    row = page.locator("tr", has_text="sweep-1")
    expect(row).to_contain_text("1 × P4")
    expect(page.locator("tr", has_text="members-job")).to_contain_text(member.username)
    # The reason wraps inside the table's card: neither the page nor the card scrolls sideways.
    card = page.locator(".table-wrap")
    assert card.evaluate("el => el.scrollWidth - el.clientWidth") <= 0
    screenshot(page, "jobs-list-waiting")

    page.evaluate("() => { window.notReloaded = true; }")
    Job.objects.filter(pk=waiting.pk).update(
        state=Job.State.RUNNING, state_reason="", queue_position=None
    )
    expect(row.locator(".badge")).to_have_text("Running", timeout=15_000)
    assert page.evaluate("() => window.notReloaded") is True


def test_search_and_sort_by_name(pages, site, owner):
    for name in ("sweep-b", "sweep-a", "eval"):
        JobFactory(owner=owner, project=site.project, name=name)
    page = pages.open(owner, "/jobs/")
    page.get_by_label("Search by name").fill("sweep")
    page.get_by_label("Search by name").press("Enter")
    expect(page.locator("tbody tr")).to_have_count(2)
    page.get_by_role("link", name="Name").click()
    expect(page.locator("tbody tr").first).to_contain_text("sweep-a")
    page.get_by_role("link", name="Name").click()
    expect(page.locator("tbody tr").first).to_contain_text("sweep-b")
    expect(page.get_by_label("Search by name")).to_have_value("sweep")
