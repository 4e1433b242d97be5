"""Every page of the navigation in a real browser: login, languages, accessibility, layout."""

import pytest
from django.conf import settings
from playwright.sync_api import expect

from tests.browser.conftest import axe_violations, horizontal_overflow, screenshot
from tests.browser_support import host_cookie
from tests.factories import JobFactory

NAV_PAGES = ["/jobs/", "/jobs/new/", "/resources/", "/billing/", "/profile/"]


@pytest.fixture
def job(site, owner):
    return JobFactory(
        owner=owner, project=site.project, gpu_model=site.v100, name="resnet", command="echo hi"
    )


def test_log_in_with_the_form_and_switch_to_chinese_and_back(pages, site, owner):
    owner.set_password("s3cret-pass")
    owner.save()
    page = pages.open(None, "/jobs/")
    expect(page.locator("h1")).to_have_text("Log in to Trainyard")
    page.get_by_label("Username").fill("owner")
    page.get_by_label("Password").fill("s3cret-pass")
    page.get_by_label("Password").press("Enter")
    expect(page).to_have_url(pages.url("/jobs/"))
    expect(page.get_by_role("navigation", name="Main")).to_contain_text("New job")

    page.get_by_label("Language").select_option("zh-hans")
    expect(page.locator("html")).to_have_attribute("lang", "zh-hans")
    expect(page.locator("nav.nav")).to_contain_text("资源")
    page.get_by_label("语言").select_option("en")
    expect(page.locator("html")).to_have_attribute("lang", "en")
    expect(page.locator("nav.nav")).to_contain_text("New job")


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_every_page_of_the_navigation_renders_without_console_errors(
    pages, site, admin_user, language
):
    site.project.members.add(admin_user)
    job = JobFactory(owner=admin_user, project=site.project, gpu_model=site.v100)
    page = pages.open(admin_user, "/jobs/")
    page.context.add_cookies([host_cookie(pages.url("/"), settings.LANGUAGE_COOKIE_NAME, language)])
    links = page.locator("nav.nav a")
    hrefs = [links.nth(i).get_attribute("href") for i in range(links.count())]
    assert set(NAV_PAGES[:4]) <= set(hrefs)
    for href in [*hrefs, "/profile/", f"/jobs/{job.pk}/"]:
        response = page.goto(pages.url(href))
        assert response.status == 200, href
        expect(page.locator("html")).to_have_attribute("lang", language)
        expect(page.locator("h1").first).to_be_visible()


def test_main_pages_have_no_serious_accessibility_violations(pages, site, owner, job):
    page = pages.open(owner, "/jobs/")
    found = {}
    for path in [
        "/jobs/",
        "/jobs/new/",
        f"/jobs/{job.pk}/",
        "/resources/",
        "/billing/",
        "/profile/",
    ]:
        page.goto(pages.url(path))
        found[path] = axe_violations(page)
    assert found == {path: [] for path in found}


@pytest.mark.parametrize("width", [375, 1440])
def test_layout_holds_at_phone_and_desktop_widths(pages, site, owner, job, width):
    page = pages.open(owner, "/jobs/", width=width)
    for path in ["/jobs/", "/jobs/new/", f"/jobs/{job.pk}/", "/resources/", "/billing/"]:
        page.goto(pages.url(path))
        assert horizontal_overflow(page) <= 0, f"{path} overflows at {width}px"
        screenshot(page, f"{width}{path.replace(str(job.pk), 'job').replace('/', '-')}")
