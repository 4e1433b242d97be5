"""A running job's port through the authenticated proxy: real nginx in front of the live
server, a real job on the real agent serving HTTP and a WebSocket. In Chromium, with
Jupyter and TensorBoard: tests/browser/test_port_proxy_browser.py."""

from __future__ import annotations

import json
import socket
from http.cookies import SimpleCookie
from urllib.parse import urlsplit

import pytest
from django.test import Client
from websockets.sync.client import connect

from jobs.models import Job, JobPort
from jobs.port_sites import COOKIE, PortSite, session_value
from jobs.proxy_nginx import AUTH_CACHE_SECONDS
from jobs.services.stop import job_stop
from tests.agent_support import cpu_job, place, wait_for_state
from tests.factories import UserFactory
from tests.proxy_support import Proxy, port_proxy  # noqa: F401 (a fixture)
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

# One port, both kinds: an HTTP answer naming what the job received, and a WebSocket echo.
ECHO = r"""python3 - <<'EOF'
import json
from websockets.sync.server import serve

def answer(connection, request):
    if request.path == "/ws":
        return None
    seen = {"path": request.path, "cookie": request.headers.get("Cookie", "")}
    return connection.respond(200, json.dumps(seen))

def echo(websocket):
    for message in websocket:
        websocket.send(message)

with serve(echo, "0.0.0.0", 7000, process_request=answer) as server:
    server.serve_forever()
EOF"""


def signed_in_on_site(proxy: Proxy, user, site: PortSite, next_path: str = "/") -> str:
    """The browser's way in: the dashboard's "Open", then the ticket on the port's site."""
    dashboard = Client()
    dashboard.force_login(user)
    ticket_url = urlsplit(
        dashboard.get(f"/jobs/{site.job_id}/ports/{site.port}/open/", {"next": next_path})[
            "Location"
        ]
    )
    assert ticket_url.netloc == f"{site.host}:{proxy.port}"
    status, headers, _body = proxy.get(site, f"{ticket_url.path}?{ticket_url.query}")
    assert status == 302 and headers["Location"] == next_path
    return SimpleCookie(headers["Set-Cookie"])[COOKIE].value


def test_a_running_jobs_port_through_the_proxy(agent, port_proxy):  # noqa: F811
    job = cpu_job(ECHO)
    JobPort.objects.create(job=job, port=7000)
    JobPort.objects.create(job=job, port=7001)  # opened, never listened on
    job = wait_for_state(place(job, agent.nodes[:1]), Job.State.RUNNING, agent)
    site = PortSite(job.pk, 7000)

    # Anonymous: to the dashboard, which signs in and comes back to the page asked for.
    status, headers, _body = port_proxy.get(site, "/deep?x=1")
    assert status == 302
    assert headers["Location"].endswith(f"/jobs/{job.pk}/ports/7000/open/?next=%2Fdeep%3Fx%3D1")

    # The owner, over HTTP: the job answers, and never sees the proxy's cookie.
    cookie = signed_in_on_site(port_proxy, job.owner, site)
    both = f"theirs=1; {COOKIE}={cookie}; also=2"
    answer = wait_until(
        lambda: _json(port_proxy.get(site, "/hello?x=1", Cookie=both)),
        what="the job's server to answer through the proxy",
        timeout=60,
    )
    assert answer["path"] == "/hello?x=1"
    assert COOKIE not in answer["cookie"] and "theirs=1" in answer["cookie"]
    assert "also=2" in answer["cookie"]
    first = _json(port_proxy.get(site, "/", Cookie=f"{COOKIE}={cookie}; after=3"))
    assert first["cookie"] == "after=3"

    # … and over a WebSocket.
    raw = socket.create_connection(("127.0.0.1", port_proxy.port), 10)
    url = f"ws://{site.host}:{port_proxy.port}/ws"
    with connect(url, sock=raw, additional_headers={"Cookie": f"{COOKIE}={cookie}"}) as ws:
        ws.send("ping through the proxy")
        assert ws.recv(10) == "ping through the proxy"

    # Someone who may not see the job, with a cookie minted for it: refused, with the reason.
    outsider = UserFactory(username="outsider-of-7000")
    status, _headers, body = port_proxy.get(site, "/", cookie=session_value(outsider, site))
    assert status == 403 and b'data-why="forbidden"' in body

    # A port the job opens but nothing listens on.
    quiet = PortSite(job.pk, 7001)
    status, _headers, body = port_proxy.get(quiet, "/", cookie=session_value(job.owner, quiet))
    assert status == 502 and b'data-why="unreachable"' in body

    # Once stopped: a clear "not running" page, not a connection error, as soon as nginx's
    # last yes for this cookie has expired.
    job_stop(job=job, actor=job.owner)
    wait_for_state(job, Job.State.STOPPED, agent)
    status, _headers, body = wait_until(
        lambda: _answer_if(503, port_proxy.get(site, "/", cookie=cookie)),
        what="the proxy to say the job is not running",
        timeout=AUTH_CACHE_SECONDS + 5,
    )
    assert b'data-why="not_running"' in body


def _answer_if(status: int, answer):
    return answer if answer[0] == status else None


def _json(answer):
    status, _headers, body = answer
    return json.loads(body) if status == 200 else None
