"""Pages outside the site's own templates under the Content-Security-Policy.

The ``pages`` fixture fails a test on any console error, and a refused inline
script or style is one; the site's own pages are proven by the other browser tests.
"""

from playwright.sync_api import expect

from tests.browser.conftest import screenshot


def test_the_api_docs_render_from_local_files(pages, owner):
    page = pages.open(owner, "/api/v1/docs")
    expect(page.locator("#swagger-ui")).to_contain_text("Trainyard API")
    expect(page.locator("#swagger-ui")).to_contain_text("/api/v1/jobs")
    screenshot(page, "api-docs")


def test_admin_date_widgets_and_list_filters_work(pages, site, admin_user):
    page = pages.open(admin_user, "/admin/billing/price/add/")
    page.get_by_role("link", name="Today").first.click()
    page.get_by_role("link", name="Now").first.click()
    date = page.locator("#id_valid_from_0").input_value()
    assert date and page.locator("#id_valid_from_1").input_value()
    page.goto(pages.url("/admin/resources/node/?state__exact=ready"))
    expect(page.locator("#result_list")).to_contain_text("v100-a")
    screenshot(page, "admin-under-csp")
