"""One Chromium for every browser test: Debian's build, driven by Playwright's Python package.

Registered as a pytest plugin in ``tests/conftest.py`` so ``tests/test_job_form_browser.py``
and ``tests/browser/`` launch it the same way.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from django.conf import settings
from django.db import connections
from django.test import Client
from playwright.sync_api import Browser, BrowserContext, sync_playwright
from pytest_django.live_server_helper import LiveServer

from tests.support.browser_network import BrowserNetwork

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def browser_net() -> BrowserNetwork:
    """Chromium's own network namespace, made for the whole run (tests/support)."""
    return BrowserNetwork.from_environment()


class LocalhostLiveServer(LiveServer):
    @property
    def url(self) -> str:
        """``localhost``, as Chromium names the server (tests/support/browser_network.py)."""
        return f"http://localhost:{self.thread.port}"


@pytest.fixture(scope="session")
def live_server(browser_net) -> Iterator[LiveServer]:
    """pytest-django's live server, on the address Chromium reaches from its namespace."""
    server = LocalhostLiveServer(browser_net.listen_address)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def chromium_launcher(browser_net, tmp_path_factory) -> str:
    return browser_net.launcher(tmp_path_factory.mktemp("chromium"), CHROMIUM)


@pytest.fixture
def browser(chromium_launcher) -> Iterator[Browser]:
    # Playwright's sync API runs an event loop in this thread; the ORM calls the
    # test makes between page actions are still synchronous and safe.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            chromium = playwright.chromium.launch(
                executable_path=chromium_launcher, headless=True, args=CHROMIUM_ARGS
            )
            yield chromium
            chromium.close()
            # The ORM calls made while Playwright runs use a connection of their own
            # (its greenlet has its own context): close it there, inside Playwright,
            # or it outlives the test and the test database cannot be dropped.
            connections.close_all()
    finally:
        del os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"]


def signed_in_context(browser: Browser, live_server, user, **options) -> BrowserContext:
    """A browser context already signed in as ``user`` (the login form has its own test)."""
    client = Client()
    client.force_login(user)
    context = browser.new_context(**options)
    session = client.cookies[settings.SESSION_COOKIE_NAME].value
    context.add_cookies([host_cookie(live_server.url, settings.SESSION_COOKIE_NAME, session)])
    return context


def host_cookie(url: str, name: str, value: str) -> dict:
    """One of the site's __Host- cookies (Secure, Path=/, host-only) for ``add_cookies``:
    Chromium keeps them on http://localhost too; Playwright's "url" form refuses Secure there."""
    return {
        "name": name,
        "value": value,
        "domain": urlsplit(url).hostname,
        "path": "/",
        "secure": True,
    }
