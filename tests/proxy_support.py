"""The authenticated proxy as ``make run`` starts it (real nginx, the project's rendered
configuration), in front of the test's live server; and a client that speaks to a port's
site by name without a resolver (``*.localhost`` is Chromium's, not glibc's)."""

from __future__ import annotations

import http.client
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from jobs.port_sites import COOKIE, PortSite
from jobs.proxy_nginx import ProxyPlaces, write_config
from tests.support.browser_network import BrowserNetwork
from tests.support.waiting import wait_until

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


@dataclass
class Proxy:
    port: int
    origin: str  # TRAINYARD_PROXY_ORIGIN while the test runs

    def get(self, site: PortSite, path: str = "/", cookie: str | None = None, **headers):
        """(status, headers, body) of a GET on ``site`` through the proxy."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        headers = {"Host": f"{site.host}:{self.port}", **headers}
        if cookie:
            headers["Cookie"] = f"{COOKIE}={cookie}"
        try:
            connection.request("GET", path, headers=headers)
            response = connection.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            connection.close()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def port_proxy(live_server, settings) -> Iterator[Proxy]:
    """nginx on a free loopback port, asking the live server; the site's settings name it."""
    if not Path(NGINX).exists():
        pytest.fail(
            "nginx is not installed (Debian: apt-get install nginx; deploy/test-host.sh does)"
        )
    port = _free_port()
    settings.TRAINYARD_PROXY_ORIGIN = f"http://jobs.localhost:{port}"
    settings.TRAINYARD_BASE_URL = live_server.url
    dashboard = urlsplit(live_server.url)
    address = socket.gethostbyname(dashboard.hostname)
    # Loopback, and where the tests' Chromium finds the host (tests/support/browser_network.py).
    listen = sorted({"127.0.0.1", BrowserNetwork.from_environment().host_address} - {"localhost"})
    places = ProxyPlaces(
        listen=[f"{host}:{port}" for host in listen],
        dashboard=f"{address}:{dashboard.port}",
        # Not under pytest's own folder (0700): nginx's workers run as nobody when root.
        folder=Path(tempfile.mkdtemp(prefix="trainyard-proxy-")),
    )
    places.folder.chmod(0o755)
    config = write_config(places)
    folder = places.folder
    nginx = subprocess.Popen(
        [NGINX, "-p", str(folder), "-c", str(config), "-g", "daemon off;"],
        stdout=subprocess.DEVNULL,
        stderr=(folder / "errors.log").open("w"),
    )
    try:
        wait_until(lambda: _listening(port), what="nginx to listen", timeout=15)
        yield Proxy(port, settings.TRAINYARD_PROXY_ORIGIN)
    finally:
        nginx.terminate()
        nginx.wait(10)
        shutil.rmtree(places.folder, ignore_errors=True)


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), 1).close()
    except OSError:
        return False
    return True
