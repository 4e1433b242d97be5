"""A mistyped address shows the site's own page not found, not a server's bare or debug page."""

from playwright.sync_api import expect

from tests.browser.conftest import screenshot


def test_a_mistyped_address_shows_the_sites_page_not_found(pages, site, owner):
    page = pages.open(owner, "/jobs/no-such-page/")
    expect(page.locator("h1")).to_have_text("Page not found")
    expect(page.get_by_role("navigation", name="Main")).to_contain_text("New job")
    screenshot(page, "page-not-found")
    page.get_by_role("link", name="Back to your jobs").click()
    expect(page).to_have_url(pages.url("/jobs/"))
    # The browser notes the 404 status itself; that is the one expected console line.
    pages.errors[:] = [e for e in pages.errors if "status of 404" not in e]
