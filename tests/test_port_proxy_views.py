"""The authenticated proxy's side in Trainyard (jobs/proxy_views.py, jobs/port_sites.py):
the dashboard's "Open" link, the ticket, the port's own cookie, and the answers nginx asks
for on each request. nginx itself, with real jobs and a browser: tests/test_port_proxy.py.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from django.core import signing
from django.test import Client

from jobs.models import Job
from jobs.port_sites import COOKIE, PortSite, session_value, ticket_for
from tests.running_job import running_job

pytestmark = pytest.mark.django_db


@pytest.fixture
def running(owner, project):
    return running_job(owner=owner, project=project)


def site_client(site: PortSite, **extra) -> Client:
    """A browser on the port's own site (as nginx passes its requests on)."""
    return Client(HTTP_HOST=site.host + ":8080", **extra)


def signed_in(user, site: PortSite) -> Client:
    client = site_client(site)
    client.cookies[COOKIE] = session_value(user, site)
    return client


def test_open_hands_a_ticket_to_the_ports_own_site(client, owner, running):
    client.force_login(owner)
    response = client.get(f"/jobs/{running.job.pk}/ports/8080/open/?next=/lab/tree")
    assert response.status_code == 302
    target = urlsplit(response["Location"])
    assert (
        f"{target.scheme}://{target.netloc}" == f"http://j{running.job.pk}-8080.jobs.localhost:8080"
    )
    assert target.path == "/_trainyard/login"
    [ticket] = parse_qs(target.query)["ticket"]

    login = site_client(PortSite(running.job.pk, 8080)).get(f"/_trainyard/login?ticket={ticket}")
    assert login.status_code == 302 and login["Location"] == "/lab/tree"
    cookie = login.cookies[COOKIE]
    assert cookie["secure"] and cookie["httponly"] and cookie["path"] == "/"
    assert cookie["samesite"] == "Lax" and not cookie["domain"]


def test_open_refuses_a_port_the_job_does_not_open_and_others_jobs(client, outsider, running):
    client.force_login(running.job.owner)
    assert client.get(f"/jobs/{running.job.pk}/ports/9999/open/").status_code == 404
    client.force_login(outsider)
    assert client.get(f"/jobs/{running.job.pk}/ports/8080/open/").status_code == 404


@pytest.mark.parametrize("wrong", ["other port", "other job", "forged", "expired"])
def test_a_ticket_opens_only_its_own_site_and_only_briefly(owner, running, monkeypatch, wrong):
    site = PortSite(running.job.pk, 8080)
    ticket = {
        "other port": lambda: ticket_for(owner, PortSite(running.job.pk, 6006)),
        "other job": lambda: ticket_for(owner, PortSite(running.job.pk + 1, 8080)),
        "forged": lambda: signing.dumps({"u": owner.pk, "j": site.job_id, "p": 8080}),
        "expired": lambda: ticket_for(owner, site),
    }[wrong]()
    if wrong == "expired":
        later = signing.time.time() + 61
        monkeypatch.setattr(signing.time, "time", lambda: later)
    response = site_client(site).get("/_trainyard/login", {"ticket": ticket})
    assert response.status_code == 403 and COOKIE not in response.cookies
    assert b'data-why="expired"' in response.content


def test_next_never_leaves_the_ports_site(client, owner, running):
    client.force_login(owner)
    site = PortSite(running.job.pk, 8080)
    for wanted in (
        "//evil.example/",
        "https://evil.example/",
        "/\\evil.example",
        "/_trainyard/auth",
    ):
        response = client.get(f"/jobs/{site.job_id}/ports/8080/open/", {"next": wanted})
        ticket = parse_qs(urlsplit(response["Location"]).query)["ticket"][0]
        login = site_client(site).get("/_trainyard/login", {"ticket": ticket})
        assert login["Location"] == "/", wanted


@pytest.mark.parametrize("who", ["owner", "member", "admin_user"])
def test_auth_passes_those_who_may_see_the_job_to_replica_0s_port(request, running, who):
    user = request.getfixturevalue(who)
    site = PortSite(running.job.pk, 8080)
    response = signed_in(user, site).post("/_trainyard/auth")  # nginx asks with any method
    assert response.status_code == 204
    assert response["X-Trainyard-Upstream"] == "10.0.0.5:40123"


def test_auth_reads_a_fixed_number_of_queries(owner, running, django_assert_num_queries):
    client = signed_in(owner, PortSite(running.job.pk, 8080))
    with django_assert_num_queries(3):  # the user, the job, replica 0's port
        assert client.get("/_trainyard/auth").status_code == 204


def test_auth_without_a_cookie_sends_the_browser_to_the_dashboard(running, settings):
    settings.TRAINYARD_BASE_URL = "http://127.0.0.1:8000"
    site = PortSite(running.job.pk, 8080)
    assert site_client(site).get("/_trainyard/auth").status_code == 401
    start = site_client(site, HTTP_X_ORIGINAL_URI="/lab?x=1&y=2").get("/_trainyard/start")
    assert start.status_code == 302
    assert start["Location"] == (
        f"http://127.0.0.1:8000/jobs/{site.job_id}/ports/8080/open/?next=%2Flab%3Fx%3D1%26y%3D2"
    )


def test_an_outsiders_cookie_is_refused_with_a_page_that_says_why(outsider, running):
    site = PortSite(running.job.pk, 8080)
    client = signed_in(outsider, site)
    assert client.get("/_trainyard/auth").status_code == 403
    page = client.get("/_trainyard/refused")
    assert page.status_code == 403 and b'data-why="forbidden"' in page.content


def test_a_cookie_opens_only_its_own_job_and_port(owner, running):
    site = PortSite(running.job.pk, 8080)
    client = site_client(PortSite(running.job.pk, 6006))
    client.cookies[COOKIE] = session_value(owner, site)
    assert client.get("/_trainyard/auth").status_code == 401


def test_a_password_change_ends_the_ports_sign_in(owner, running):
    client = signed_in(owner, PortSite(running.job.pk, 8080))
    owner.set_password("a whole new secret")
    owner.save()
    assert client.get("/_trainyard/auth").status_code == 401


def test_a_stopped_jobs_port_answers_job_not_running_in_the_readers_language(owner, running):
    Job.objects.filter(pk=running.job.pk).update(state=Job.State.STOPPED)
    site = PortSite(running.job.pk, 8080)
    client = signed_in(owner, site)
    assert client.get("/_trainyard/auth").status_code == 403
    page = client.get("/_trainyard/refused", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert page.status_code == 503 and b'data-why="not_running"' in page.content
    assert "任务没有在运行" in page.content.decode()


def test_a_port_that_does_not_answer_says_so(owner, running):
    client = signed_in(owner, PortSite(running.job.pk, 8080))
    page = client.get("/_trainyard/refused", {"why": "unreachable"})
    assert page.status_code == 502 and b"0.0.0.0:8080" in page.content


def test_the_dashboard_and_the_ports_sites_serve_nothing_of_each_other(owner_client, running):
    site = PortSite(running.job.pk, 8080)
    assert owner_client.get("/_trainyard/auth").status_code == 404
    assert site_client(site).get(f"/jobs/{site.job_id}/").status_code == 404
    assert site_client(site).get("/accounts/login/").status_code == 404
    # A name under the proxy's domain that is no port's site is neither.
    assert Client(HTTP_HOST="jobs.localhost").get("/_trainyard/auth").status_code == 404
    assert Client(HTTP_HOST="j1-80.jobs.localhost").get("/_trainyard/auth").status_code == 404
