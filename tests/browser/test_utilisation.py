"""The staff's Utilisation page in Chromium: two held cards sampled idle for three hours,
the day's chart, the idle job listed; no serious accessibility violation, no overflow on a
phone, in English and Chinese."""

from datetime import UTC, datetime, timedelta

import pytest
from django.conf import settings
from playwright.sync_api import expect

from jobs.idle_cards import idle_cards_check
from jobs.models import Job
from resources.models import Node
from tests.browser.conftest import axe_violations, horizontal_overflow, screenshot
from tests.browser_support import host_cookie
from tests.factories import JobFactory
from tests.usage_cast import held, sampled


@pytest.fixture
def idle_job(site, owner):
    now = datetime.now(UTC).replace(microsecond=0)
    job = JobFactory(
        owner=owner,
        project=site.project,
        gpu_model=site.v100,
        name="sleepy",
        gpu_count=2,
        state=Job.State.RUNNING,
    )
    attempt = held(job, Node.objects.get(name="v100-a"), [0, 1], since=now - timedelta(hours=3))
    hour = timedelta(hours=1)
    sampled(attempt, {0: 0, 1: 2}, since=now - 3 * hour, until=now - hour, every=60)  # thinned
    sampled(attempt, {0: 0, 1: 2}, since=now - hour + timedelta(seconds=10), until=now)
    idle_cards_check(now)
    return job


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_staff_read_the_cards_the_day_and_the_idle_job(pages, admin_user, idle_job, language):
    page = pages.open(admin_user, "/jobs/")
    page.context.add_cookies([host_cookie(pages.url("/"), settings.LANGUAGE_COOKIE_NAME, language)])
    page.goto(pages.url("/resources/utilisation/"))
    header = {"en": "Utilisation", "zh-hans": "利用率"}[language]
    expect(page.locator("h1")).to_have_text(header)
    expect(page.get_by_test_id("cluster-cards")).to_have_text("0.02 / 2 / 21")
    expect(page.locator("#idle-title + .table-wrap")).to_contain_text("sleepy")
    expect(page.locator("figure.chart > svg rect.bar-held")).to_have_count(24)
    assert axe_violations(page) == []
    screenshot(page, f"utilisation-{language}")
    page.set_viewport_size({"width": 375, "height": 800})
    assert horizontal_overflow(page) <= 0
