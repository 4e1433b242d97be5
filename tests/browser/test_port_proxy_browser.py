"""A job's Jupyter and TensorBoard in Chromium through the authenticated proxy (real nginx,
the real agent, ``jupyter server`` and ``tensorboard`` from the test environment), and what
the browser keeps apart: the dashboard's cookies and a port's site."""

from __future__ import annotations

import pytest
from django.conf import settings
from playwright.sync_api import expect

from jobs.models import Job, JobPort
from jobs.port_sites import COOKIE
from tests.agent_support import cpu_job, make_node, place, wait_for_state
from tests.browser.conftest import screenshot
from tests.proxy_support import port_proxy  # noqa: F401 (a fixture)

pytestmark = pytest.mark.integration

# TensorBoard over a run that logged a scalar; Jupyter without a token of its own (behind
# the proxy) and without XSRF checks (the test drives its REST API and kernel by script,
# where JupyterLab's page would send the _xsrf token).
NOTEBOOKS = r"""export HOME=/tmp
python3 - <<'EOF'
from torch.utils.tensorboard import SummaryWriter
with SummaryWriter("/tmp/tb/run-1") as writer:
    for step in range(5):
        writer.add_scalar("loss", 1.0 / (step + 1), step)
EOF
tensorboard --logdir /tmp/tb --bind_all --port 6006 &
jupyter server --ip=0.0.0.0 --port=8888 --IdentityProvider.token= \
  --ServerApp.allow_remote_access=True --ServerApp.disable_check_xsrf=True \
  --ServerApp.root_dir=/tmp &
wait"""

RUN_A_CELL = """async () => {
  const kernel = await (await fetch("/api/kernels", {method: "POST", body: "{}"})).json();
  const socket = new WebSocket(`ws://${location.host}/api/kernels/${kernel.id}/channels`);
  return await new Promise((resolve, reject) => {
    setTimeout(() => reject(new Error("no answer from the kernel")), 60000);
    socket.onmessage = (event) => {
      const message = JSON.parse(event.data);
      if (message.msg_type === "stream") resolve(message.content.text);
      if (message.msg_type === "error") reject(new Error(message.content.evalue));
    };
    socket.onopen = () => socket.send(JSON.stringify({
      header: {msg_id: "cell-1", username: "test", session: "s1", msg_type: "execute_request",
               version: "5.3", date: new Date().toISOString()},
      parent_header: {}, metadata: {}, channel: "shell", buffers: [],
      content: {code: "print(6 * 7)", silent: false, store_history: false,
                user_expressions: {}, allow_stdin: false, stop_on_error: true},
    }));
  });
}"""

# A hostile job's page: it tries to plant the dashboard's cookies in every way a page can.
PLANT = r"""python3 - <<'EOF'
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PAGE = b'''<!doctype html><title>planted</title><p id="seen"></p><script>
for (const c of ["__Host-trainyard-session=js; Secure; Path=/",
                 "__Host-trainyard-session=js; Secure; Path=/; Domain=localhost",
                 "__Host-trainyard-csrf=js; Secure; Path=/; Domain=jobs.localhost",
                 "trainyard-session=js; Path=/; Domain=localhost"]) document.cookie = c;
</script>'''

class Plant(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        for cookie in ("__Host-trainyard-session=planted; Secure; Path=/",
                       "__Host-trainyard-session=planted; Secure; Path=/; Domain=localhost",
                       "__Host-trainyard-language=zh-hans; Secure; Path=/; Domain=localhost",
                       "sessionid=planted; Path=/; Domain=localhost"):
            self.send_header("Set-Cookie", cookie)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        seen = (self.headers.get("Cookie") or "none").encode()
        self.wfile.write(PAGE.replace(b'"seen"></p>', b'"seen">' + seen + b"</p>"))

ThreadingHTTPServer(("0.0.0.0", 7000), Plant).serve_forever()
EOF"""


@pytest.fixture
def proxied(agent_env, port_proxy, project):  # noqa: F811
    """A CPU node's agent, telling jobs the proxy's addresses (TRAINYARD_PORT_URL_<p>)."""
    return agent_env([make_node("cpu-proxied")], env={"TRAINYARD_PROXY_ORIGIN": port_proxy.origin})


def running(agent, owner, project, command: str, ports: list[int]) -> Job:
    job = cpu_job(command, owner=owner, project=project, cpu_milli=2000)
    for port in ports:
        JobPort.objects.create(job=job, port=port)
    return wait_for_state(place(job, agent.nodes[:1]), Job.State.RUNNING, agent)


