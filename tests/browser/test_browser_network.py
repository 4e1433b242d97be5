"""Chromium runs in a network of its own (tests/support/browser_network.py).

On the shared test host, other workers' jobs add and remove interfaces all the time;
Chromium in the host's network aborted a page's requests with ERR_NETWORK_CHANGED.
"""

from __future__ import annotations

import http.server
import os
import subprocess
import threading

import pytest
from playwright.sync_api import Error as PlaywrightError

from tests.support.browser_network import BrowserNetwork
from tests.support.workers import worker_index


class Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"the host's loopback")

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def host_loopback_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()


def test_chromium_sees_no_interface_of_the_host_but_reaches_the_live_server(
    browser, live_server, host_loopback_server
):
    with pytest.raises(PlaywrightError, match="ERR_CONNECTION_REFUSED"):
        browser.new_page().goto(f"http://127.0.0.1:{host_loopback_server}/")  # its own
    page = browser.new_page()
    page.goto(f"{live_server.url}/accounts/login/")
    assert page.url.startswith("http://localhost:")  # the name keeps the origin trustworthy
    assert page.locator("input[name=password]").count() == 1


def test_chromiums_network_is_made_before_the_first_test_and_kept_until_the_last():
    """Made per test process, a worker's veth left the host at its last test while other
    workers' job-network tests were probing the host's addresses: one of them, gone, was
    routed out and answered. The run's first process makes it once, removes it at the end."""
    network = BrowserNetwork.from_environment()
    assert network.namespace is not None
    assert network.namespace.endswith(str(os.getpid() if worker_index() is None else os.getppid()))
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert network.namespace in namespaces
