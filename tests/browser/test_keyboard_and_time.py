"""The keyboard alone submits a job; times show in the browser's time zone."""

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from django.utils import formats, timezone, translation
from playwright.sync_api import Page, expect

from jobs.models import Job
from tests.browser.conftest import BROWSER_TZ, settle
from tests.factories import JobFactory


def focused(page: Page, selector: str) -> bool:
    return page.evaluate("(s) => document.activeElement.matches(s)", selector)


def tab_to(page: Page, selector: str, *, limit: int = 60) -> None:
    """Press Tab until the focus is on ``selector``; fail when it never gets there."""
    for _ in range(limit):
        if focused(page, selector):
            return
        page.keyboard.press("Tab")
    raise AssertionError(f"{limit} presses of Tab never reached {selector}")


def test_a_job_is_submitted_with_the_keyboard_alone(pages, site, owner):
    page = pages.open(owner, "/jobs/new/")
    page.keyboard.press("Tab")
    skip = page.get_by_role("link", name="Skip to content")
    expect(skip).to_be_focused()
    assert skip.bounding_box()["x"] >= 0  # shown when focused
    page.keyboard.press("Enter")
    expect(page).to_have_url(pages.url("/jobs/new/#main"))

    tab_to(page, "#id_name")
    # The focus ring is visible on whatever the keyboard reaches.
    assert page.evaluate("getComputedStyle(document.activeElement).outlineStyle") != "none"
    page.keyboard.type("by-keys")

    # Arrow keys move through a radio group; the re-rendered section keeps the focus.
    tab_to(page, "input[name=kind]:checked")
    for _ in range(3):
        if focused(page, "input[name=kind][value=cpu]"):
            break
        page.keyboard.press("ArrowDown")
        settle(page)
    expect(page.get_by_label("CPU", exact=True)).to_be_checked()
    expect(page.get_by_label("CPU", exact=True)).to_be_focused()

    tab_to(page, "#id_cpu_cores")
    page.keyboard.press("ControlOrMeta+a")
    page.keyboard.type("2")
    tab_to(page, "#id_command")
    page.keyboard.type("echo typed")
    tab_to(page, "button.primary[value=submit]")
    page.keyboard.press("Enter")

    expect(page.locator("h1")).to_contain_text("by-keys")
    job = Job.objects.get(name="by-keys")
    assert (job.resource_kind, job.cpu_milli, job.command) == ("cpu", 2000, "echo typed")


def test_times_are_shown_in_the_browsers_time_zone(pages, site, owner):
    submitted = datetime(2026, 3, 1, 12, 34, tzinfo=UTC)
    job = JobFactory(owner=owner, project=site.project, gpu_model=site.v100, name="tz")
    Job.objects.filter(pk=job.pk).update(submitted_at=submitted)
    with translation.override("en"):
        local = formats.date_format(
            timezone.localtime(submitted, ZoneInfo(BROWSER_TZ)), "SHORT_DATETIME_FORMAT"
        )
        utc = formats.date_format(submitted, "SHORT_DATETIME_FORMAT")
    assert local != utc

    # The first page tells the server the browser's zone; every page after shows it.
    page = pages.open(owner, "/jobs/")
    page.goto(pages.url(f"/jobs/{job.pk}/"))
    submitted_cell = page.locator("dt:text-is('Submitted') + dd")
    expect(submitted_cell).to_have_text(local)