def open_port(page, port: int):
    """Click the port's "Open" on the job page: its own site, in a new tab."""
    row = page.locator("#published-ports tr", has=page.locator(f"td:first-child >> text='{port}'"))
    with page.expect_popup() as popup:
        row.get_by_role("link", name="Open").click()
    return popup.value


# ``pages`` comes last in each test: torn down first, its pages close while the proxy and
# the job still serve, so no late request of theirs (the favicon) meets a closed proxy.


def test_the_owner_runs_a_jupyter_cell_and_reads_tensorboard_through_the_proxy(
    proxied, owner, project, outsider, pages
):
    job = running(proxied, owner, project, NOTEBOOKS, [8888, 6006])
    page = pages.open(owner, f"/jobs/{job.pk}/")
    expect(page.locator("#published-ports")).to_contain_text("Open")
    screenshot(page, "job-page-open-ports")

    board = open_port(page, 6006)
    assert board.url.startswith(f"http://j{job.pk}-6006.jobs.localhost:")
    expect(board.get_by_text("loss").first).to_be_visible(timeout=90_000)
    screenshot(board, "tensorboard-through-the-proxy", full_page=False)

    notebook = open_port(page, 8888)
    notebook.wait_for_function(
        "async () => (await fetch('/api/status')).ok", polling=1000, timeout=90_000
    )
    assert notebook.evaluate(RUN_A_CELL) == "42\n"

    # An outsider following the same link is sent to sign in, then refused.
    stranger = pages.open(outsider, f"/jobs/{job.pk}/ports/8888/open/")
    expect(stranger.locator("h1")).to_have_text("Page not found")  # ids of others' jobs: 404
    pages.errors.remove(  # that 404 is the answer under test, not a broken page
        f"Failed to load resource: the server responded with a status of 404 (Not Found) "
        f"at {pages.url(f'/jobs/{job.pk}/ports/8888/open/')}"
    )
    anonymous = pages.open(None, "/")
    anonymous.goto(board.url)
    expect(anonymous.get_by_role("button", name="Log in")).to_be_visible()


def test_a_jobs_page_cannot_reach_or_plant_the_dashboards_cookies(proxied, owner, project, pages):
    job = running(proxied, owner, project, PLANT, [7000])
    page = pages.open(owner, f"/jobs/{job.pk}/")
    before = {c["name"]: c["value"] for c in page.context.cookies(pages.url("/"))}
    assert settings.SESSION_COOKIE_NAME in before

    planted = open_port(page, 7000)
    expect(planted).to_have_title("planted", timeout=60_000)
    planted.reload()  # the page's own script has run: what the job's server is sent now
    seen = planted.locator("#seen").inner_text()
    assert COOKIE not in seen, "the proxy's own cookie reached the job"
    assert before[settings.SESSION_COOKIE_NAME] not in seen, "the dashboard's session did"
    assert seen.startswith("__Host-trainyard-session=")  # the job's own, on its own site

    after = {c["name"]: c["value"] for c in page.context.cookies(pages.url("/"))}
    for name in (settings.SESSION_COOKIE_NAME, settings.CSRF_COOKIE_NAME):
        assert after.get(name) == before.get(name), name
    assert settings.LANGUAGE_COOKIE_NAME not in after
    # Still signed in as themselves, in English: the job page, not the log-in form.
    page.reload()
    expect(page).to_have_url(pages.url(f"/jobs/{job.pk}/"))
    expect(page.locator("#published-ports")).to_contain_text("In a browser")


SERVE = """mkdir -p /tmp/site/deep && echo '<title>deep page</title>' > /tmp/site/deep/index.html
touch /tmp/site/favicon.ico
python3 -m http.server 7000 -d /tmp/site"""


def test_a_visitor_who_signs_in_first_lands_on_the_page_asked_for(
    proxied,
    port_proxy,  # noqa: F811 (the fixture)
    owner,
    project,
    pages,
):
    job = running(proxied, owner, project, SERVE, [7000])
    site = f"http://j{job.pk}-7000.jobs.localhost:{port_proxy.port}/deep/"
    page = pages.open(None, "/")
    page.goto(site)  # to the dashboard's log-in first
    page.get_by_label("Username").fill(owner.get_username())
    page.get_by_label("Password").fill("pw")
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_title("deep page", timeout=30_000)
    assert page.url == site
