"""The Queue page as its readers use it: the order, why each waits, moving one's own jobs,
staff setting a priority; in English and Chinese, at a phone's width too."""

from playwright.sync_api import expect

from jobs.models import Job
from jobs.scheduler import run_pass
from resources.models import Node
from tests.browser.conftest import axe_violations, horizontal_overflow, screenshot
from tests.factories import JobFactory, UserFactory


def test_the_owner_moves_a_job_up_and_staff_raise_a_priority(pages, site, owner, admin_user):
    Node.objects.exclude(name="p4-a").update(state=Node.State.DOWN)
    small = {"gpu_model": site.p4, "cpu_milli": 4_000, "memory_mib": 16 * 1024}
    JobFactory(owner=UserFactory(username="carol"), name="holds-the-card", **small)
    run_pass()
    first, second = (
        JobFactory(owner=owner, project=site.project, name=name, **small)
        for name in ("first-sweep", "second-sweep")
    )
    run_pass()

    page = pages.open(owner, "/jobs/queue/", width=1200)
    rows = page.locator("tr[id^=queued-]")
    expect(rows).to_have_count(2)
    expect(rows.first).to_contain_text("first-sweep")
    expect(rows.first).to_contain_text("Waiting for resources: needs a node with 1 free P4 card")
    assert horizontal_overflow(page) <= 0
    assert page.locator(".table-wrap").evaluate("el => el.scrollWidth - el.clientWidth") <= 0
    screenshot(page, "queue-page")
    assert not axe_violations(page)
    page.get_by_role("button", name=f"Move job #{second.pk} up").click()
    expect(rows.first).to_contain_text("second-sweep")
    expect(page.get_by_role("button", name=f"Move job #{second.pk} up")).to_be_disabled()
    run_pass()
    assert Job.objects.get(pk=first.pk).queue_position == 2  # the pass takes the new order

    staff = pages.open(admin_user, "/jobs/queue/", width=1200)
    staff.get_by_label(f"Priority of job #{first.pk}").select_option(str(Job.Priority.HIGH))
    staff.get_by_label(f"Priority of job #{first.pk}").locator("xpath=..").get_by_role(
        "button", name="Set"
    ).click()
    expect(staff.locator("tr[id^=queued-]").first).to_contain_text("first-sweep")
    assert Job.objects.get(pk=first.pk).priority == Job.Priority.HIGH

    chinese = pages.open(owner, "/jobs/queue/", width=390)
    chinese.get_by_label("Language").select_option("zh-hans")
    expect(chinese.get_by_role("heading", name="队列")).to_be_visible()
    assert horizontal_overflow(chinese) <= 0
    screenshot(chinese, "queue-page-zh-phone")
