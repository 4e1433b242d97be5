"""The job page while a job runs, as its owner uses it: log first, whole, searchable."""

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import screenshot
from tests.running_job import running_job


@pytest.fixture
def running(settings, tmp_path, transactional_db, project, owner):
    settings.TRAINYARD_NODE_ROOT = tmp_path / "nodes"
    return running_job(owner=owner, project=project)


def test_the_log_comes_first_wraps_follows_and_is_searched(pages, running, owner):
    page = pages.open(owner, f"/jobs/{running.job.pk}/")
    log = page.locator("pre.log")
    expect(log).to_contain_text("line 500")
    # First on the page, above the state and the request.
    assert log.bounding_box()["y"] < page.locator("#state-title").bounding_box()["y"]
    # A long line wraps: the log never scrolls sideways.
    expect(log).to_contain_text("END-OF-LONG-LINE")
    assert log.evaluate("el => el.scrollWidth - el.clientWidth") <= 0
    follow = page.get_by_label("Follow the log")
    expect(follow).to_be_checked()
    follow.uncheck()
    # A poll (every 2 s) keeps the toggle as the reader left it.
    page.wait_for_timeout(2_500)
    expect(follow).not_to_be_checked()
    screenshot(page, "job-page-running")

    page.get_by_label("Search the log").fill("needle")
    page.get_by_label("Search the log").press("Enter")
    expect(log).to_contain_text("line 7 needle")
    expect(log).not_to_contain_text("line 500")
    page.get_by_label("Search the log").fill("")
    page.get_by_label("Search the log").press("Enter")
    expect(log).to_contain_text("line 500")
    expect(log).not_to_contain_text("line 100\n")

    page.get_by_label("Lines").select_option("1000")
    expect(log).to_contain_text("line 1\n")


def test_where_to_connect_is_copied_with_one_click(pages, running, owner):
    page = pages.open(owner, f"/jobs/{running.job.pk}/")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    env = page.locator(".env-table")
    expect(env.locator("tr", has_text="TRAINYARD_PORT_8080")).to_contain_text("40123")
    expect(env.locator("tr", has_text="TRAINYARD_DEADLINE")).to_contain_text(
        str(running.deadline_epoch)
    )
    ports = page.locator("#published-ports")
    expect(ports).to_contain_text("10.0.0.5:40123")
    ports.get_by_role("button", name="Copy").click()
    expect(ports.get_by_role("button", name="Copied")).to_be_visible()
    assert page.evaluate("() => navigator.clipboard.readText()") == "10.0.0.5:40123"


class _Held:
    """Holds the panel's requests until released one by one, so that a test can cross a
    poll's answer with a search's in either order."""

    def __init__(self, page, job_pk):
        self.page = page
        self.routes = []
        self.holding = True
        page.route(re.compile(rf"/jobs/{job_pk}/runtime"), self._route)

    def _route(self, route):
        if self.holding:
            self.routes.append(route)
        else:
            route.continue_()

    def wait_for(self, count):
        while len(self.routes) < count:
            self.page.wait_for_timeout(50)
        self.holding = False

    def answer(self, index):
        url = self.routes[index].request.url
        with self.page.expect_response(url):
            self.routes[index].continue_()
        self.page.wait_for_timeout(200)  # swapped and settled


@pytest.mark.parametrize("first", ["poll", "search"])
def test_a_poll_and_a_search_crossing_show_the_search(pages, running, owner, first):
    page = pages.open(owner, f"/jobs/{running.job.pk}/")
    log = page.locator("pre.log")
    expect(log).to_contain_text("line 500")
    held = _Held(page, running.job.pk)
    held.wait_for(1)  # a poll is in flight
    held.holding = True
    page.get_by_label("Search the log").fill("needle")
    page.get_by_label("Search the log").press("Enter")
    held.wait_for(2)  # and the search
    poll, search = held.routes
    assert "log_q=needle" in search.request.url and "log_q=needle" not in poll.request.url
    for index in (0, 1) if first == "poll" else (1, 0):
        held.answer(index)
    expect(log).to_contain_text("line 7 needle")
    expect(log).not_to_contain_text("line 500")
